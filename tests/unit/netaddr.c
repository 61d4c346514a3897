/*
 * tests/unit/netaddr.c: strict IP literals, CIDR blocks, embedded IPv4, classifier.
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "netaddr.h"
#include "../tap.h"

/* Literals: NULL canon means refused; otherwise the canonical text form. */
struct parse_case {
	const char	*in;
	const char	*canon;
};

static const struct parse_case parse_cases[] = {
	{ "1.2.3.4", "1.2.3.4" },
	{ "0.0.0.0", "0.0.0.0" },
	{ "255.255.255.255", "255.255.255.255" },
	{ "10.0.0.1", "10.0.0.1" },
	{ "100.64.0.0", "100.64.0.0" },
	{ "127.1", NULL },
	{ "127.0.1", NULL },
	{ "0x7f.0.0.1", NULL },
	{ "0x7f000001", NULL },
	{ "0177.0.0.1", NULL },
	{ "2130706433", NULL },
	{ "1.2.3.4 ", NULL },
	{ " 1.2.3.4", NULL },
	{ "1.2.3.4\t", NULL },
	{ "1.2.3.4.", NULL },
	{ ".1.2.3.4", NULL },
	{ "01.2.3.4", NULL },
	{ "1.2.3.04", NULL },
	{ "1.2.3.00", NULL },
	{ "256.1.1.1", NULL },
	{ "1.1.1.256", NULL },
	{ "1000.1.1.1", NULL },
	{ "1.2.3.4.5", NULL },
	{ "1..3.4", NULL },
	{ "1.2.3", NULL },
	{ "+1.2.3.4", NULL },
	{ "-1.2.3.4", NULL },
	{ "1.2.3.4/32", NULL },
	{ "1.2.3.4:80", NULL },
	{ "", NULL },
	{ ".", NULL },
	{ "localhost", NULL },
	{ "::1", "::1" },
	{ "::", "::" },
	{ "0:0:0:0:0:0:0:1", "::1" },
	{ "2001:DB8::1", "2001:db8::1" },
	{ "2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1" },
	{ "fe80::1", "fe80::1" },
	{ "::ffff:127.0.0.1", "::ffff:127.0.0.1" },
	{ "::ffff:7f00:1", "::ffff:127.0.0.1" },
	{ "::127.0.0.1", "::127.0.0.1" },
	{ "64:ff9b::a9fe:a9fe", "64:ff9b::a9fe:a9fe" },
	{ "64:ff9b::169.254.169.254", "64:ff9b::a9fe:a9fe" },
	{ "2002:7f00:1::", "2002:7f00:1::" },
	{ "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8" },
	{ "1:2:3:4:5:6:1.2.3.4", "1:2:3:4:5:6:102:304" },
	{ "fe80::1%eth0", NULL },
	{ "fe80::1%1", NULL },
	{ "[::1]", NULL },
	{ "[::1]:443", NULL },
	{ "::1 ", NULL },
	{ ":::1", NULL },
	{ "1::2::3", NULL },
	{ "1:2:3:4:5:6:7:8:9", NULL },
	{ "1:2:3:4:5:6:7", NULL },
	{ "12345::1", NULL },
	{ "g::1", NULL },
	{ "::ffff:127.1", NULL },
	{ "::ffff:0177.0.0.1", NULL },
	{ "::ffff:127.0.0.01", NULL },
	{ "::ffff:0x7f.0.0.1", NULL },
	{ "::ffff:1.2.3.4.5", NULL },
	{ "::ffff:256.0.0.1", NULL },
	{ "::1.2.3.4:1", NULL },
	{ "1.2.3.4::", NULL },
	{ "::1/128", NULL },
	{ ":", NULL },
	{ "::ffff:1.2.3.4 ", NULL },
	{ "0000:0000:0000:0000:0000:0000:0000:00001", NULL },
	{ "0000:0000:0000:0000:0000:0000:0000:0001", "::1" },
	{ "::FFFF:1.2.3.4", "::ffff:1.2.3.4" },
	{ "0000:0000:0000:0000:0000:ffff:255.255.255.255",
	    "::ffff:255.255.255.255" },
	{ "00000:0000:0000:0000:0000:ffff:255.255.255.255", NULL },
	{ "1:2:3:4:5:6:7:1.2.3.4", NULL },
	{ "::1.2.3", NULL },
	{ "::1.2.3.4.", NULL },
	{ "1.2.3.4:", NULL },
	{ "fe80::1%", NULL },
	{ "::ffff:１.2.3.4", NULL },
	{ "\xef\xbc\x91.2.3.4", NULL },
};

