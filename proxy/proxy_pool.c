/*
 * proxy/proxy_pool.c: the upstream connection pool (issue 14).  An inspected
 * connection whose upstream HTTP/1.1 connection is left clean when it ends (its
 * last response read to the end, the origin willing to go on, nothing buffered:
 * proxy_inspect.c decides) hands that connection here, and a later inspected
 * connection of the same key takes it instead of resolving, connecting and
 * verifying a TLS handshake again (agents open many short connections).
 *
 * The key (struct proxy_pool_key) is the sandbox's registry entry (held, so a
 * sandbox destroyed and made again under its name never finds the old one's), the
 * verified name, the port, the hash of the policy the connection was made under,
 * TLS or plain, whether its hello offered h2, and the route (direct, for now).  A
 * connection is never handed to another key: not to another sandbox, name or
 * policy.  What the connection carried for the requests before is not in it:
 * every request's state (its head, injected values, scanners, redactors) belongs
 * to the inspected connection that sent it, and the pool keeps only the socket
 * (and its TLS session), with nothing buffered either way.
 *
 * One pool per worker thread (struct proxy_worker): a bufferevent belongs to its
 * event base, so a connection never moves to another thread, and nothing here
 * takes a lock.  A connection is idle in the pool at most pl_idle_ms, with at most
 * pl_per_key per key, pl_per_sandbox per sandbox and pl_max in all (a newer one
 * closes the oldest over a limit).  While idle its reads are on: the origin closing
 * it (EOF, an error, a TLS close_notify) or sending any byte at all closes it here
 * at once, so an idle connection is never stale by more than what is in flight.
 * Taking one is LIFO (the most recently used is the most likely alive).
 */
#include <sys/queue.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>

#include <openssl/ssl.h>

#include "hostname.h"
#include "log.h"
#include "policy.h"
#include "proxy_pool.h"
#include "proxy_registry.h"
#include "proxy_stats.h"
#include "proxy_tls.h"

struct proxy_pool_ent {
	TAILQ_ENTRY(proxy_pool_ent) pe_entry;	/* the newest first */
	struct proxy_pool	*pe_pool;
	struct bufferevent	*pe_bev;
	struct proxy_sandbox	*pe_sandbox;	/* referenced */
	char			 pe_name[HOSTNAME_MAX + 1];
	uint16_t		 pe_port;
	char			 pe_policy[sizeof(((struct policy *)0)->p_hash)];
	int			 pe_tls;
	int			 pe_h2;
	char			 pe_route[PROXY_POOL_ROUTE_MAX];
	struct netaddr		 pe_addr;
	uint64_t		 pe_until;	/* clock ms: closed from then */
	/*
	 * What its SSL's verify and new-session callbacks report to while idle: no
	 * keys and no peer, so no session is filed from here (proxy_tls.c).
	 */
	struct proxy_tls_check	 pe_tc;
};

TAILQ_HEAD(proxy_pool_list, proxy_pool_ent);

struct proxy_pool {
	struct event		*pp_timer;	/* the oldest one's expiry */
	struct proxy_pool_limits pp_lim;
	uint64_t		(*pp_clock)(void);
	struct proxy_pool_list	 pp_ents;
	size_t			 pp_n;
};

