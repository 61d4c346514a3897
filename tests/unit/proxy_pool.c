/*
 * tests/unit/proxy_pool.c: the upstream connection pool (proxy/proxy_pool.c) over
 * bufferevent pairs (the far end stands for the origin), with a clock of the
 * test's own: a connection is handed back only for a key equal in every field
 * (sandbox entry, name, port, policy hash, TLS, h2, route), most recent first;
 * the limits per key, per sandbox and in all close the oldest; expiry; an idle
 * connection the origin writes to or closes is closed at once; connections with
 * bytes buffered, of a dead sandbox, with a key too long or TLS claimed for a
 * plain socket are refused; a purge closes what its test refuses; references to
 * the sandbox entries are given back; the metrics counters follow.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "../../proxy/proxy_pool.h"
#include "../../proxy/proxy_registry.h"
#include "../../proxy/proxy_stats.h"
#include "../../proxy/proxy_tls.h"
#include "../tap.h"

static struct event_base *base;
static uint64_t now_ms;		/* the pool's clock */

static uint64_t
test_clock(void)
{
	return now_ms;
}

/* A connection to pool: one end of a pair; the other end is the origin's. */
struct conn {
	struct bufferevent	*c_pair[2];
};

static struct bufferevent *
conn_new(struct conn *cn)
{
	/* Deferred callbacks, as the daemon's bufferevents have them. */
	if (bufferevent_pair_new(base, BEV_OPT_DEFER_CALLBACKS, cn->c_pair) == -1)
		bail("bufferevent_pair_new");
	bufferevent_enable(cn->c_pair[1], EV_READ | EV_WRITE);
	return cn->c_pair[0];
}

static void
conn_free_origin(struct conn *cn)
{
	bufferevent_free(cn->c_pair[1]);
}

static struct proxy_sandbox *
sandbox_new(void)
{
	struct proxy_sandbox *ps;

	if ((ps = calloc(1, sizeof(*ps))) == NULL)
		bail("calloc");
	ps->ps_refs = 1;	/* the test's own */
	return ps;
}

static struct proxy_pool_key
key(struct proxy_sandbox *ps, const char *name)
{
	struct proxy_pool_key k;

	memset(&k, 0, sizeof(k));
	k.pk_sandbox = ps;
	k.pk_name = name;
	k.pk_port = 443;
	k.pk_policy = "aaaa";
	k.pk_tls = 0;
	k.pk_h2 = 0;
	k.pk_route = "";
	return k;
}

static struct proxy_pool *
pool_new(unsigned int idle, unsigned int per_key, unsigned int per_sb,
    unsigned int max)
{
	struct proxy_pool_limits l = { idle, per_key, per_sb, max };
	struct proxy_pool *p;

	if ((p = proxy_pool_new(base, &l, test_clock)) == NULL)
		bail("proxy_pool_new");
	return p;
}

static struct netaddr
addr_n(unsigned int n)
{
	struct netaddr a;

	memset(&a, 0, sizeof(a));
	a.na_family = AF_INET;
	a.na_u.v4.s_addr = htonl(0x0b000000u + n);
	return a;
}

static void
settle(void)
{
	int i;

	for (i = 0; i < 4; i++)
		event_base_loop(base, EVLOOP_NONBLOCK);
}

static void
test_off(void)
{
	struct proxy_pool_limits l[4] = {
		{ 0, 4, 32, 128 }, { 30000, 0, 32, 128 }, { 30000, 4, 0, 128 },
		{ 30000, 4, 32, 0 }
	}, on = { 30000, 4, 32, 128 };
	struct proxy_pool *p;
	size_t i;

	for (i = 0; i < 4; i++)
		ok(proxy_pool_new(base, &l[i], test_clock) == NULL,
		    "a limit of 0 (#%zu): no pool", i);
	p = proxy_pool_new(base, &on, test_clock);
	ok(p != NULL, "every limit set: a pool (positive control)");
	proxy_pool_free(p);
	ok(proxy_pool_take(NULL, NULL, NULL, NULL) == NULL &&
	    proxy_pool_count(NULL) == 0, "no pool: nothing to take");
}