struct class_case {
	const char		*addr;
	enum netaddr_class	 cl;
	const char		*why;
};

static const struct class_case class_cases[] = {
	{ "0.0.0.0", NETADDR_FLOOR, "unspecified" },
	{ "0.1.2.3", NETADDR_FLOOR, "this-network" },
	{ "127.0.0.1", NETADDR_FLOOR, "loopback" },
	{ "127.255.255.254", NETADDR_FLOOR, "loopback" },
	{ "169.254.169.254", NETADDR_FLOOR, "metadata" },
	{ "169.254.170.2", NETADDR_FLOOR, "metadata" },
	{ "169.254.1.1", NETADDR_FLOOR, "link-local" },
	{ "100.100.100.200", NETADDR_FLOOR, "metadata" },
	{ "168.63.129.16", NETADDR_FLOOR, "metadata" },
	{ "224.0.0.1", NETADDR_FLOOR, "multicast" },
	{ "239.255.255.250", NETADDR_FLOOR, "multicast" },
	{ "240.0.0.1", NETADDR_FLOOR, "reserved" },
	{ "255.255.255.254", NETADDR_FLOOR, "reserved" },
	{ "255.255.255.255", NETADDR_FLOOR, "broadcast" },
	{ "10.1.2.3", NETADDR_PRIVATE, "rfc1918" },
	{ "172.16.0.1", NETADDR_PRIVATE, "rfc1918" },
	{ "172.31.255.255", NETADDR_PRIVATE, "rfc1918" },
	{ "172.32.0.1", NETADDR_PUBLIC, "public" },
	{ "172.15.255.255", NETADDR_PUBLIC, "public" },
	{ "192.168.1.1", NETADDR_PRIVATE, "rfc1918" },
	{ "100.64.0.1", NETADDR_PRIVATE, "cgnat" },
	{ "100.127.255.255", NETADDR_PRIVATE, "cgnat" },
	{ "100.128.0.0", NETADDR_PUBLIC, "public" },
	{ "192.0.0.8", NETADDR_PRIVATE, "ietf-protocol" },
	{ "198.18.0.1", NETADDR_PRIVATE, "benchmark" },
	{ "198.19.255.255", NETADDR_PRIVATE, "benchmark" },
	{ "198.20.0.0", NETADDR_PUBLIC, "public" },
	{ "192.0.2.1", NETADDR_PRIVATE, "documentation" },
	{ "198.51.100.7", NETADDR_PRIVATE, "documentation" },
	{ "203.0.113.9", NETADDR_PRIVATE, "documentation" },
	{ "1.1.1.1", NETADDR_PUBLIC, "public" },
	{ "8.8.8.8", NETADDR_PUBLIC, "public" },
	{ "140.82.112.3", NETADDR_PUBLIC, "public" },
	{ "223.255.255.255", NETADDR_PUBLIC, "public" },
	{ "::", NETADDR_FLOOR, "unspecified" },
	{ "::1", NETADDR_FLOOR, "loopback" },
	{ "fe80::1", NETADDR_FLOOR, "link-local" },
	{ "febf:ffff::1", NETADDR_FLOOR, "link-local" },
	{ "ff02::1", NETADDR_FLOOR, "multicast" },
	{ "fd00:ec2::254", NETADDR_FLOOR, "metadata" },
	{ "fd00:ec2::253", NETADDR_PRIVATE, "unique-local" },
	{ "fc00::1", NETADDR_PRIVATE, "unique-local" },
	{ "fdff::1", NETADDR_PRIVATE, "unique-local" },
	{ "2001:db8::1", NETADDR_PRIVATE, "documentation" },
	{ "2606:4700::1111", NETADDR_PUBLIC, "public" },
	{ "2a00:1450:4001::200e", NETADDR_PUBLIC, "public" },
	/* IPv6 forms that embed an IPv4 address count as that address. */
	{ "::ffff:127.0.0.1", NETADDR_FLOOR, "loopback" },
	{ "::ffff:7f00:1", NETADDR_FLOOR, "loopback" },
	{ "::ffff:a9fe:a9fe", NETADDR_FLOOR, "metadata" },
	{ "::ffff:0:7f00:1", NETADDR_FLOOR, "loopback" },
	{ "::127.0.0.1", NETADDR_FLOOR, "loopback" },
	{ "::0.0.0.2", NETADDR_FLOOR, "this-network" },
	{ "::ffff:10.0.0.1", NETADDR_PRIVATE, "rfc1918" },
	{ "::ffff:8.8.8.8", NETADDR_PUBLIC, "public" },
	{ "64:ff9b::a9fe:a9fe", NETADDR_FLOOR, "metadata" },
	{ "64:ff9b::7f00:1", NETADDR_FLOOR, "loopback" },
	{ "64:ff9b::808:808", NETADDR_PUBLIC, "public" },
	{ "64:ff9b:1::7f00:1", NETADDR_FLOOR, "loopback" },
	/* RFC 6052 /48 layout: 127.0 in bits 48..63, .0.1 in bits 72..87. */
	{ "64:ff9b:1:7f00:0:100:808:808", NETADDR_FLOOR, "loopback" },
	{ "64:ff9b:1:a9fe:a9:fe00:808:808", NETADDR_FLOOR, "metadata" },
	{ "64:ff9b:1:808:8:800:808:808", NETADDR_PUBLIC, "public" },
	{ "2002:7f00:1::", NETADDR_FLOOR, "loopback" },
	{ "2002:a9fe:a9fe::1", NETADDR_FLOOR, "metadata" },
	{ "2002:c0a8:101::1", NETADDR_PRIVATE, "rfc1918" },
	{ "2002:808:808::1", NETADDR_PUBLIC, "public" },
	/* Teredo: client 127.0.0.1 is stored inverted, 80ff:fffe. */
	{ "2001:0:4136:e378:8000:63bf:80ff:fffe", NETADDR_FLOOR, "loopback" },
	{ "2001::5601:5601", NETADDR_FLOOR, "metadata" },
	{ "2001::f7f7:f7f7", NETADDR_PUBLIC, "public" },
};

