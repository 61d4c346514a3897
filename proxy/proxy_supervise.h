/*
 * proxy/proxy_supervise.h: the supervisor, airlockd's first process
 * (proxy_supervise.c).
 */
#ifndef AIRLOCK_PROXY_SUPERVISE_H
#define AIRLOCK_PROXY_SUPERVISE_H

#include <sys/types.h>

/*
 * The worker: all of airlockd but the supervisor.  It writes one byte to ready_fd
 * (proxy_supervise_ready()) once it serves, and returns its exit status.
 */
typedef int (*proxy_worker_fn)(void *arg, int ready_fd);

/*
 * Runs fn in a child and starts it again whenever it ends without being asked to,
 * until SIGTERM or SIGINT (forwarded to it, as SIGHUP is).  Not in the foreground,
 * it detaches first: the caller's process returns 0 once the first worker is ready,
 * or that worker's failure status.  Returns the process exit status.
 */
int	proxy_supervise(int foreground, int verbose, proxy_worker_fn fn, void *arg);

/*
 * In the worker, once it has dropped privileges (which clears the setting): dies
 * with the supervisor.  0, or -1 when the supervisor is already gone.
 */
int	proxy_supervise_bind(void);
/* The supervisor's PID (no system call: the worker's filter has no getppid). */
pid_t	proxy_supervisor_pid(void);
/* In the worker: it serves (its helpers are forked); closes ready_fd. */
void	proxy_supervise_ready(int ready_fd);

#endif
