/*
 * tests/unit/netctl_model.c: what netctl builds, without a kernel: the /30 pool
 * allocator, the configuration's parameters, the base and per-sandbox objects and
 * the rule text that drift detection compares.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libnftnl/rule.h>

#include "../../netctl/netctl_int.h"
#include "../tap.h"

static struct netaddr
A(const char *s)
{
	struct netaddr a;

	memset(&a, 0, sizeof(a));
	if (netaddr_parse(s, &a) == -1)
		bail("bad address %s", s);
	return a;
}

static size_t
count(const struct nc_model *m, enum nc_obj_type t)
{
	size_t i, n = 0;

	for (i = 0; i < m->nm_n; i++)
		n += m->nm_v[i].no_type == t;
	return n;
}

/* 1 if some rule of the model has a digest containing want. */
static int
has_rule(const struct nc_model *m, const char *want)
{
	char d[2048];
	size_t i;

	for (i = 0; i < m->nm_n; i++) {
		if (m->nm_v[i].no_type != NC_OBJ_RULE)
			continue;
		nc_rule_digest(m->nm_v[i].no_o, d, sizeof(d));
		if (strstr(d, want) != NULL)
			return 1;
	}
	return 0;
}

static int
has_desc(const struct nc_model *m, const char *want)
{
	size_t i;

	for (i = 0; i < m->nm_n; i++)
		if (strcmp(m->nm_v[i].no_desc, want) == 0)
			return 1;
	return 0;
}