/* CIDR blocks: NULL canon means refused. */
static const struct parse_case cidr_cases[] = {
	{ "10.0.0.0/8", "10.0.0.0/8" },
	{ "0.0.0.0/0", "0.0.0.0/0" },
	{ "1.2.3.4/32", "1.2.3.4/32" },
	{ "::/0", "::/0" },
	{ "2001:db8::/32", "2001:db8::/32" },
	{ "::1/128", "::1/128" },
	{ "fe80::/10", "fe80::/10" },
	{ "10.0.0.1/8", NULL },
	{ "10.0.0.0/33", NULL },
	{ "10.0.0.0/-1", NULL },
	{ "10.0.0.0/+8", NULL },
	{ "10.0.0.0/08", NULL },
	{ "10.0.0.0/ 8", NULL },
	{ "10.0.0.0/8 ", NULL },
	{ "10.0.0.0/", NULL },
	{ "10.0.0.0", NULL },
	{ "/8", NULL },
	{ "10/8", NULL },
	{ "010.0.0.0/8", NULL },
	{ "10.0.0.0/8/8", NULL },
	{ "10.0.0.0/0x8", NULL },
	{ "10.0.0.0/4294967304", NULL },
	{ "::/129", NULL },
	{ "::1/127", NULL },
	{ "fe80::1%eth0/64", NULL },
	{ "[::1]/128", NULL },
};

