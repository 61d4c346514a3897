/*
 * proxy/proxy.h: airlockd's private header.  The seams between the daemon core
 * (proxy.c: start-up, workers, signals; proxy_registry.c: the sandbox registry;
 * proxy_ctl.c: the control socket), the connection path (proxy_conn*.c: peek, decide,
 * dial, relay) and policy DNS (proxy_dns*.c, proxy_map.c).  What only the core's
 * files share (the root state reader, reload, the registry's internals) is in
 * proxy_core.h.  Prototypes are grouped by the file that defines them.
 */
#ifndef AIRLOCK_PROXY_H
#define AIRLOCK_PROXY_H

#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "audit.h"
#include "config.h"
#include "netaddr.h"
#include "policy.h"
#include "sandbox.h"

struct event_base;
struct evdns_base;
struct proxy_keys;
struct proxy_map;

/*
 * One sandbox as the daemon knows it.  Registry entries are reference counted: a
 * connection or DNS query holds a reference for as long as it uses the entry.  The
 * policy pointer is swapped on reload under the registry lock; readers take
 * proxy_sandbox_policy() (a counted reference) rather than reading ps_policy directly.
 */
struct proxy_policy {
	struct policy	*pp_policy;
	struct proxy_keys *pp_keys;	/* the key material it went in with, or NULL */
	unsigned int	 pp_refs;	/* atomic */
};

/* A sandbox's token buckets for its policy's limits (proxy_conn_limit.c). */
struct proxy_buckets {
	int		 pb_init;
	double		 pb_conn;
	double		 pb_bytes;
	double		 pb_req;
	double		 pb_last;	/* seconds, CLOCK_MONOTONIC */
};

struct proxy_sandbox {
	struct sandbox	 ps_rec;		/* the state-dir record */
	struct proxy_policy *ps_policy;		/* guarded by the registry lock */
	struct proxy_map *ps_map;		/* name <-> mapped address, own lock */
	unsigned int	 ps_refs;		/* atomic */
	int		 ps_dead;		/* removed from the registry */
	/* counters: atomics, counted on the connection path and DNS, read by stats */
	uint64_t	 ps_conns_live;
	uint64_t	 ps_allowed;
	uint64_t	 ps_denied;
	uint64_t	 ps_bytes_up;
	uint64_t	 ps_bytes_down;
	uint64_t	 ps_dns_queries;
	uint64_t	 ps_dns_denied;
	/* limits (proxy_conn_limit.c): this sandbox's own buckets and lock */
	pthread_mutex_t	 ps_limit_mtx;
	struct proxy_buckets ps_buckets;
	/* core-private (proxy_reload.c): the policy file in force, under the registry lock */
	char		 ps_policy_file[PATH_MAX];
	char		 ps_policy_error[256];	/* last load error, "" if none */
};

/* The counters of struct proxy_sandbox, for proxy_sandbox_count(). */
enum proxy_stat {
	PROXY_STAT_CONNS_LIVE = 0,	/* +1 on accept of a known sandbox, -1 on close */
	PROXY_STAT_ALLOWED,		/* connections allowed (once per connection) */
	PROXY_STAT_DENIED,		/* connections denied (once per connection) */
	PROXY_STAT_BYTES_UP,		/* VM -> origin */
	PROXY_STAT_BYTES_DOWN,		/* origin -> VM */
	PROXY_STAT_DNS_QUERIES,		/* every DNS query of the sandbox */
	PROXY_STAT_DNS_DENIED,		/* NXDOMAIN / refused / rate limited */
};

/*
 * Adds n to one of ps's counters (n may be negative only for PROXY_STAT_CONNS_LIVE).
 * Lock-free and safe from any worker thread.
 */
