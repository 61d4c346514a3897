/*
 * proxy/proxy_core.h: what the daemon's core shares and nobody else needs.  The core
 * is start-up and the daemon's life (proxy.c), the root state reader
 * (proxy_reader.c), the sandbox registry (proxy_registry.c), and reload and the
 * control commands (proxy_reload.c).  The connection path and DNS reach the core
 * through proxy.h only.  Prototypes are grouped by the file that defines them.
 */
#ifndef AIRLOCK_PROXY_CORE_H
#define AIRLOCK_PROXY_CORE_H

#include <sys/types.h>

#include <stddef.h>

#include "proxy.h"
#include "sandbox.h"

struct proxy_keys;

/* proxy.c: start-up and the daemon's life */
extern struct airlock_config proxy_cfg;	/* loaded once, before anything else */
extern struct audit_log *proxy_log;	/* NULL until opened, and after the end */
/* Asks every worker, in its own thread, to re-check its live connections. */
void	proxy_threads_recheck(void);
/* How many worker threads there are (for stats). */
unsigned int proxy_threads_count(void);

/* proxy_reader.c: the root state reader */
/* One sandbox record and its policy file's bytes, as read from the state dir. */
struct proxy_rec {
	struct sandbox	 pr_sb;
	int		 pr_errno;	/* reading the policy file: 0 or errno */
	char		*pr_buf;
	size_t		 pr_len;
};

struct proxy_state {
	struct proxy_rec *st_v;
	size_t		 st_n;
};

/* The socket to the root reader: -1 if there is none, -2 once it broke. */
extern int proxy_reader_fd;
/* Frees what st holds (not st) and empties it. */
void	proxy_state_free(struct proxy_state *st);
/*
 * Reads every record and its policy here, with this process's rights, into st
 * (released with proxy_state_free()).  0, or -1 with err (st empty).
 */
int	proxy_state_read_local(struct proxy_state *st, char *err, size_t errlen);
/*
 * Forks the root reader (before any other fd is open); the audit log files it opens
 * after a rotation are given to uid:gid ((uid_t)-1: left as they are).  0, or -1
 * with err.
 */
int	proxy_reader_start(uid_t uid, gid_t gid, char *err, size_t errlen);
/* Ends the root reader, if there is one, and waits for it. */
void	proxy_reader_stop(void);
/*
 * Every record and its policy, through the root reader if there is one, into st
 * (released with proxy_state_free()).  0, or -1 with err (st empty).
 */
int	proxy_state_read(struct proxy_state *st, char *err, size_t errlen);
/*
 * The key material, through the root reader if there is one, into *out (one
 * reference, not installed; put it with proxy_keys_put()).  0, or -1 with err.
 */
int	proxy_keys_load(struct proxy_keys **out, char *err, size_t errlen);
/*
 * After logrotate renamed the audit log away: log goes on in a new file at its
 * path, opened by the reader and passed over (or here, without a reader).  0, or
 * -1 with err (the old file then stays in use).
 */
int	proxy_audit_reopen(struct audit_log *log, char *err, size_t errlen);
/* At exit: asks the reader to remove the control socket (if there is a reader). */
void	proxy_reader_ctl_unlink(void);

/* proxy_registry.c: the sandbox registry */
/*
 * The registry: proxy_nreg entries, one reference each.  Read and written only
 * under the registry lock (proxy_reg_wrlock(), or within proxy_reg_foreach()).
 */
extern struct proxy_sandbox **proxy_reg;
extern size_t proxy_nreg;
/*
 * A new reference-counted wrapper (1 reference) for p (taken over), or for the empty
 * policy if p is NULL; NULL if out of memory.  Released with proxy_policy_put().
 */
struct proxy_policy *proxy_policy_new(struct policy *p);
/* 1 if pp wraps the empty policy (no policy loaded), else 0. */
int	proxy_policy_is_none(const struct proxy_policy *pp);
/* Takes the registry's write lock (fatalx if it cannot), and releases it. */
void	proxy_reg_wrlock(void);
void	proxy_reg_unlock(void);
/* Index of the sandbox called name, or -1.  Caller holds the lock. */
ssize_t	proxy_reg_index(const char *name);
/*
 * Takes entry i out of the registry and marks it dead.  Returns it with the
 * registry's reference, which the caller puts (after auditing).  Caller holds the
 * write lock.
 */
struct proxy_sandbox *proxy_reg_take(size_t i);
/* 1 if a and b describe the same sandbox (kind, interface, addresses), else 0. */
int	proxy_sandbox_same(const struct sandbox *a, const struct sandbox *b);
/*
 * A new registry entry (one reference) for sb with policy pp (taken over), NULL if
 * out of memory (pp then still the caller's).  Released with proxy_sandbox_put().
 */
struct proxy_sandbox *proxy_sandbox_new(const struct sandbox *sb,
	    struct proxy_policy *pp);
/* Drops and forgets every sandbox (at exit). */
void	proxy_reg_clear(void);
/*
 * Calls fn(ps, arg) for every entry under the read lock (fn must not take the
 * registry lock).  0, or -1 if the lock cannot be taken.
 */
int	proxy_reg_foreach(void (*fn)(struct proxy_sandbox *, void *), void *arg);

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