struct contain_case {
	const char	*cidr;
	const char	*addr;
	int		 want;
};

static const struct contain_case contain_cases[] = {
	{ "0.0.0.0/0", "1.2.3.4", 1 },
	{ "0.0.0.0/0", "255.255.255.255", 1 },
	{ "0.0.0.0/0", "2606:4700::1111", 0 },
	{ "0.0.0.0/0", "::ffff:8.8.8.8", 1 },
	{ "1.2.3.4/32", "1.2.3.4", 1 },
	{ "1.2.3.4/32", "1.2.3.5", 0 },
	{ "10.0.0.0/8", "10.255.255.255", 1 },
	{ "10.0.0.0/8", "11.0.0.0", 0 },
	{ "10.0.0.0/8", "9.255.255.255", 0 },
	{ "172.16.0.0/12", "172.31.1.1", 1 },
	{ "172.16.0.0/12", "172.32.0.0", 0 },
	{ "10.0.0.0/8", "::ffff:10.1.2.3", 1 },
	{ "10.0.0.0/8", "::ffff:11.1.2.3", 0 },
	{ "127.0.0.0/8", "::127.0.0.1", 1 },
	{ "127.0.0.0/8", "64:ff9b::7f00:1", 1 },
	{ "127.0.0.0/8", "2002:7f00:1::", 1 },
	{ "127.0.0.0/8", "2001:0:4136:e378:8000:63bf:80ff:fffe", 1 },
	{ "127.0.0.0/8", "::1", 0 },
	{ "0.0.0.0/8", "::", 0 },
	{ "::/0", "2606:4700::1111", 1 },
	{ "::/0", "1.2.3.4", 0 },
	{ "::1/128", "::1", 1 },
	{ "::1/128", "::2", 0 },
	{ "fe80::/10", "febf::1", 1 },
	{ "fe80::/10", "fec0::1", 0 },
	{ "2001:db8::/32", "2001:db8:ffff::1", 1 },
	{ "2001:db8::/32", "2001:db9::1", 0 },
	{ "::ffff:0.0.0.0/96", "::ffff:1.2.3.4", 1 },
	{ "::ffff:10.0.0.0/104", "10.9.8.7", 1 },
	{ "::ffff:10.0.0.0/104", "11.9.8.7", 0 },
	{ "::ffff:10.0.0.0/104", "64:ff9b::a09:807", 1 },
	{ "64:ff9b::/96", "64:ff9b::1.2.3.4", 1 },
};

static void
test_parse(void)
{
	char buf[NETADDR_STRLEN];
	struct netaddr a, b;
	size_t i;
	int rc;

	for (i = 0; i < sizeof(parse_cases) / sizeof(parse_cases[0]); i++) {
		const struct parse_case *pc = &parse_cases[i];

		memset(&a, 0xa5, sizeof(a));
		rc = netaddr_parse(pc->in, &a);
		if (pc->canon == NULL) {
			is_int(-1, rc, "parse %zu refuses \"%s\"", i, pc->in);
			ok(a.na_family == (int)0xa5a5a5a5,
			    "parse %zu leaves out untouched", i);
			continue;
		}
		if (!is_int(0, rc, "parse \"%s\"", pc->in))
			continue;
		is_string(pc->canon, netaddr_fmt(&a, buf, sizeof(buf)),
		    "fmt \"%s\"", pc->in);
		ok(netaddr_parse(buf, &b) == 0 && netaddr_equal(&a, &b),
		    "fmt of \"%s\" reparses to the same address", pc->in);
	}
	ok(netaddr_parse("1.2.3.4", &a) == 0 && a.na_family == AF_INET &&
	    a.na_u.v4.s_addr == htonl(0x01020304), "1.2.3.4 in network order");
	ok(netaddr_parse("::ffff:1.2.3.4", &a) == 0 && a.na_family == AF_INET6,
	    "::ffff:1.2.3.4 stays IPv6 when parsed");
	/* netaddr_fmt with a short buffer never overflows. */
	netaddr_parse("255.255.255.255", &a);
	memset(buf, 'X', sizeof(buf));
	netaddr_fmt(&a, buf, 8);
	ok(buf[0] == '\0' && buf[8] == 'X', "fmt with a short buffer: empty");
}

