/*
 * proxy/proxy_proc.h: the plumbing of airlockd's processes (proxy_proc.c).
 */
#ifndef AIRLOCK_PROXY_PROC_H
#define AIRLOCK_PROXY_PROC_H

#include <sys/types.h>

#include <pwd.h>
#include <stddef.h>

/*
 * Becomes pw for good (groups, gid, uid; checks root cannot be regained).  0, or -1
 * with err.
 */
int	proxy_privdrop(const struct passwd *pw, char *err, size_t errlen);
/* No core dumps, not dumpable, no_new_privs.  0, or -1 with err. */
int	proxy_harden(char *err, size_t errlen);
/* Closes every descriptor from 3 up but the n in keep.  0 or -1. */
int	proxy_close_fds_except(const int *keep, size_t n);
/* Ends a child: closes its socket *fd (if >= 0) and waits for *pid; both -1 after. */
void	proxy_child_stop(int *fd, pid_t *pid);
/* 1 if the child *pid has ended (reaped; *pid is -1 after), else 0. */
int	proxy_child_reap(pid_t *pid);

/* Blocking I/O of whole buffers (EINTR retried); read_full gives up at deadline. */
int	proxy_fd_write_full(int fd, const void *p, size_t len);
int	proxy_fd_read_full(int fd, void *p, size_t len, long long deadline);
/*
 * One sendmsg() of len bytes on sock with the nfd (0..PROXY_FDS_MAX) descriptors
 * fds attached (SCM_RIGHTS).  What sendmsg() returns (EINTR retried): the caller
 * sends any rest.
 */
#define PROXY_FDS_MAX	2
ssize_t	proxy_fd_send_fds(int sock, const void *p, size_t len, const int *fds,
	    int nfd);
/* Now + ms on CLOCK_MONOTONIC, in ms: a deadline for proxy_fd_read_full(). */
long long proxy_deadline(int ms);

#endif
