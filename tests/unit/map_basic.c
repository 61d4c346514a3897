/*
 * tests/unit/map_basic.c: proxy_map (proxy/proxy_map.c): stable mappings, both
 * lookups, LRU recycling, fresh-first then FIFO address reuse, network/broadcast
 * skipped, refusals, and a 4-thread hammer.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "hostname.h"
#include "../../proxy/proxy_map.h"
#include "siphash.h"
#include "../tap.h"

static struct netaddr_cidr
pool4(const char *net, unsigned int prefix)
{
	struct netaddr_cidr c;

	memset(&c, 0, sizeof(c));
	c.nc_addr.na_family = AF_INET;
	if (inet_pton(AF_INET, net, &c.nc_addr.na_u.v4) != 1)
		bail("bad test pool %s", net);
	c.nc_prefix = prefix;
	return c;
}

static const char *
fmt4(const struct netaddr *a)
{
	static char buf[INET_ADDRSTRLEN];

	return inet_ntop(AF_INET, &a->na_u.v4, buf, sizeof(buf));
}

static struct netaddr
addr4(const char *s)
{
	struct netaddr a;

	memset(&a, 0, sizeof(a));
	a.na_family = AF_INET;
	if (inet_pton(AF_INET, s, &a.na_u.v4) != 1)
		bail("bad test address %s", s);
	return a;
}

/* The mapped address of name as text ("" on failure). */
static const char *
map_get(struct proxy_map *m, const char *name)
{
	struct netaddr a;

	if (proxy_map_name_to_addr(m, name, &a) == -1)
		return "";
	return fmt4(&a);
}

static const char *
map_rev(struct proxy_map *m, const char *addr)
{
	static char name[HOSTNAME_MAX + 1];
	struct netaddr a = addr4(addr);

	if (proxy_map_addr_to_name(m, &a, name, sizeof(name)) == -1)
		return "(none)";
	return name;
}

static void
test_siphash(void)
{
	uint8_t key[16], msg[15];
	int i;

	for (i = 0; i < 16; i++)
		key[i] = i;
	for (i = 0; i < 15; i++)
		msg[i] = i;
	/* Reference vectors from the SipHash paper / reference implementation. */
	ok(siphash24(key, msg, 0) == 0x726fdb47dd0e0e31ULL, "siphash: empty");
	ok(siphash24(key, msg, 15) == 0xa129ca6149be45e5ULL,
	    "siphash: 15 bytes");
	ok(siphash24(key, msg, 8) == 0x93f5f5799a932462ULL,
	    "siphash: 8 bytes");
}

static void
test_refusals(void)
{
	struct netaddr_cidr c;
	struct proxy_map *m;

	memset(&c, 0, sizeof(c));
	c.nc_addr.na_family = AF_INET6;
	c.nc_prefix = 64;
	ok(proxy_map_new(&c, 16) == NULL, "new: IPv6 pool refused");
	c = pool4("198.18.0.0", 31);
	ok(proxy_map_new(&c, 1) == NULL, "new: /31 refused (no usable addresses)");
	c = pool4("198.18.0.0", 29);
	ok(proxy_map_new(&c, 0) == NULL, "new: max 0 refused");
	m = proxy_map_new(&c, 100);
	ok(m != NULL, "new: max over usable addresses: clamped, not refused");
	if (m != NULL) {
		char nm[32];
		int i;

		for (i = 0; i < 10; i++) {
			snprintf(nm, sizeof(nm), "c%d.test", i);
			(void)map_get(m, nm);
		}
		is_int(6, proxy_map_count(m), "clamped: at most the 6 usable addresses");
		proxy_map_free(m);
	}
	ok(proxy_map_new(NULL, 4) == NULL, "new: NULL pool refused");
	m = proxy_map_new(&c, 6);
	ok(m != NULL, "new: /29 with max 6 accepted");
	if (m == NULL)
		return;
	{
		char lng[300];
		struct netaddr a;

		memset(lng, 'a', sizeof(lng));
		lng[254] = '\0';
		ok(proxy_map_name_to_addr(m, lng, &a) == -1,
		    "name_to_addr: 254-char name refused");
		lng[253] = '\0';
		ok(proxy_map_name_to_addr(m, lng, &a) == 0,
		    "name_to_addr: 253-char name accepted");
		ok(proxy_map_name_to_addr(m, "", &a) == -1,
		    "name_to_addr: empty name refused");
	}
	proxy_map_free(m);
	proxy_map_free(NULL);
}