static uint64_t
pool_clock_default(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int
pool_copy(char *dst, size_t len, const char *s)
{
	size_t n = strlen(s);

	if (n >= len)
		return -1;
	memcpy(dst, s, n + 1);
	return 0;
}

static int
pool_match(const struct proxy_pool_ent *e, const struct proxy_pool_key *k)
{
	return e->pe_sandbox == k->pk_sandbox && e->pe_port == k->pk_port &&
	    e->pe_tls == (k->pk_tls != 0) && e->pe_h2 == (k->pk_h2 != 0) &&
	    strcmp(e->pe_name, k->pk_name) == 0 &&
	    strcmp(e->pe_policy, k->pk_policy) == 0 &&
	    strcmp(e->pe_route, k->pk_route) == 0;
}

/* e's key, pointing into e. */
static void
pool_key_of(const struct proxy_pool_ent *e, struct proxy_pool_key *k)
{
	k->pk_sandbox = e->pe_sandbox;
	k->pk_name = e->pe_name;
	k->pk_port = e->pe_port;
	k->pk_policy = e->pe_policy;
	k->pk_tls = e->pe_tls;
	k->pk_h2 = e->pe_h2;
	k->pk_route = e->pe_route;
}

/* Takes e out of the pool; its connection is the caller's.  Frees e. */
static struct bufferevent *
pool_unlink(struct proxy_pool_ent *e)
{
	struct proxy_pool *pool = e->pe_pool;
	struct bufferevent *bev = e->pe_bev;

	TAILQ_REMOVE(&pool->pp_ents, e, pe_entry);
	pool->pp_n--;
	proxy_stats_pool_idle(-1);
	bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
	bufferevent_disable(bev, EV_READ | EV_WRITE);
	proxy_sandbox_put(e->pe_sandbox);
	free(e);
	return bev;
}

/* Closes e's connection (why: for the metrics) and forgets e. */
static void
pool_drop(struct proxy_pool_ent *e, enum proxy_pool_close why)
{
	proxy_stats_pool_closed(why);
	bufferevent_free(pool_unlink(e));
}

/* The timer again, for the oldest connection's expiry (or off: none left). */
static void
pool_arm(struct proxy_pool *pool)
{
	struct proxy_pool_ent *e = TAILQ_LAST(&pool->pp_ents, proxy_pool_list);
	struct timeval tv;
	uint64_t now, ms;

	if (e == NULL) {
		event_del(pool->pp_timer);
		return;
	}
	now = pool->pp_clock();
	ms = e->pe_until > now ? e->pe_until - now : 0;
	tv.tv_sec = (time_t)(ms / 1000);
	tv.tv_usec = (suseconds_t)(ms % 1000) * 1000;
	evtimer_add(pool->pp_timer, &tv);
}

void
proxy_pool_expire(struct proxy_pool *pool)
{
	struct proxy_pool_ent *e;
	uint64_t now;

	if (pool == NULL)
		return;
	now = pool->pp_clock();
	/* The oldest at the tail: all came in with the same idle time. */
	while ((e = TAILQ_LAST(&pool->pp_ents, proxy_pool_list)) != NULL &&
	    e->pe_until <= now)
		pool_drop(e, PPC_EXPIRED);
	pool_arm(pool);
}

static void
pool_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	proxy_pool_expire(arg);
}

/* An idle connection is to stay silent: any byte, EOF or error closes it. */
static void
pool_read_cb(struct bufferevent *bev, void *arg)
{
	struct proxy_pool_ent *e = arg;
	struct proxy_pool *pool = e->pe_pool;

	log_debug("pooled connection to %s:%u: %zu bytes while idle: closed",
	    e->pe_name, e->pe_port, evbuffer_get_length(bufferevent_get_input(bev)));
	pool_drop(e, PPC_ORIGIN);
	pool_arm(pool);
}

static void
pool_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct proxy_pool_ent *e = arg;
	struct proxy_pool *pool = e->pe_pool;

	log_debug("pooled connection to %s:%u: closed by the origin while idle",
	    e->pe_name, e->pe_port);
	pool_drop(e, PPC_ORIGIN);
	pool_arm(pool);
}

struct proxy_pool *
proxy_pool_new(struct event_base *base, const struct proxy_pool_limits *l,
    uint64_t (*clock_ms)(void))
{
	struct proxy_pool *pool;

	if (l->pl_idle_ms == 0 || l->pl_per_key == 0 || l->pl_per_sandbox == 0 ||
	    l->pl_max == 0)
		return NULL;
	if ((pool = calloc(1, sizeof(*pool))) == NULL)
		return NULL;
	pool->pp_lim = *l;
	pool->pp_clock = clock_ms != NULL ? clock_ms : pool_clock_default;
	TAILQ_INIT(&pool->pp_ents);
	if ((pool->pp_timer = evtimer_new(base, pool_timer_cb, pool)) == NULL) {
		free(pool);
		return NULL;
	}
	return pool;
}

void
proxy_pool_free(struct proxy_pool *pool)
{
	struct proxy_pool_ent *e;

	if (pool == NULL)
		return;
	while ((e = TAILQ_FIRST(&pool->pp_ents)) != NULL)
		pool_drop(e, PPC_SHUTDOWN);
	event_free(pool->pp_timer);
	free(pool);
}

/*
 * Makes room for one more under limit max among the entries like(e) selects:
 * closes the oldest of them while there are max or more.
 */
static void
pool_room(struct proxy_pool *pool, unsigned int max,
    int (*like)(const struct proxy_pool_ent *, const void *), const void *arg)
{
	struct proxy_pool_ent *e, *oldest;
	size_t n;

	for (;;) {
		n = 0;
		oldest = NULL;
		TAILQ_FOREACH(e, &pool->pp_ents, pe_entry)
			if (like == NULL || like(e, arg)) {
				n++;
				oldest = e;
			}
		if (n < max || oldest == NULL)
			return;
		pool_drop(oldest, PPC_EVICTED);
	}
}

static int
pool_like_key(const struct proxy_pool_ent *e, const void *arg)
{
	return pool_match(e, arg);
}

static int
pool_like_sandbox(const struct proxy_pool_ent *e, const void *arg)
{
	return e->pe_sandbox == arg;
}