static inline void
proxy_sandbox_count(struct proxy_sandbox *ps, enum proxy_stat s, int64_t n)
{
	uint64_t *c;

	switch (s) {
	case PROXY_STAT_CONNS_LIVE:
		c = &ps->ps_conns_live;
		break;
	case PROXY_STAT_ALLOWED:
		c = &ps->ps_allowed;
		break;
	case PROXY_STAT_DENIED:
		c = &ps->ps_denied;
		break;
	case PROXY_STAT_BYTES_UP:
		c = &ps->ps_bytes_up;
		break;
	case PROXY_STAT_BYTES_DOWN:
		c = &ps->ps_bytes_down;
		break;
	case PROXY_STAT_DNS_QUERIES:
		c = &ps->ps_dns_queries;
		break;
	case PROXY_STAT_DNS_DENIED:
		c = &ps->ps_dns_denied;
		break;
	default:
		return;
	}
	/* Unsigned wrap-around makes a negative n a subtraction. */
	__atomic_fetch_add(c, (uint64_t)n, __ATOMIC_RELAXED);
}

/* Reads one counter (for stats). */
static inline uint64_t
proxy_sandbox_counter(const uint64_t *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

/*
 * 1 once the sandbox was removed (sandbox_remove, or its record disappeared on
 * reload): proxy_worker_recheck() closes every connection of a dead sandbox, and
 * proxy_sandbox_find() no longer returns it.
 */
static inline int
proxy_sandbox_is_dead(const struct proxy_sandbox *ps)
{
	return __atomic_load_n(&ps->ps_dead, __ATOMIC_ACQUIRE);
}

/*
 * Formats into buf[len], cutting what does not fit (messages only).  Inline: every
 * file of the daemon uses it, none owns it.
 */
static inline void proxy_fmt(char *buf, size_t len, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));