static void
test_stable(void)
{
	struct netaddr_cidr c = pool4("198.18.0.0", 15);
	struct proxy_map *m = proxy_map_new(&c, 4096);
	struct netaddr a, v6;
	char small[4], name[HOSTNAME_MAX + 1];

	if (!ok(m != NULL, "new: default pool"))
		return;
	is_string("198.18.0.1", map_get(m, "api.github.com"),
	    "first name gets the first usable address (network skipped)");
	is_string("198.18.0.2", map_get(m, "example.com"), "second name, next");
	is_string("198.18.0.1", map_get(m, "api.github.com"), "stable: same again");
	is_string("api.github.com", map_rev(m, "198.18.0.1"), "reverse lookup");
	is_string("example.com", map_rev(m, "198.18.0.2"), "reverse lookup 2");
	is_string("(none)", map_rev(m, "198.18.0.3"), "unmapped pool address");
	is_string("(none)", map_rev(m, "198.18.0.0"), "network address: none");
	is_string("(none)", map_rev(m, "198.19.255.255"), "broadcast: none");
	is_string("(none)", map_rev(m, "10.0.0.1"), "outside the pool: none");
	is_string("(none)", map_rev(m, "198.20.0.1"), "just past the pool: none");
	a = addr4("198.18.0.1");
	ok(proxy_map_addr_to_name(m, &a, small, sizeof(small)) == -1,
	    "reverse lookup into a too small buffer refused");
	memset(&v6, 0, sizeof(v6));
	v6.na_family = AF_INET6;
	ok(proxy_map_addr_to_name(m, &v6, name, sizeof(name)) == -1,
	    "reverse lookup of an IPv6 address refused");
	is_int(2, proxy_map_count(m), "two live mappings");
	proxy_map_free(m);
}

static void
test_lru(void)
{
	struct netaddr_cidr c = pool4("10.0.0.0", 29);	/* .1 - .6 usable */
	struct proxy_map *m = proxy_map_new(&c, 3);
	int i, bad;

	if (!ok(m != NULL, "new: /29 max 3"))
		return;
	is_string("10.0.0.1", map_get(m, "a.test"), "a -> .1");
	is_string("10.0.0.2", map_get(m, "b.test"), "b -> .2");
	is_string("10.0.0.3", map_get(m, "c.test"), "c -> .3");
	/* a used again (DNS), c used by a connection: b is the least recent. */
	is_string("10.0.0.1", map_get(m, "a.test"), "a again");
	is_string("c.test", map_rev(m, "10.0.0.3"), "c by address");
	is_string("10.0.0.4", map_get(m, "d.test"),
	    "d: table full, gets a never-used address");
	is_string("(none)", map_rev(m, "10.0.0.2"), "b evicted (least recent)");
	is_int(3, proxy_map_count(m), "still 3 mappings");
	is_string("10.0.0.1", map_get(m, "a.test"), "a kept its address");
	is_string("10.0.0.3", map_get(m, "c.test"), "c kept its address");
	/* LRU now: d (oldest), a, c. */
	is_string("10.0.0.5", map_get(m, "e.test"), "e -> .5 (fresh), d evicted");
	is_string("(none)", map_rev(m, "10.0.0.4"), "d gone");
	is_string("10.0.0.6", map_get(m, "f.test"), "f -> .6 (last fresh)");
	/* Pool's fresh addresses are used up: FIFO of release: .2 (b), .4 (d), ... */
	is_string("10.0.0.2", map_get(m, "g.test"),
	    "g: first released address (b's) reused first");
	is_string("10.0.0.4", map_get(m, "h.test"), "h: then d's");
	is_string("h.test", map_rev(m, "10.0.0.4"), "recycled address maps to new name");
	is_string("10.0.0.2", map_get(m, "g.test"), "g stable");
	/* Cycle the pool many times: never the network or broadcast address. */
	bad = 0;
	for (i = 0; i < 1000; i++) {
		char n[32];
		const char *s;

		snprintf(n, sizeof(n), "n%d.test", i);
		s = map_get(m, n);
		if (strcmp(s, "") == 0 || strcmp(s, "10.0.0.0") == 0 ||
		    strcmp(s, "10.0.0.7") == 0)
			bad++;
		if (strcmp(map_rev(m, s), n) != 0)
			bad++;
	}
	is_int(0, bad, "1000 names cycling a /29: always usable, reverse agrees");
	is_int(3, proxy_map_count(m), "bounded at max");
	proxy_map_free(m);
}

