/*
 * proxy/proxy_pool.h: idle upstream connections kept for a later connection
 * (proxy_pool.c).  Private to proxy/: the inspect mode puts and takes them, the
 * worker (proxy_conn.c) owns one pool and purges it after a reload.
 */
#ifndef AIRLOCK_PROXY_POOL_H
#define AIRLOCK_PROXY_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "netaddr.h"

struct bufferevent;
struct event_base;
struct proxy_pool;
struct proxy_sandbox;
struct proxy_tls_check;

/* The longest pk_route kept (an upstream proxy's identity). */
#define PROXY_POOL_ROUTE_MAX	256

/*
 * What a connection was made for and how: a pooled connection serves only a key
 * equal in every field.
 */
struct proxy_pool_key {
	/*
	 * The registry entry itself, not its name: an entry taken out and made again
	 * under the same name is another pointer (the pool holds a reference to
	 * each entry it keeps a connection of, so no pointer is reused meanwhile).
	 */
	struct proxy_sandbox	*pk_sandbox;
	const char		*pk_name;	/* the verified (mapped) name */
	uint16_t		 pk_port;
	const char		*pk_policy;	/* the hash of the policy it was made
						   under (p_hash) */
	int			 pk_tls;	/* TLS (verified for pk_name), else
						   plain HTTP */
	int			 pk_h2;		/* its ClientHello offered h2 (which the
						   origin declined) */
	/* How it reaches the origin: "" directly.  Never NULL. */
	const char		*pk_route;
};

struct proxy_pool_limits {
	unsigned int	pl_idle_ms;	/* kept at most this long */
	unsigned int	pl_per_key;
	unsigned int	pl_per_sandbox;
	unsigned int	pl_max;		/* the whole pool */
};

/*
 * A pool on base (one per worker thread: a bufferevent belongs to one event base),
 * or NULL when a limit is 0 (pooling off) or out of memory.  clock_ms: the
 * milliseconds it reads for expiry (NULL: CLOCK_MONOTONIC; tests give their own).
 */
struct proxy_pool *proxy_pool_new(struct event_base *base,
	    const struct proxy_pool_limits *l, uint64_t (*clock_ms)(void));
/* Closes every idle connection and frees the pool (NULL-safe). */
void	proxy_pool_free(struct proxy_pool *pool);

/*
 * Keeps bev, an idle upstream connection with nothing buffered either way, under
 * key k; addr is the checked address it is connected to.  The pool owns bev from
 * here (callbacks and, for TLS, the check struct its SSL reports to are the
 * pool's): 0 when kept, -1 when it was closed instead (pooling off, a key too
 * long, a dead sandbox, bytes buffered).  Keeping it over a limit closes the
 * oldest connection of that key, that sandbox, or the pool.
 */
int	proxy_pool_put(struct proxy_pool *pool, const struct proxy_pool_key *k,
	    struct bufferevent *bev, const struct netaddr *addr);
/*
 * The most recently kept idle connection under key k (LIFO), or NULL.  The
 * caller owns it, without callbacks; a TLS connection's SSL reports to tc from
 * here (proxy_tls_client_rebind()).  *addr: its address.  Expired ones and ones
 * with bytes waiting are closed on the way.
 */
struct bufferevent *proxy_pool_take(struct proxy_pool *pool,
	    const struct proxy_pool_key *k, struct proxy_tls_check *tc,
	    struct netaddr *addr);
/*
 * Closes every idle connection for which keep(key, addr, arg) says 0 (a reload:
 * the sandbox gone, its policy changed, the address now refused).
 */
void	proxy_pool_purge(struct proxy_pool *pool,
	    int (*keep)(const struct proxy_pool_key *, const struct netaddr *, void *),
	    void *arg);
/* Closes the ones past their time (the pool's timer does this too). */
void	proxy_pool_expire(struct proxy_pool *pool);
/* Idle connections in the pool. */
size_t	proxy_pool_count(const struct proxy_pool *pool);

#endif