int
main(void)
{
	struct netaddr_cidr pool;
	struct netaddr used[4], host, guest;
	struct airlock_config cfg;
	struct netctl_params p;
	struct nc_model m;
	struct sandbox sb;
	char err[512], buf[64];
	unsigned char key[24];

	plan(30);

	/* Pool allocation. */
	netaddr_cidr_parse("10.233.0.0/29", &pool);
	ok(netctl_pool_alloc(&pool, NULL, 0, &host, &guest) == 0,
	    "an empty pool allocates");
	is_string("10.233.0.1", netaddr_fmt(&host, buf, sizeof(buf)), "host is .1");
	is_string("10.233.0.2", netaddr_fmt(&guest, buf, sizeof(buf)), "guest is .2");
	used[0] = A("10.233.0.2");
	ok(netctl_pool_alloc(&pool, used, 1, &host, &guest) == 0,
	    "a used guest address skips its /30");
	is_string("10.233.0.6", netaddr_fmt(&guest, buf, sizeof(buf)),
	    "... to the next /30");
	used[1] = A("10.233.0.7");
	errno = 0;
	ok(netctl_pool_alloc(&pool, used, 2, &host, &guest) == -1 &&
	    errno == ENOSPC, "a full pool: ENOSPC");
	used[0] = A("192.168.1.1");
	ok(netctl_pool_alloc(&pool, used, 2, &host, &guest) == 0 &&
	    strcmp(netaddr_fmt(&guest, buf, sizeof(buf)), "10.233.0.2") == 0,
	    "addresses outside the pool do not count");
	netaddr_cidr_parse("10.233.0.0/31", &pool);
	errno = 0;
	ok(netctl_pool_alloc(&pool, NULL, 0, &host, &guest) == -1 &&
	    errno == EINVAL, "a pool smaller than a /30: EINVAL");
	netaddr_cidr_parse("fd00::/64", &pool);
	ok(netctl_pool_alloc(&pool, NULL, 0, &host, &guest) == -1,
	    "an IPv6 pool is refused");

	/* Parameters. */
	config_defaults(&cfg);
	snprintf(cfg.user, sizeof(cfg.user), "nobody");
	ok(netctl_params_from_config(&cfg, &p, err, sizeof(err)) == 0 &&
	    p.np_airlockd_uid == 65534 && p.np_proxy_port == 15001 &&
	    p.np_dns_port == 15053, "params from the defaults, user nobody");
	snprintf(cfg.user, sizeof(cfg.user), "no-such-user-x");
	ok(netctl_params_from_config(&cfg, &p, err, sizeof(err)) == -1 &&
	    strstr(err, "does not exist") != NULL,
	    "a missing user fails closed");
	snprintf(cfg.user, sizeof(cfg.user), "1234");
	ok(netctl_params_from_config(&cfg, &p, err, sizeof(err)) == 0 &&
	    p.np_airlockd_uid == 1234, "a numeric uid");
	cfg.dns_port = cfg.proxy_port;
	ok(netctl_params_from_config(&cfg, &p, err, sizeof(err)) == -1,
	    "the same port for proxy and DNS is refused");

	/* The base. */
	memset(&p, 0, sizeof(p));
	p.np_proxy_port = 15001;
	p.np_dns_port = 15053;
	p.np_airlockd_uid = 999;
	nc_model_init(&m);
	is_int(0, nc_model_base(&m, &p), "the base builds");
	is_int(2, (long long)count(&m, NC_OBJ_TABLE), "two tables");
	is_int(10, (long long)count(&m, NC_OBJ_CHAIN), "ten chains");
	is_int(8, (long long)count(&m, NC_OBJ_SET), "eight sets");
	is_int(34, (long long)count(&m, NC_OBJ_RULE), "34 rules");
	ok(has_rule(&m, "[immediate reg 1 0x0000993a ][redir proto_min reg 1 "
	    "proto_max reg 1 flags 0x2 ] comment \"TCP to any address and port: "
	    "to the proxy\""), "TCP is redirected to the proxy port (15001)");
	ok(has_rule(&m, "[immediate reg 1 0x0000cd3a ][redir"),
	    "DNS is redirected to the DNS port (15053)");
	ok(has_rule(&m, "[meta load skuid => reg 1 ][cmp eq reg 1 0x000003e7 ]"),
	    "the output rule matches airlockd's uid (999)");
	ok(has_rule(&m, "[lookup reg 1 set sandbox_src4 0x1 ]"),
	    "anti-spoofing is an inverted lookup");
	ok(has_desc(&m, "chain inet airlock sandbox_pre"),
	    "objects carry descriptions for error reports");
	nc_model_free(&m);

	/* One sandbox. */
	memset(&sb, 0, sizeof(sb));
	snprintf(sb.sb_name, sizeof(sb.sb_name), "demo");
	snprintf(sb.sb_iface, sizeof(sb.sb_iface), "al-demo");
	sb.sb_host_ip = A("10.233.0.1");
	sb.sb_guest_ip = A("10.233.0.2");
	nc_model_init(&m);
	is_int(0, nc_model_sandbox(&m, &sb), "a sandbox builds");
	is_int(4, (long long)count(&m, NC_OBJ_ELEM), "four elements without a MAC");
	ok(count(&m, NC_OBJ_CHAIN) == 1 && count(&m, NC_OBJ_RULE) == 1,
	    "one netdev chain with one rule");
	ok(has_desc(&m, "element al-demo . 10.233.0.2 in set inet airlock "
	    "sandbox_src4"), "element descriptions name the key");
	nc_model_free(&m);
	snprintf(sb.sb_mac, sizeof(sb.sb_mac), "02:00:00:00:00:0a");
	nc_model_init(&m);
	ok(nc_model_sandbox(&m, &sb) == 0 && count(&m, NC_OBJ_ELEM) == 6,
	    "a pinned MAC adds two elements");
	nc_model_free(&m);
	snprintf(sb.sb_mac, sizeof(sb.sb_mac), "zz:00:00:00:00:0a");
	nc_model_init(&m);
	ok(nc_model_sandbox(&m, &sb) == -1, "a bad MAC is refused");
	nc_model_free(&m);

	memset(key, 0, sizeof(key));
	memcpy(key, "tap7", 4);
	key[16] = 0x02; key[21] = 0x0b;
	nc_elem_fmt(NC_SET_MAC, key, 24, err, sizeof(err));
	is_string("tap7 . 02:00:00:00:00:0b", err, "MAC element text");
	return 0;
}
