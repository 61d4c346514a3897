/*
 * proxy/proxy_registry.h: sandboxes and policies as the daemon knows them, the
 * registry's face to the connection path and DNS (proxy_registry.c).  What only the
 * core uses of the registry (add, take out, a walk that reads the core-private
 * fields) is in proxy_core.h.
 */
#ifndef AIRLOCK_PROXY_REGISTRY_H
#define AIRLOCK_PROXY_REGISTRY_H

#include <sys/types.h>

#include <limits.h>
#include <pthread.h>
#include <stdint.h>

#include "netaddr.h"
#include "policy.h"
#include "proxy_approval.h"
#include "proxy_stats.h"
#include "sandbox.h"

struct proxy_dns_sb;
struct proxy_keys;
struct proxy_sbca;
struct proxy_map;

/*
 * One sandbox as the daemon knows it.  Registry entries are reference counted: a
 * connection, DNS query or DNS TCP client holds a reference for as long as it uses
 * the entry.  The
 * policy pointer is swapped on reload under the registry lock; readers take
 * proxy_sandbox_policy() (a counted reference) rather than reading ps_policy directly.
 */
struct proxy_policy {
	struct policy	*pp_policy;
	struct proxy_keys *pp_keys;	/* the key material it went in with, or NULL */
	/*
	 * Its sandbox's interception CA in pp_keys (NULL if it inspects nothing):
	 * found once when the policy goes in, so no connection looks it up by name.
	 */
	struct proxy_sbca *pp_ca;
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
	struct proxy_sb_stats ps_stats;		/* for metrics (proxy_stats.h) */
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
	/* DNS (proxy_dns_sb.c): rate limit, TCP clients, pending audit; own lock */
	struct proxy_dns_sb *ps_dns;
	/* approvals (proxy_approval.c): pending and --once/--for grants; own lock */
	struct proxy_approvals *ps_approvals;
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

/* proxy_registry.c: the sandbox registry */
/* The sandbox whose guest address is src, referenced; NULL if none. */
struct proxy_sandbox *proxy_sandbox_find(const struct netaddr *src);
void	proxy_sandbox_put(struct proxy_sandbox *ps);
/*
 * Calls fn(ps, arg) for every sandbox in the registry, under its read lock: fn may
 * use what this header lets any file use of ps (the core's callers also its
 * core-private fields, which the read lock guards), but must neither take the
 * registry lock nor put ps.  0, or -1 if the lock cannot be taken (nothing visited).
 */
int	proxy_sandbox_foreach(void (*fn)(struct proxy_sandbox *, void *),
	    void *arg);
/*
 * The sandbox's current policy, referenced; release with proxy_policy_put().  A
 * sandbox whose policy never loaded has an empty policy (no rules, so every
 * decision is a denial; p_name "none", p_hash "").  NULL only when the registry
 * lock cannot be taken: the caller refuses what it was deciding.
 */
struct proxy_policy *proxy_sandbox_policy(struct proxy_sandbox *ps);
void	proxy_policy_put(struct proxy_policy *pp);

/*
 * proxy_approve.c: approvals (pending, grants, the control commands).
 * proxy_approval_ask(): after a refusal of name on port (0: unknown) with reason
 * r by p, in sandbox ps: when p says "unknown": "ask" and r is an unknown-name
 * reason (policy_reason_is_unknown()), the refusal is recorded as pending (with
 * method and path, NULL when none) and 1 returned with its id; else 0 (id "").
 * proxy_approval_granted(): 1 if, after a refusal with an unknown-name reason, an
 * operator's --once/--for grant lets name on port through (consume: a --once
 * grant is used up).  proxy_approval_dns(): 1 if a grant names name (DNS
 * answers it).  proxy_approval_rule: what such a connection is decided by (TLS,
 * spliced; id "approval", file "(approval)").
 */
extern const struct policy_rule proxy_approval_rule;
uint64_t proxy_approval_mono_ms(void);
int	proxy_approval_ask(struct proxy_sandbox *ps, const struct policy *p,
	    enum policy_reason r, const char *name, uint16_t port,
	    const char *method, const char *path, char id[APPROVAL_ID_LEN + 1]);
int	proxy_approval_granted(struct proxy_sandbox *ps, enum policy_reason r,
	    const char *name, uint16_t port, int consume);
int	proxy_approval_dns(struct proxy_sandbox *ps, const char *name);

/*
 * For the core only (proxy.c, proxy_reload.c): building, changing and walking the
 * registry, and its internals.
 */
/*
 * The registry: proxy_nreg entries, one reference each.  Read and written only
 * under the registry lock (proxy_reg_wrlock(), or within proxy_sandbox_foreach()).
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

#endif