static void
test_classify(void)
{
	const char *why;
	struct netaddr a;
	size_t i;

	for (i = 0; i < sizeof(class_cases) / sizeof(class_cases[0]); i++) {
		const struct class_case *cc = &class_cases[i];

		if (!is_int(0, netaddr_parse(cc->addr, &a), "parse %s", cc->addr))
			continue;
		why = NULL;
		is_int(cc->cl, netaddr_classify(&a, &why), "classify %s", cc->addr);
		is_string(cc->why, why, "classify %s: why", cc->addr);
	}
	netaddr_parse("127.0.0.1", &a);
	is_int(NETADDR_FLOOR, netaddr_classify(&a, NULL), "why may be NULL");
	memset(&a, 0, sizeof(a));
	a.na_family = AF_UNIX;
	is_int(NETADDR_FLOOR, netaddr_classify(&a, NULL),
	    "unknown family is floor");
}

static void
test_cidr(void)
{
	char buf[NETADDR_STRLEN], text[NETADDR_STRLEN + 8];
	struct netaddr_cidr c;
	struct netaddr a;
	size_t i;
	int rc;

	for (i = 0; i < sizeof(cidr_cases) / sizeof(cidr_cases[0]); i++) {
		const struct parse_case *pc = &cidr_cases[i];

		rc = netaddr_cidr_parse(pc->in, &c);
		if (pc->canon == NULL) {
			is_int(-1, rc, "cidr refuses \"%s\"", pc->in);
			continue;
		}
		if (!is_int(0, rc, "cidr \"%s\"", pc->in))
			continue;
		snprintf(text, sizeof(text), "%s/%u",
		    netaddr_fmt(&c.nc_addr, buf, sizeof(buf)), c.nc_prefix);
		is_string(pc->canon, text, "cidr \"%s\" canonical", pc->in);
	}
	for (i = 0; i < sizeof(contain_cases) / sizeof(contain_cases[0]); i++) {
		const struct contain_case *cc = &contain_cases[i];

		if (netaddr_cidr_parse(cc->cidr, &c) == -1 ||
		    netaddr_parse(cc->addr, &a) == -1) {
			ok(0, "contain %s %s: parse", cc->cidr, cc->addr);
			continue;
		}
		is_int(cc->want, netaddr_cidr_contains(&c, &a), "%s %s %s",
		    cc->cidr, cc->want ? "contains" : "does not contain", cc->addr);
	}
}

static void
test_embedded(void)
{
	char buf[NETADDR_STRLEN];
	struct netaddr a, v4;

	netaddr_parse("::", &a);
	is_int(0, netaddr_embedded_v4(&a, &v4), ":: embeds nothing");
	netaddr_parse("::1", &a);
	is_int(0, netaddr_embedded_v4(&a, &v4), "::1 embeds nothing");
	netaddr_parse("2606:4700::1111", &a);
	is_int(0, netaddr_embedded_v4(&a, &v4), "global v6 embeds nothing");
	netaddr_parse("1.2.3.4", &a);
	is_int(0, netaddr_embedded_v4(&a, &v4), "v4 embeds nothing");
	netaddr_parse("2002:c000:0204::1", &a);
	ok(netaddr_embedded_v4(&a, &v4) == 1 && v4.na_family == AF_INET,
	    "6to4 embeds");
	is_string("192.0.2.4", netaddr_fmt(&v4, buf, sizeof(buf)), "6to4 address");
	netaddr_parse("2001:0:4136:e378:8000:63bf:3fff:fdd2", &a);
	ok(netaddr_embedded_v4(&a, &v4) == 1, "teredo embeds");
	is_string("192.0.2.45", netaddr_fmt(&v4, buf, sizeof(buf)),
	    "teredo client (RFC 4380 example)");
	netaddr_parse("64:ff9b:1::c000:221", &a);
	ok(netaddr_embedded_v4(&a, &v4) == 1, "local-use NAT64 embeds");
	is_string("192.0.2.33", netaddr_fmt(&v4, buf, sizeof(buf)),
	    "local-use NAT64: last 32 bits");
}