int
proxy_pool_put(struct proxy_pool *pool, const struct proxy_pool_key *k,
    struct bufferevent *bev, const struct netaddr *addr)
{
	struct proxy_pool_ent *e = NULL;
	SSL *ssl;

	if (pool == NULL || k->pk_sandbox == NULL ||
	    proxy_sandbox_is_dead(k->pk_sandbox) ||
	    evbuffer_get_length(bufferevent_get_input(bev)) != 0 ||
	    evbuffer_get_length(bufferevent_get_output(bev)) != 0 ||
	    (e = calloc(1, sizeof(*e))) == NULL ||
	    pool_copy(e->pe_name, sizeof(e->pe_name), k->pk_name) == -1 ||
	    pool_copy(e->pe_policy, sizeof(e->pe_policy), k->pk_policy) == -1 ||
	    pool_copy(e->pe_route, sizeof(e->pe_route), k->pk_route) == -1)
		goto refuse;
	/* The SSL's callbacks must not reach the connection that used it. */
	ssl = bufferevent_openssl_get_ssl(bev);
	if ((ssl != NULL) != (k->pk_tls != 0) ||
	    (ssl != NULL && proxy_tls_client_rebind(ssl, &e->pe_tc) == -1))
		goto refuse;
	e->pe_pool = pool;
	e->pe_bev = bev;
	e->pe_sandbox = k->pk_sandbox;
	__atomic_add_fetch(&e->pe_sandbox->ps_refs, 1, __ATOMIC_RELAXED);
	e->pe_port = k->pk_port;
	e->pe_tls = k->pk_tls != 0;
	e->pe_h2 = k->pk_h2 != 0;
	e->pe_addr = *addr;
	e->pe_until = pool->pp_clock() + pool->pp_lim.pl_idle_ms;
	pool_room(pool, pool->pp_lim.pl_per_key, pool_like_key, k);
	pool_room(pool, pool->pp_lim.pl_per_sandbox, pool_like_sandbox,
	    k->pk_sandbox);
	pool_room(pool, pool->pp_lim.pl_max, NULL, NULL);
	TAILQ_INSERT_HEAD(&pool->pp_ents, e, pe_entry);
	pool->pp_n++;
	proxy_stats_pool_idle(1);
	bufferevent_setcb(bev, pool_read_cb, NULL, pool_event_cb, e);
	bufferevent_enable(bev, EV_READ);
	pool_arm(pool);
	return 0;
 refuse:
	free(e);
	bufferevent_free(bev);
	return -1;
}

struct bufferevent *
proxy_pool_take(struct proxy_pool *pool, const struct proxy_pool_key *k,
    struct proxy_tls_check *tc, struct netaddr *addr)
{
	struct proxy_pool_ent *e, *next;
	struct bufferevent *bev;
	SSL *ssl;

	if (pool == NULL)
		return NULL;
	proxy_pool_expire(pool);
	for (e = TAILQ_FIRST(&pool->pp_ents); e != NULL; e = next) {
		next = TAILQ_NEXT(e, pe_entry);
		if (!pool_match(e, k))
			continue;
		/* Bytes its read callback has not seen yet: not silent. */
		if (evbuffer_get_length(bufferevent_get_input(e->pe_bev)) != 0) {
			pool_drop(e, PPC_ORIGIN);
			continue;
		}
		if (proxy_sandbox_is_dead(e->pe_sandbox)) {
			pool_drop(e, PPC_PURGED);
			continue;
		}
		ssl = bufferevent_openssl_get_ssl(e->pe_bev);
		if (ssl != NULL && (tc == NULL ||
		    proxy_tls_client_rebind(ssl, tc) == -1)) {
			pool_drop(e, PPC_EVICTED);
			continue;
		}
		*addr = e->pe_addr;
		bev = pool_unlink(e);
		pool_arm(pool);
		return bev;
	}
	pool_arm(pool);
	return NULL;
}

void
proxy_pool_purge(struct proxy_pool *pool,
    int (*keep)(const struct proxy_pool_key *, const struct netaddr *, void *),
    void *arg)
{
	struct proxy_pool_ent *e, *next;
	struct proxy_pool_key k;

	if (pool == NULL)
		return;
	for (e = TAILQ_FIRST(&pool->pp_ents); e != NULL; e = next) {
		next = TAILQ_NEXT(e, pe_entry);
		pool_key_of(e, &k);
		if (proxy_sandbox_is_dead(e->pe_sandbox) || !keep(&k, &e->pe_addr, arg))
			pool_drop(e, PPC_PURGED);
	}
	pool_arm(pool);
}

size_t
proxy_pool_count(const struct proxy_pool *pool)
{
	return pool != NULL ? pool->pp_n : 0;
}