static void
test_full_pool(void)
{
	struct netaddr_cidr c = pool4("10.0.0.0", 30);	/* .1, .2 */
	struct proxy_map *m = proxy_map_new(&c, 2);

	if (!ok(m != NULL, "new: /30 max 2 (max == usable)"))
		return;
	is_string("10.0.0.1", map_get(m, "a.test"), "/30: a -> .1");
	is_string("10.0.0.2", map_get(m, "b.test"), "/30: b -> .2");
	is_string("10.0.0.1", map_get(m, "c.test"), "/30: c recycles a's address");
	is_string("(none)", map_rev(m, "10.0.0.0"), "/30: network never mapped");
	is_string("(none)", map_rev(m, "10.0.0.3"), "/30: broadcast never mapped");
	is_string("b.test", map_rev(m, "10.0.0.2"), "/30: b kept");
	proxy_map_free(m);
}

#define HAMMER_THREADS	4
#define HAMMER_OPS	20000
#define HAMMER_NAMES	300

struct hammer {
	struct proxy_map *m;
	unsigned int	 seed;
	int		 bad;
};

static void *
hammer_run(void *arg)
{
	struct hammer *h = arg;
	struct netaddr a;
	char n[32], back[HOSTNAME_MAX + 1];
	uint32_t v;
	int i;

	for (i = 0; i < HAMMER_OPS; i++) {
		snprintf(n, sizeof(n), "h%d.test", rand_r(&h->seed) % HAMMER_NAMES);
		if (proxy_map_name_to_addr(h->m, n, &a) == -1) {
			h->bad++;
			continue;
		}
		v = ntohl(a.na_u.v4.s_addr);
		if (v <= 0xc6120000U || v >= 0xc6120fffU)	/* 198.18.0.0/20 */
			h->bad++;
		/* May have been recycled by another thread meanwhile: only check form. */
		if (proxy_map_addr_to_name(h->m, &a, back, sizeof(back)) == 0 &&
		    strncmp(back, "h", 1) != 0)
			h->bad++;
	}
	return NULL;
}

static void
test_hammer(void)
{
	struct netaddr_cidr c = pool4("198.18.0.0", 20);
	struct proxy_map *m = proxy_map_new(&c, 64);
	struct hammer h[HAMMER_THREADS];
	pthread_t t[HAMMER_THREADS];
	char back[HOSTNAME_MAX + 1];
	struct netaddr a, b;
	int i, bad = 0, live = 0;
	uint32_t v;

	if (!ok(m != NULL, "new: hammer map"))
		return;
	for (i = 0; i < HAMMER_THREADS; i++) {
		h[i].m = m;
		h[i].seed = 7 + i;
		h[i].bad = 0;
		if (pthread_create(&t[i], NULL, hammer_run, &h[i]) != 0)
			bail("pthread_create");
	}
	for (i = 0; i < HAMMER_THREADS; i++) {
		pthread_join(t[i], NULL);
		bad += h[i].bad;
	}
	is_int(0, bad, "hammer: %d threads x %d ops, no bad answer",
	    HAMMER_THREADS, HAMMER_OPS);
	/* Quiescent: every mapped address maps back and forth consistently. */
	bad = 0;
	for (v = 0xc6120000U; v <= 0xc6120fffU; v++) {
		memset(&a, 0, sizeof(a));
		a.na_family = AF_INET;
		a.na_u.v4.s_addr = htonl(v);
		if (proxy_map_addr_to_name(m, &a, back, sizeof(back)) == -1)
			continue;
		live++;
		if (proxy_map_name_to_addr(m, back, &b) == -1 ||
		    b.na_u.v4.s_addr != a.na_u.v4.s_addr)
			bad++;
	}
	is_int(0, bad, "hammer: table consistent both ways afterwards");
	is_int(64, live, "hammer: exactly max addresses live");
	is_int(64, proxy_map_count(m), "hammer: count is max");
	proxy_map_free(m);
}

int
main(void)
{
	plan_lazy();
	test_siphash();
	test_refusals();
	test_stable();
	test_lru();
	test_full_pool();
	test_hammer();
	return 0;
}