static void
test_sockaddr(void)
{
	struct sockaddr_storage ss;
	struct sockaddr_in sin;
	struct sockaddr_in6 sin6;
	struct sockaddr sa;
	struct netaddr a, b;
	socklen_t sslen;
	uint16_t port = 0;
	char buf[NETADDR_STRLEN];

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(443);
	sin.sin_addr.s_addr = htonl(0x0a000001);
	ok(netaddr_from_sockaddr((struct sockaddr *)&sin, &a, &port) == 0 &&
	    port == 443 && a.na_family == AF_INET, "from sin");
	is_string("10.0.0.1", netaddr_fmt(&a, buf, sizeof(buf)), "from sin addr");
	ok(netaddr_to_sockaddr(&a, 8443, &ss, &sslen) == 0 &&
	    sslen == sizeof(sin) && netaddr_from_sockaddr((struct sockaddr *)&ss,
	    &b, &port) == 0 && port == 8443 && netaddr_equal(&a, &b),
	    "to sin round trip");

	memset(&sin6, 0, sizeof(sin6));
	sin6.sin6_family = AF_INET6;
	sin6.sin6_port = htons(53);
	inet_pton(AF_INET6, "::ffff:10.233.0.2", &sin6.sin6_addr);
	ok(netaddr_from_sockaddr((struct sockaddr *)&sin6, &a, NULL) == 0 &&
	    a.na_family == AF_INET, "v4-mapped sin6 becomes AF_INET");
	is_string("10.233.0.2", netaddr_fmt(&a, buf, sizeof(buf)), "mapped addr");
	inet_pton(AF_INET6, "2001:db8::5", &sin6.sin6_addr);
	ok(netaddr_from_sockaddr((struct sockaddr *)&sin6, &a, &port) == 0 &&
	    a.na_family == AF_INET6 && port == 53, "from sin6");
	ok(netaddr_to_sockaddr(&a, 53, &ss, &sslen) == 0 &&
	    sslen == sizeof(sin6) && netaddr_from_sockaddr((struct sockaddr *)&ss,
	    &b, NULL) == 0 && netaddr_equal(&a, &b), "to sin6 round trip");
	memset(&sa, 0, sizeof(sa));
	sa.sa_family = AF_UNIX;
	is_int(-1, netaddr_from_sockaddr(&sa, &a, NULL), "AF_UNIX refused");
	a.na_family = AF_UNIX;
	is_int(-1, netaddr_to_sockaddr(&a, 1, &ss, &sslen), "to AF_UNIX refused");
	netaddr_parse("1.2.3.4", &a);
	netaddr_parse("::ffff:1.2.3.4", &b);
	is_int(0, netaddr_equal(&a, &b), "v4 and mapped v6 are not equal");
}