static void
test_key(void)
{
	struct proxy_pool *p = pool_new(30000, 4, 32, 128);
	struct proxy_sandbox *a = sandbox_new(), *b = sandbox_new();
	struct proxy_pool_key k = key(a, "api.test"), o;
	struct bufferevent *bev, *got;
	struct netaddr ad = addr_n(7), out;
	struct conn cn;

	ok(proxy_pool_take(p, &k, NULL, &out) == NULL, "empty pool: a miss");
	bev = conn_new(&cn);
	is_int(0, proxy_pool_put(p, &k, bev, &ad), "an idle connection is kept");
	is_int(1, (long long)proxy_pool_count(p), "... one in the pool");
	is_int(2, a->ps_refs, "... holding a reference to its sandbox entry");

	o = key(b, "api.test");
	ok(proxy_pool_take(p, &o, NULL, &out) == NULL,
	    "another sandbox entry, same name: nothing");
	o = key(a, "other.test");
	ok(proxy_pool_take(p, &o, NULL, &out) == NULL, "another name: nothing");
	o = key(a, "API.test");
	ok(proxy_pool_take(p, &o, NULL, &out) == NULL,
	    "the name in other case: nothing (names come normalised)");
	o = key(a, "api.test");
	o.pk_port = 8443;
	ok(proxy_pool_take(p, &o, NULL, &out) == NULL, "another port: nothing");
	o = key(a, "api.test");
	o.pk_policy = "bbbb";
	ok(proxy_pool_take(p, &o, NULL, &out) == NULL,
	    "another policy hash: nothing");
	o = key(a, "api.test");
	o.pk_tls = 1;
	ok(proxy_pool_take(p, &o, NULL, &out) == NULL, "TLS asked, plain kept: "
	    "nothing");
	o = key(a, "api.test");
	o.pk_h2 = 1;
	ok(proxy_pool_take(p, &o, NULL, &out) == NULL, "h2 offered: nothing");
	o = key(a, "api.test");
	o.pk_route = "proxy.corp:3128";
	ok(proxy_pool_take(p, &o, NULL, &out) == NULL, "another route: nothing");
	is_int(1, (long long)proxy_pool_count(p), "... and the misses left it there");

	memset(&out, 0, sizeof(out));
	got = proxy_pool_take(p, &k, NULL, &out);
	ok(got == bev, "the same key: that connection (positive control)");
	ok(netaddr_equal(&out, &ad), "... with the address it was connected to");
	is_int(0, (long long)proxy_pool_count(p), "... out of the pool");
	is_int(1, a->ps_refs, "... and the sandbox entry's reference given back");
	ok(proxy_pool_take(p, &k, NULL, &out) == NULL, "taken once only");
	bufferevent_free(got);
	conn_free_origin(&cn);
	proxy_pool_free(p);
	free(a);
	free(b);
}

static void
test_lifo_limits(void)
{
	struct proxy_pool *p = pool_new(30000, 2, 3, 4);
	struct proxy_sandbox *a = sandbox_new(), *b = sandbox_new();
	struct proxy_pool_key k = key(a, "api.test"), k2 = key(a, "two.test"),
	    k3 = key(a, "three.test"), kb = key(b, "api.test");
	struct bufferevent *bev[10];
	struct conn cn[10];
	struct netaddr ad = addr_n(1), out;
	uint64_t ev0 = proxy_stats_pool_closes(PPC_EVICTED);
	int i;

	for (i = 0; i < 10; i++)
		bev[i] = conn_new(&cn[i]);
	proxy_pool_put(p, &k, bev[0], &ad);
	proxy_pool_put(p, &k, bev[1], &ad);
	proxy_pool_put(p, &k, bev[2], &ad);
	is_int(2, (long long)proxy_pool_count(p), "per key 2: the third closed the "
	    "oldest");
	is_int(1, (long long)(proxy_stats_pool_closes(PPC_EVICTED) - ev0),
	    "... counted as evicted");
	ok(proxy_pool_take(p, &k, NULL, &out) == bev[2] &&
	    proxy_pool_take(p, &k, NULL, &out) == bev[1] &&
	    proxy_pool_take(p, &k, NULL, &out) == NULL,
	    "the most recent first, the oldest gone");
	bufferevent_free(bev[2]);
	bufferevent_free(bev[1]);

	proxy_pool_put(p, &k, bev[3], &ad);
	proxy_pool_put(p, &k2, bev[4], &ad);
	proxy_pool_put(p, &kb, bev[5], &ad);
	proxy_pool_put(p, &k3, bev[6], &ad);
	is_int(4, (long long)proxy_pool_count(p), "three of a, one of b: all kept");
	proxy_pool_put(p, &k3, bev[7], &ad);
	is_int(4, (long long)proxy_pool_count(p),
	    "a fourth of a (per sandbox 3): one of a closed");
	ok(proxy_pool_take(p, &k, NULL, &out) == NULL,
	    "... a's oldest (api.test)");
	ok(proxy_pool_take(p, &kb, NULL, &out) == bev[5],
	    "... b's kept, the sandbox limit is a's alone");
	bufferevent_free(bev[5]);
	proxy_pool_put(p, &kb, bev[8], &ad);
	proxy_pool_put(p, &kb, bev[9], &ad);
	is_int(4, (long long)proxy_pool_count(p), "over the pool's 4: the oldest of "
	    "all closed");
	ok(proxy_pool_take(p, &k2, NULL, &out) == NULL, "... which was a's two.test");
	proxy_pool_free(p);
	is_int(1, a->ps_refs, "every reference of a given back");
	is_int(1, b->ps_refs, "every reference of b given back");
	for (i = 0; i < 10; i++)
		conn_free_origin(&cn[i]);
	free(a);
	free(b);
}