static inline void
proxy_fmt(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

/* proxy_registry.c: the sandbox registry */
/* The sandbox whose guest address is src, referenced; NULL if none. */
struct proxy_sandbox *proxy_sandbox_find(const struct netaddr *src);
void	proxy_sandbox_put(struct proxy_sandbox *ps);
/*
 * The sandbox's current policy, referenced; release with proxy_policy_put().  A
 * sandbox whose policy never loaded has an empty policy (no rules, so every
 * decision is a denial; p_name "none", p_hash "").  NULL only when the registry
 * lock cannot be taken: the caller refuses what it was deciding.
 */
struct proxy_policy *proxy_sandbox_policy(struct proxy_sandbox *ps);
void	proxy_policy_put(struct proxy_policy *pp);
/*
 * The key material pp went in with (its sandbox's CA, the vault it was checked
 * against), referenced: put it with proxy_keys_put().  The current one if pp has
 * none (or pp is NULL); NULL before the first load.
 */
struct proxy_keys *proxy_policy_keys(const struct proxy_policy *pp);

/* proxy.c: the daemon's configuration and audit log (valid for the process lifetime) */
const struct airlock_config *proxy_config(void);
struct audit_log *proxy_audit(void);

/*
 * proxy_netwatch.c: the root child that keeps airlock's nftables tables in place.
 * proxy_netwatch_start() forks it (as root, before the drop; the child closes every
 * descriptor but its socket and the standard three); 0 or -1 with err.
 * proxy_netwatch_listen() turns its reports into "alarm" audit records on base; 0
 * or -1.  proxy_netwatch_stop() ends it (before base is freed).
 * proxy_netwatch_count(1): reinstalls so far, (0): alarms.
 */
struct event_base;
int	proxy_netwatch_start(const struct airlock_config *cfg, char *err,
	    size_t errlen);
int	proxy_netwatch_listen(struct event_base *base);
void	proxy_netwatch_stop(void);
uint64_t proxy_netwatch_count(int reinstalled);

/* proxy_audit.c: aggregates flushed each second, fail closed on a failing log */
/*
 * 1 while the audit log writes (or there is none), 0 when it cannot: new
 * connections are then refused (audit_unavailable).  Logs each change once.
 */
int	proxy_audit_is_writable(void);
/*
 * How a denial with reason is aggregated: per sandbox for the limits (and
 * audit_unavailable, unknown_sandbox), whose destination the VM may vary at will;
 * per destination for the rest.
 */
enum audit_agg proxy_audit_agg(const char *reason);
/*
 * Starts the audit log's sync thread (after daemon()), which lets denials wait
 * for the disk without blocking a worker: proxy_audit_park().  Returns 0 or -1.
 */
int	proxy_audit_sync_start(void);
/*
 * Keeps a dup of fd (a denied client's socket, SO_LINGER 0 set) open until the
 * audit record seq is on disk, then closes it in base's thread: the VM's reset
 * waits, the worker does not.  Returns 0, or -1 when it cannot (the caller then
 * waits with audit_sync_wait()).
 */
int	proxy_audit_park(struct event_base *base, int fd, long long seq);
/* Closes base's parked fds at once (worker shutdown). */
void	proxy_audit_park_free(struct event_base *base);
/* The one-second flush timer on base, added; event_free() it.  NULL on failure. */
struct event *proxy_audit_timer_new(struct event_base *base);

/* proxy.c: the daemon's life */
struct json_t;
struct proxy_opts {
	const char	*po_config;	/* --config, or NULL */
	const char	*po_state_dir;	/* --state-dir, or NULL */
	int		 po_foreground;
	int		 po_check;	/* -n: check config and recorded policies, exit */
	int		 po_verbose;
};
/* Runs airlockd; returns the process exit status. */
int	proxy_main(const struct proxy_opts *o);

/* proxy_ctl.c: the control socket */
/*
 * Creates the listening control socket at path (0600; its directory made 0700 if
 * missing; a stale socket removed).  Refuses if another daemon answers there.
 * Returns the fd, or -1 with one line in err.
 */
int	proxy_ctl_open(const char *path, char *err, size_t errlen);
/*
 * One control command (include/control.h lists them).  cm_wants_name: the request
 * carries a "name", checked with sandbox_name_is_valid() before cm_fn runs (else
 * name is NULL).  cm_log: the control socket logs it ("control: CMD [NAME] (uid N)").
 * cm_fn runs on the main thread and returns the reply object ({"ok":true,...} or
 * {"ok":false,"error":...}), released by the caller with json_decref().  A table
 * ends with a NULL cm_name.
 */
struct proxy_ctl_cmd {
	const char	*cm_name;
	int		 cm_wants_name;
	int		 cm_log;
	struct json_t	*(*cm_fn)(const char *name);
};
struct proxy_ctl;
/*
 * Serves fd (taken over) on base with the commands of cmds (borrowed: it must
 * outlive the server).  Returned server freed with proxy_ctl_free().
 */
struct proxy_ctl *proxy_ctl_new(struct event_base *base, int fd,
	    const struct proxy_ctl_cmd *cmds);
void	proxy_ctl_free(struct proxy_ctl *c);

/* proxy_map.c: per-sandbox mapped addresses (thread-safe, bounded LRU) */
/*
 * A table handing out addresses from pool for names; at most max entries, the least
 * recently used one recycled when full.  Returned table freed with proxy_map_free().
 */
struct proxy_map *proxy_map_new(const struct netaddr_cidr *pool, size_t max);
void	proxy_map_free(struct proxy_map *m);
/* The (stable) mapped address for a normalised name, allocated if new.  0 or -1. */
int	proxy_map_name_to_addr(struct proxy_map *m, const char *name,
	    struct netaddr *out);
/* The name mapped to a, copied to out[outlen].  0 if mapped, -1 if not. */
int	proxy_map_addr_to_name(struct proxy_map *m, const struct netaddr *a,
	    char *out, size_t outlen);
/* Live mappings (for stats and tests). */
size_t	proxy_map_count(struct proxy_map *m);

/* proxy_dns.c: policy DNS over UDP and TCP on the dns_port (fds bound by proxy.c) */
struct proxy_dns;
/* Returned server freed with proxy_dns_free(); NULL on failure. */
struct proxy_dns *proxy_dns_new(struct event_base *base, int udp_fd, int tcp_fd);
void	proxy_dns_free(struct proxy_dns *d);

/* proxy_conn.c: the connection path (accept -> peek -> decide -> dial -> relay) */
struct proxy_worker;
/*
 * Starts accepting on the proxy listener fd in this worker's event base.
 * evdns is the worker's resolver (host's /etc/hosts + resolv.conf).
 */
struct proxy_worker *proxy_worker_new(struct event_base *base, int listen_fd,
	    struct evdns_base *evdns);
void	proxy_worker_free(struct proxy_worker *w);
/*
 * Closes this worker's live connections that the sandbox's current policy no longer
 * allows (called in each worker's thread after a reload).
 */
void	proxy_worker_recheck(struct proxy_worker *w);

#endif