/* netaddr_cidr_floor(): any address of a block in the floor, not only its ends. */
static void
test_cidr_floor(void)
{
	static const struct {
		const char	*cidr;
		const char	*why;	/* NULL: clear of the floor */
	} cases[] = {
		{ "169.0.0.0/8", "metadata" },		/* ends routable, floor inside */
		{ "169.254.0.0/16", "link-local" },	/* named as its first address */
		{ "169.254.169.254/32", "metadata" },
		{ "100.64.0.0/10", "metadata" },	/* 100.100.100.200 inside */
		{ "127.0.0.0/8", "loopback" },
		{ "224.0.0.0/8", "multicast" },
		{ "0.0.0.0/8", "unspecified" },
		{ "fe00::/7", "link-local" },		/* fe80::/10 inside */
		{ "fd00:ec2::/32", "metadata" },
		{ "10.0.0.0/8", NULL },			/* positive controls */
		{ "198.18.0.0/15", NULL },
		{ "10.233.0.0/16", NULL },
		{ "168.0.0.0/8", "metadata" },		/* 168.63.129.16 (Azure) */
		{ "2001:db8::/32", NULL },
	};
	struct netaddr_cidr c;
	const char *why;
	size_t i;
	int rc;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (netaddr_cidr_parse(cases[i].cidr, &c) == -1) {
			ok(0, "%s parses", cases[i].cidr);
			continue;
		}
		why = NULL;
		rc = netaddr_cidr_floor(&c, &why);
		if (cases[i].why == NULL)
			is_int(0, rc, "%s: clear of the floor", cases[i].cidr);
		else
			ok(rc == 1 && why != NULL && strcmp(why, cases[i].why) == 0,
			    "%s: in the floor (%s; got %s)", cases[i].cidr,
			    cases[i].why, rc ? why : "none");
	}
}

/* netaddr_endpoint_parse() and netaddr_is_loopback(): listening addresses. */
static void
test_endpoint(void)
{
	static const struct {
		const char	*s;
		const char	*addr;	/* NULL: refused */
		int		 port;
		int		 loopback;
	} cases[] = {
		{ "127.0.0.1:9345", "127.0.0.1", 9345, 1 },
		{ "127.0.0.2:0", "127.0.0.2", 0, 1 },
		{ "[::1]:65535", "::1", 65535, 1 },
		{ "[::ffff:127.0.0.1]:80", "::ffff:127.0.0.1", 80, 1 },
		{ "10.0.0.1:80", "10.0.0.1", 80, 0 },
		{ "0.0.0.0:80", "0.0.0.0", 80, 0 },
		{ "[::]:80", "::", 80, 0 },
		{ "127.0.0.1", NULL, 0, 0 },
		{ "127.0.0.1:", NULL, 0, 0 },
		{ "127.0.0.1:65536", NULL, 0, 0 },
		{ "127.0.0.1:99999999999999999999", NULL, 0, 0 },
		{ "127.0.0.1:+80", NULL, 0, 0 },
		{ "127.0.0.1: 80", NULL, 0, 0 },
		{ "127.0.0.1:0x50", NULL, 0, 0 },
		{ "127.1:80", NULL, 0, 0 },
		{ "localhost:80", NULL, 0, 0 },
		{ "::1:80", NULL, 0, 0 },		/* IPv6 without brackets */
		{ "[::1:80", NULL, 0, 0 },
		{ "[127.0.0.1]:80", "127.0.0.1", 80, 1 },
		{ ":80", NULL, 0, 0 },
		{ "[]:80", NULL, 0, 0 },
	};
	char buf[NETADDR_STRLEN];
	struct netaddr a;
	uint16_t port;
	size_t i;
	int rc;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		port = 1234;
		rc = netaddr_endpoint_parse(cases[i].s, &a, &port);
		if (cases[i].addr == NULL) {
			ok(rc == -1 && port == 1234, "endpoint '%s' refused",
			    cases[i].s);
			continue;
		}
		if (!ok(rc == 0, "endpoint '%s' parses", cases[i].s))
			continue;
		is_string(cases[i].addr, netaddr_fmt(&a, buf, sizeof(buf)),
		    "... its address");
		is_int(cases[i].port, port, "... its port");
		is_int(cases[i].loopback, netaddr_is_loopback(&a),
		    "... loopback or not");
	}
}

int
main(void)
{
	plan_lazy();
	test_endpoint();
	test_cidr_floor();
	test_parse();
	test_classify();
	test_cidr();
	test_embedded();
	test_sockaddr();
	return 0;
}