static void
test_expiry(void)
{
	struct proxy_pool *p = pool_new(1000, 4, 32, 128);
	struct proxy_sandbox *a = sandbox_new();
	struct proxy_pool_key k = key(a, "api.test");
	struct bufferevent *bev, *got;
	struct netaddr ad = addr_n(2), out;
	struct conn cn, cn2;
	uint64_t ex0 = proxy_stats_pool_closes(PPC_EXPIRED);

	now_ms = 5000;
	bev = conn_new(&cn);
	proxy_pool_put(p, &k, bev, &ad);
	now_ms = 5999;
	got = proxy_pool_take(p, &k, NULL, &out);
	ok(got == bev, "taken within the idle time (999 ms of 1000)");
	proxy_pool_put(p, &k, got, &ad);	/* back, until 6999 */
	now_ms = 6999;
	ok(proxy_pool_take(p, &k, NULL, &out) == NULL,
	    "idle for the whole idle time: closed, not handed out");
	is_int(1, (long long)(proxy_stats_pool_closes(PPC_EXPIRED) - ex0),
	    "... counted as expired");
	proxy_pool_put(p, &k, conn_new(&cn2), &ad);
	now_ms = 8000;
	proxy_pool_expire(p);
	is_int(0, (long long)proxy_pool_count(p), "the expiry pass closes it too");
	is_int(1, a->ps_refs, "references given back");
	proxy_pool_free(p);
	conn_free_origin(&cn);
	conn_free_origin(&cn2);
	free(a);
}

static void
test_idle_origin(void)
{
	struct proxy_pool *p = pool_new(30000, 4, 32, 128);
	struct proxy_sandbox *a = sandbox_new();
	struct proxy_pool_key k = key(a, "api.test");
	struct netaddr ad = addr_n(3), out;
	struct conn cn, cn2, cn3;
	uint64_t or0 = proxy_stats_pool_closes(PPC_ORIGIN);
	uint64_t idle0 = proxy_stats_pool_idle_now();

	proxy_pool_put(p, &k, conn_new(&cn), &ad);
	is_int(1, (long long)(proxy_stats_pool_idle_now() - idle0),
	    "the idle gauge counts it");
	bufferevent_write(cn.c_pair[1], "H", 1);
	settle();
	is_int(0, (long long)proxy_pool_count(p),
	    "a byte from the origin while idle: closed");
	ok(proxy_pool_take(p, &k, NULL, &out) == NULL, "... never handed out");
	proxy_pool_put(p, &k, conn_new(&cn2), &ad);
	bufferevent_flush(cn2.c_pair[1], EV_WRITE, BEV_FINISHED);
	settle();
	is_int(0, (long long)proxy_pool_count(p),
	    "the origin closing it while idle: closed");
	is_int(2, (long long)(proxy_stats_pool_closes(PPC_ORIGIN) - or0),
	    "... both counted as the origin's");
	is_int(0, (long long)(proxy_stats_pool_idle_now() - idle0),
	    "the idle gauge back where it was");
	proxy_pool_put(p, &k, conn_new(&cn3), &ad);
	settle();
	is_int(1, (long long)proxy_pool_count(p),
	    "a silent origin: kept (positive control)");
	is_int(1, (long long)(proxy_stats_pool_idle_now() - idle0), "... gauge 1");
	proxy_pool_free(p);
	is_int(0, (long long)(proxy_stats_pool_idle_now() - idle0),
	    "freed: the gauge back");
	is_int(1, a->ps_refs, "references given back");
	conn_free_origin(&cn);
	conn_free_origin(&cn2);
	conn_free_origin(&cn3);
	free(a);
}

