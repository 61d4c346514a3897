/*
 * proxy/proxy_core.h: what the daemon's core shares and nobody else needs.  The core
 * is start-up and the daemon's life (proxy.c), the root state reader
 * (proxy_reader.c), the worker threads (proxy_threads.c), reload and the
 * control commands (proxy_reload.c), and the audit log's checkpoints and
 * rotation (proxy_checkpoint.c); the registry they write is proxy_registry.h's
 * (its second part).  The connection path and DNS reach the core through
 * proxy_registry.h's first part only.
 * Prototypes are grouped by the file that defines them.
 */
#ifndef AIRLOCK_PROXY_CORE_H
#define AIRLOCK_PROXY_CORE_H

#include <sys/types.h>

#include <stddef.h>

#include "proxy_ctl.h"
#include "proxy_globals.h"
#include "proxy_registry.h"
#include "sandbox.h"

struct passwd;
struct proxy_keys;

/* proxy_threads.c: the worker threads */
/*
 * Builds the worker threads' state on the proxy listener and the two DNS sockets
 * (the files they read are read here: resolv.conf, /etc/hosts, the trust store),
 * then, once the file system view is closed, starts them (proxy_threads_run()).
 * 0, or -1 with err (what was built or started is then ended by
 * proxy_threads_stop(), which is also the end at exit).
 */
int	proxy_threads_new(int proxy_fd, int udp_fd, int tcp_fd, char *err,
	    size_t errlen);
int	proxy_threads_run(char *err, size_t errlen);
void	proxy_threads_stop(void);
/* Asks every worker, in its own thread, to re-check its live connections. */
void	proxy_threads_recheck(void);
/* How many worker threads there are (for stats). */
unsigned int proxy_threads_count(void);

/* proxy_reader.c: the root state reader */
/*
 * One sandbox record and the bytes of its policy's files (its own and every base,
 * policy_bundle_read(); one that could not be read with its error), as read from
 * the state dir.
 */
struct proxy_rec {
	struct sandbox	 pr_sb;
	struct policy_bundle pr_bundle;
};

struct proxy_state {
	struct proxy_rec *st_v;
	size_t		 st_n;
};

/* The socket to the root reader: -1 if there is none, -2 once it broke. */
extern int proxy_reader_fd;
/* proxy_approve.c: the control commands approve_ls and approve. */
struct json_t;
struct json_t *proxy_cmd_approve_ls(struct json_t *req, uid_t uid);
struct json_t *proxy_cmd_approve(struct json_t *req, uid_t uid);
/*
 * proxy_reload.c: reads the record of sandbox name again (its policy, its
 * approvals file) and puts it in force: the reply of "sandbox_add".
 */
struct json_t *proxy_sandbox_reread(const char *name, const char *source);

/*
 * Loads r's policy from its bundle: the policy's file and, when the bundle holds
 * it, the sandbox's approvals file (sandbox_approvals_path()) as an extra layer.
 * As policy_load_bundle().
 */
struct policy *proxy_rec_load(const struct proxy_rec *r,
	    struct policy_errors *errs);
/* Frees what st holds (not st) and empties it. */
void	proxy_state_free(struct proxy_state *st);
/*
 * Reads every record and its policy here, with this process's rights, into st
 * (released with proxy_state_free()).  0, or -1 with err (st empty).
 */
int	proxy_state_read_local(struct proxy_state *st, char *err, size_t errlen);
/*
 * Forks the root reader (before any other fd is open; as root, or with this
 * process's rights when it is not), which forks the keys process (proxy_keyd.c,
 * dropping to pw unless pw is NULL) and links it to this process's control channel;
 * the audit log files the reader opens after a rotation are given to pw.  0, or -1
 * with err.
 */
int	proxy_reader_start(const struct passwd *pw, char *err, size_t errlen);
/* Ends the root reader, if there is one, and waits for it. */
void	proxy_reader_stop(void);
/* 1 once the reader has ended on its own (reaped), else 0. */
int	proxy_reader_gone(void);
/*
 * Every record and its policy, through the root reader if there is one, into st
 * (released with proxy_state_free()).  0, or -1 with err (st empty).
 */
int	proxy_state_read(struct proxy_state *st, char *err, size_t errlen);
/*
 * The key material, through the root reader if there is one, into *out (one
 * reference, not installed; put it with proxy_keys_put()).  only: NULL for a
 * reload, or the one sandbox an attach adds.  0, or -1 with err.
 */
int	proxy_keys_load(struct proxy_keys **out, const char *only, char *err,
	    size_t errlen);
/*
 * After logrotate renamed the audit log away: log goes on in a new file at its
 * path, opened by the reader and passed over (or here, without a reader).  0, or
 * -1 with err (the old file then stays in use).
 */
int	proxy_audit_reopen(struct audit_log *log, char *err, size_t errlen);
/*
 * The log at audit.max_bytes: the reader rotates the files and passes a new one,
 * which log goes on in (audit_rotate_fd()).  0, or -1 with err (the log then goes
 * on in the file it writes, which may be PATH.1 by now).
 */
int	proxy_audit_rotate(struct audit_log *log, char *err, size_t errlen);
/*
 * Has the reader give keyd audit.sign_key, with the chain's head on disk (once).
 * 0 with the key's id in keyid, or -1 with err.
 */
int	proxy_audit_sign_load(char *keyid, size_t keyidlen, char *err,
	    size_t errlen);
/* At exit: asks the reader to remove the control socket (if there is a reader). */
void	proxy_reader_ctl_unlink(void);

/* proxy_checkpoint.c: the audit log's signed checkpoints and rotation by size */
/*
 * At start, the log open (before the privilege drop and the threads): with
 * audit.sign_key, the reader gives keyd the key, this thread opens its channel to
 * keyd, and the first checkpoint ("start") signs the head found on disk.  0, or -1
 * with err (airlockd does not start).
 */
int	proxy_checkpoint_init(char *err, size_t errlen);
/* The main loop is told when a checkpoint or a rotation is due.  0 or -1. */
struct event_base;
int	proxy_checkpoint_start(struct event_base *base);
/* Before a SIGHUP's reopen (it writes a checkpoint), and after it succeeded: */
/* rotation by size is tried again. */
void	proxy_checkpoint_reopening(void);
void	proxy_checkpoint_reopened(void);
/* No more of that (before the main loop goes). */
void	proxy_checkpoint_stop(void);
/* At the end, the threads stopped: the pending counts, then "shutdown". */
void	proxy_checkpoint_shutdown(void);

/* proxy_reload.c: reload and the control commands */
/*
 * Reloads the key material and every record; source ("start", "sighup", "control")
 * goes into the audit records, and at "start" a key material error is the reply's.
 * Returns the reply ({"ok":true,...} or {"ok":false,"error":...}), released with
 * json_decref().
 */
struct json_t *proxy_cmd_reload(const char *source);
/* The control socket's commands, for proxy_ctl_new(). */
extern const struct proxy_ctl_cmd proxy_ctl_cmds[];

#endif
