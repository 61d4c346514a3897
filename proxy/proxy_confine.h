/*
 * proxy/proxy_confine.h: what each of airlockd's processes may still do once it
 * has started (proxy_confine.c).  Private to proxy/ (and the probe in tests/tools).
 */
#ifndef AIRLOCK_PROXY_CONFINE_H
#define AIRLOCK_PROXY_CONFINE_H

#include <stddef.h>

/* One allowlist per kind of process. */
enum proxy_role {
	PROXY_ROLE_WORKER = 0,	/* airlockd after the drop, all its threads */
	PROXY_ROLE_READER,	/* the root state reader (proxy_reader.c) */
	PROXY_ROLE_NETWATCH,	/* the root nftables guard (proxy_netwatch.c) */
	PROXY_ROLE_KEYD,	/* a single-threaded signer over socketpairs */
};

/*
 * The worker's first step, while it has no other thread: no_new_privs, a check
 * that no capability is left (refusing to run otherwise), and a Landlock domain
 * with no file system access at all for this thread and every thread it starts
 * from now on (where the kernel has Landlock; said once in the log where it has
 * not).  Once per process.  0, or -1 with err.
 */
int	proxy_confine_fs(char *err, size_t errlen);
/*
 * Confines the calling process, every thread of it (TSYNC), for good:
 * no_new_privs and the role's seccomp-bpf allowlist (anything else kills the
 * process); for PROXY_ROLE_WORKER proxy_confine_fs() first, if it was not called
 * yet.  Returns 0, or -1 with err (no filter installed).
 */
int	proxy_confine(enum proxy_role role, char *err, size_t errlen);
/* "worker", "reader", "netwatch", "keyd"; and back (0, or -1 for no such role). */
const char *proxy_role_name(enum proxy_role role);
int	proxy_role_parse(const char *name, enum proxy_role *role);
/* 1 in a build whose filters let the sanitizers' own system calls through. */
int	proxy_confine_san(void);

#endif