static void
test_refused(void)
{
	struct proxy_pool *p = pool_new(30000, 4, 32, 128);
	struct proxy_sandbox *a = sandbox_new(), *d = sandbox_new();
	struct proxy_pool_key k = key(a, "api.test"), kd = key(d, "api.test"), o;
	struct netaddr ad = addr_n(4), out;
	struct bufferevent *bev;
	struct conn cn[7];
	char route[PROXY_POOL_ROUTE_MAX + 1];
	uint64_t sh0 = proxy_stats_pool_closes(PPC_SHUTDOWN);
	uint64_t pu0 = proxy_stats_pool_closes(PPC_PURGED);

	bev = conn_new(&cn[0]);
	bufferevent_enable(bev, EV_READ);
	bufferevent_write(cn[0].c_pair[1], "late", 4);	/* arrives before the put */
	is_int(-1, proxy_pool_put(p, &k, bev, &ad),
	    "bytes from the origin still buffered: refused (closed)");
	bev = conn_new(&cn[1]);
	bufferevent_disable(bev, EV_WRITE);
	bufferevent_write(bev, "req", 3);
	is_int(-1, proxy_pool_put(p, &k, bev, &ad),
	    "bytes for the origin still buffered: refused");
	d->ps_dead = 1;
	is_int(-1, proxy_pool_put(p, &kd, conn_new(&cn[2]), &ad),
	    "a dead sandbox entry's: refused");
	is_int(1, d->ps_refs, "... no reference kept");
	o = key(a, "api.test");
	memset(route, 'r', sizeof(route) - 1);
	route[sizeof(route) - 1] = '\0';
	o.pk_route = route;
	is_int(-1, proxy_pool_put(p, &o, conn_new(&cn[3]), &ad),
	    "a route too long to keep: refused");
	o = key(a, "api.test");
	o.pk_tls = 1;
	is_int(-1, proxy_pool_put(p, &o, conn_new(&cn[4]), &ad),
	    "TLS claimed for a plain connection: refused");
	is_int(0, (long long)proxy_pool_count(p), "nothing kept");
	is_int(1, a->ps_refs, "no reference kept");

	d->ps_dead = 0;
	proxy_pool_put(p, &kd, conn_new(&cn[5]), &ad);
	d->ps_dead = 1;		/* taken out of the registry since */
	ok(proxy_pool_take(p, &kd, NULL, &out) == NULL,
	    "its sandbox entry died while it was idle: not handed out");
	is_int(1, (long long)(proxy_stats_pool_closes(PPC_PURGED) - pu0),
	    "... closed as a reload's");
	is_int(1, d->ps_refs, "... and its reference given back");
	proxy_pool_put(p, &k, conn_new(&cn[6]), &ad);
	proxy_pool_free(p);
	is_int(1, (long long)(proxy_stats_pool_closes(PPC_SHUTDOWN) - sh0),
	    "the pool freed: its connection closed as a shutdown's");
	is_int(1, a->ps_refs, "... its reference given back");
	for (size_t i = 0; i < 7; i++)
		conn_free_origin(&cn[i]);
	free(a);
	free(d);
}

/* The purge's test: keep what was made under policy "aaaa" only. */
static int
keep_aaaa(const struct proxy_pool_key *k, const struct netaddr *a, void *arg)
{
	int *seen = arg;

	(*seen)++;
	return strcmp(k->pk_policy, "aaaa") == 0 && strcmp(k->pk_name,
	    "api.test") == 0 && k->pk_port == 443 && k->pk_route[0] == '\0' &&
	    a->na_family == AF_INET;
}

static void
test_purge(void)
{
	struct proxy_pool *p = pool_new(30000, 4, 32, 128);
	struct proxy_sandbox *a = sandbox_new();
	struct proxy_pool_key k = key(a, "api.test"), kb = key(a, "api.test");
	struct netaddr ad = addr_n(5), out;
	struct bufferevent *keep;
	struct conn cn[2];
	int seen = 0;

	kb.pk_policy = "bbbb";
	keep = conn_new(&cn[0]);
	proxy_pool_put(p, &k, keep, &ad);
	proxy_pool_put(p, &kb, conn_new(&cn[1]), &ad);
	proxy_pool_purge(p, keep_aaaa, &seen);
	is_int(2, seen, "the purge asked about each idle connection");
	is_int(1, (long long)proxy_pool_count(p), "... and closed the one it refused");
	ok(proxy_pool_take(p, &kb, NULL, &out) == NULL, "... the other policy's");
	ok(proxy_pool_take(p, &k, NULL, &out) == keep, "the kept one is still there");
	bufferevent_free(keep);
	proxy_pool_free(p);
	is_int(1, a->ps_refs, "references given back");
	conn_free_origin(&cn[0]);
	conn_free_origin(&cn[1]);
	free(a);
}

int
main(void)
{
	plan_lazy();
	if ((base = event_base_new()) == NULL)
		bail("event_base_new");
	test_off();
	test_key();
	test_lifo_limits();
	test_expiry();
	test_idle_origin();
	test_refused();
	test_purge();
	event_base_free(base);
	return 0;
}
