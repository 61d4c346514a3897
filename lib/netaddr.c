/*
 * lib/netaddr.c: see include/netaddr.h.
 *
 * The IPv4 grammar is our own (four decimal octets, no leading zeros): inet_aton()
 * and inet_addr() accept "127.1", "0x7f.1", "0177.0.0.1" and "2130706433", each of
 * which is 127.0.0.1 to the kernel and could slip past a check that reads the text
 * differently, so they are never called here.  IPv6 text is pre-checked (only hex
 * digits, ':' and, in the last group, a strict dotted quad) and then handed to
 * inet_pton(AF_INET6), whose glibc grammar is RFC 4291's.
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <pthread.h>
#include <string.h>

#include "netaddr.h"

#define NETADDR_V6_TEXT_MAX	(INET6_ADDRSTRLEN - 1)

/* Parses a strict dotted quad from len bytes at s into the 4 bytes at out. */
static int
netaddr_parse_v4(const char *s, size_t len, uint8_t *out)
{
	unsigned int part = 0, val = 0, digits = 0;
	uint8_t tmp[4];
	size_t i;

	for (i = 0; i <= len; i++) {
		if (i == len || s[i] == '.') {
			if (digits == 0 || part >= 4)
				return -1;
			tmp[part++] = (uint8_t)val;
			val = digits = 0;
			continue;
		}
		if (s[i] < '0' || s[i] > '9')
			return -1;
		if (digits == 1 && val == 0)
			return -1;		/* leading zero: octal to inet_aton */
		val = val * 10 + (unsigned int)(s[i] - '0');
		if (++digits > 3 || val > 255)
			return -1;
	}
	if (part != 4)
		return -1;
	memcpy(out, tmp, sizeof(tmp));
	return 0;
}

static int
netaddr_parse_v6(const char *s, size_t len, struct in6_addr *out)
{
	char buf[NETADDR_V6_TEXT_MAX + 1];
	uint8_t quad[4];
	size_t i, lastcolon = 0, ncolon = 0;
	int dots = 0;

	if (len < 2 || len > NETADDR_V6_TEXT_MAX)
		return -1;
	for (i = 0; i < len; i++) {
		if (s[i] == ':') {
			lastcolon = i;
			ncolon++;
		} else if (s[i] == '.')
			dots = 1;
		else if (!((s[i] >= '0' && s[i] <= '9') ||
		    (s[i] >= 'a' && s[i] <= 'f') || (s[i] >= 'A' && s[i] <= 'F')))
			return -1;	/* '%' zone, '[', ']', space, '/', ... */
	}
	if (ncolon < 2)
		return -1;
	/* The dotted quad may only be the last group, and must be strict too. */
	if (dots && netaddr_parse_v4(s + lastcolon + 1, len - lastcolon - 1,
	    quad) == -1)
		return -1;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (inet_pton(AF_INET6, buf, out) != 1)
		return -1;
	return 0;
}

int
netaddr_parse(const char *s, struct netaddr *out)
{
	struct netaddr a;
	size_t len;

	memset(&a, 0, sizeof(a));
	len = strlen(s);
	if (memchr(s, ':', len) != NULL) {
		if (netaddr_parse_v6(s, len, &a.na_u.v6) == -1)
			return -1;
		a.na_family = AF_INET6;
	} else {
		if (netaddr_parse_v4(s, len, (uint8_t *)&a.na_u.v4.s_addr) == -1)
			return -1;
		a.na_family = AF_INET;
	}
	*out = a;
	return 0;
}

static const uint8_t *
netaddr_bytes(const struct netaddr *a, unsigned int *bits)
{
	if (a->na_family == AF_INET) {
		*bits = 32;
		return (const uint8_t *)&a->na_u.v4.s_addr;
	}
	*bits = 128;
	return a->na_u.v6.s6_addr;
}

/* 1 if the first prefix bits of x and y are equal. */
static int
netaddr_prefix_equal(const uint8_t *x, const uint8_t *y, unsigned int prefix)
{
	unsigned int whole = prefix / 8, rest = prefix % 8;
	uint8_t mask;

	if (memcmp(x, y, whole) != 0)
		return 0;
	if (rest == 0)
		return 1;
	mask = (uint8_t)(0xff << (8 - rest));
	return (x[whole] & mask) == (y[whole] & mask);
}

int
netaddr_cidr_parse(const char *s, struct netaddr_cidr *out)
{
	char buf[NETADDR_V6_TEXT_MAX + 1];
	struct netaddr_cidr c;
	const char *slash, *p;
	const uint8_t *bytes;
	unsigned int prefix = 0, bits, i;
	size_t alen;

	memset(&c, 0, sizeof(c));
	if ((slash = strchr(s, '/')) == NULL)
		return -1;
	alen = (size_t)(slash - s);
	if (alen == 0 || alen >= sizeof(buf))
		return -1;
	memcpy(buf, s, alen);
	buf[alen] = '\0';
	if (netaddr_parse(buf, &c.nc_addr) == -1)
		return -1;
	p = slash + 1;
	if (*p == '\0' || (p[0] == '0' && p[1] != '\0'))
		return -1;
	for (i = 0; p[i] != '\0'; i++) {
		if (p[i] < '0' || p[i] > '9' || i >= 3)
			return -1;
		prefix = prefix * 10 + (unsigned int)(p[i] - '0');
	}
	bytes = netaddr_bytes(&c.nc_addr, &bits);
	if (prefix > bits)
		return -1;
	/* Host bits must be zero: "10.0.0.1/8" is a typo, not a network. */
	for (i = prefix; i < bits; i++)
		if (bytes[i / 8] & (0x80 >> (i % 8)))
			return -1;
	c.nc_prefix = prefix;
	*out = c;
	return 0;
}

static void
netaddr_set_v4(struct netaddr *v4, const uint8_t *p)
{
	memset(v4, 0, sizeof(*v4));
	v4->na_family = AF_INET;
	memcpy(&v4->na_u.v4.s_addr, p, 4);
}

int
netaddr_embedded_v4(const struct netaddr *a, struct netaddr *v4)
{
	static const uint8_t zero[12];
	const uint8_t *b;
	uint8_t x[4];
	int i;

	if (a->na_family != AF_INET6)
		return 0;
	b = a->na_u.v6.s6_addr;
	/* ::ffff:0:0/96 IPv4-mapped. */
	if (memcmp(b, zero, 10) == 0 && b[10] == 0xff && b[11] == 0xff)
		goto low32;
	/* ::ffff:0:0:0/96 IPv4-translated (RFC 2765 SIIT); not in the header's list. */
	if (memcmp(b, zero, 8) == 0 && b[8] == 0xff && b[9] == 0xff &&
	    b[10] == 0 && b[11] == 0)
		goto low32;
	/* ::/96 IPv4-compatible, except :: and ::1 which are themselves. */
	if (memcmp(b, zero, 12) == 0) {
		if (b[12] == 0 && b[13] == 0 && b[14] == 0 && b[15] <= 1)
			return 0;
		goto low32;
	}
	/* 64:ff9b::/96 NAT64 well-known prefix (RFC 6052). */
	if (b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b &&
	    memcmp(b + 4, zero, 8) == 0)
		goto low32;
	/*
	 * 64:ff9b:1::/48 local-use NAT64 (RFC 8215).  The operator picks the prefix
	 * length, so the IPv4 address may sit at any RFC 6052 position; this returns the
	 * last 32 bits (the /96 layout).  netaddr_classify() also checks the /48 layout.
	 */
	if (b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b &&
	    b[4] == 0x00 && b[5] == 0x01)
		goto low32;
	/* 2002::/16 6to4: the IPv4 address is bits 16..47. */
	if (b[0] == 0x20 && b[1] == 0x02) {
		netaddr_set_v4(v4, b + 2);
		return 1;
	}
	/* 2001:0::/32 Teredo: the client's address is the last 32 bits, inverted. */
	if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x00 && b[3] == 0x00) {
		for (i = 0; i < 4; i++)
			x[i] = b[12 + i] ^ 0xff;
		netaddr_set_v4(v4, x);
		return 1;
	}
	return 0;
 low32:
	netaddr_set_v4(v4, b + 12);
	return 1;
}

/* Containment without unwrapping: same family, same leading prefix bits. */
static int
netaddr_cidr_contains_plain(const struct netaddr_cidr *c, const struct netaddr *a)
{
	const uint8_t *cb, *ab;
	unsigned int cbits, abits;

	if (c->nc_addr.na_family != a->na_family)
		return 0;
	cb = netaddr_bytes(&c->nc_addr, &cbits);
	ab = netaddr_bytes(a, &abits);
	if (c->nc_prefix > cbits)
		return 0;
	return netaddr_prefix_equal(cb, ab, c->nc_prefix);
}

int
netaddr_cidr_contains(const struct netaddr_cidr *c, const struct netaddr *a)
{
	struct netaddr_cidr c4;
	struct netaddr v4;
	const uint8_t *b;

	if (netaddr_cidr_contains_plain(c, a))
		return 1;
	/* An IPv6 block written as ::ffff:a.b.c.d/n (n >= 96) is an IPv4 block. */
	c4 = *c;
	if (c->nc_addr.na_family == AF_INET6 && c->nc_prefix >= 96) {
		b = c->nc_addr.na_u.v6.s6_addr;
		if (netaddr_embedded_v4(&c->nc_addr, &v4) && memcmp(b,
		    "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12) == 0) {
			c4.nc_addr = v4;
			c4.nc_prefix = c->nc_prefix - 96;
		}
	}
	if (c4.nc_addr.na_family != AF_INET)
		return 0;
	if (a->na_family == AF_INET)
		return netaddr_cidr_contains_plain(&c4, a);
	if (netaddr_embedded_v4(a, &v4))
		return netaddr_cidr_contains_plain(&c4, &v4);
	return 0;
}

const char *
netaddr_fmt(const struct netaddr *a, char *buf, size_t len)
{
	if (len == 0)
		return buf;
	if ((a->na_family != AF_INET && a->na_family != AF_INET6) ||
	    inet_ntop(a->na_family, &a->na_u, buf, (socklen_t)len) == NULL)
		buf[0] = '\0';
	return buf;
}

int
netaddr_from_sockaddr(const struct sockaddr *sa, struct netaddr *out,
    uint16_t *port)
{
	const struct sockaddr_in *sin;
	const struct sockaddr_in6 *sin6;
	struct netaddr a;

	memset(&a, 0, sizeof(a));
	switch (sa->sa_family) {
	case AF_INET:
		sin = (const struct sockaddr_in *)(const void *)sa;
		a.na_family = AF_INET;
		a.na_u.v4 = sin->sin_addr;
		if (port != NULL)
			*port = ntohs(sin->sin_port);
		break;
	case AF_INET6:
		sin6 = (const struct sockaddr_in6 *)(const void *)sa;
		if (IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr)) {
			/* A dual-stack socket's IPv4 peer: keep it as IPv4. */
			netaddr_set_v4(&a, sin6->sin6_addr.s6_addr + 12);
		} else {
			a.na_family = AF_INET6;
			a.na_u.v6 = sin6->sin6_addr;
		}
		if (port != NULL)
			*port = ntohs(sin6->sin6_port);
		break;
	default:
		return -1;
	}
	*out = a;
	return 0;
}

int
netaddr_to_sockaddr(const struct netaddr *a, uint16_t port,
    struct sockaddr_storage *ss, socklen_t *sslen)
{
	struct sockaddr_in *sin;
	struct sockaddr_in6 *sin6;

	memset(ss, 0, sizeof(*ss));
	switch (a->na_family) {
	case AF_INET:
		sin = (struct sockaddr_in *)(void *)ss;
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		sin->sin_addr = a->na_u.v4;
		*sslen = sizeof(*sin);
		return 0;
	case AF_INET6:
		sin6 = (struct sockaddr_in6 *)(void *)ss;
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		sin6->sin6_addr = a->na_u.v6;
		*sslen = sizeof(*sin6);
		return 0;
	}
	return -1;
}

int
netaddr_equal(const struct netaddr *a, const struct netaddr *b)
{
	if (a->na_family != b->na_family)
		return 0;
	if (a->na_family == AF_INET)
		return a->na_u.v4.s_addr == b->na_u.v4.s_addr;
	if (a->na_family == AF_INET6)
		return memcmp(&a->na_u.v6, &b->na_u.v6, sizeof(a->na_u.v6)) == 0;
	return 0;
}

struct netaddr_range {
	const char		*nr_cidr;
	enum netaddr_class	 nr_class;
	const char		*nr_why;
};

/*
 * Most specific first: the first containing entry decides, so a floor address
 * inside a private block (100.100.100.200 in 100.64/10) must come before it.
 */
static const struct netaddr_range netaddr_ranges_v4[] = {
	{ "0.0.0.0/32",		NETADDR_FLOOR,	 "unspecified" },
	{ "0.0.0.0/8",		NETADDR_FLOOR,	 "this-network" },
	{ "127.0.0.0/8",	NETADDR_FLOOR,	 "loopback" },
	{ "169.254.169.254/32",	NETADDR_FLOOR,	 "metadata" },	/* AWS, GCP, Azure, OCI */
	{ "169.254.170.2/32",	NETADDR_FLOOR,	 "metadata" },	/* AWS ECS task */
	{ "169.254.0.0/16",	NETADDR_FLOOR,	 "link-local" },
	{ "100.100.100.200/32",	NETADDR_FLOOR,	 "metadata" },	/* Alibaba */
	{ "168.63.129.16/32",	NETADDR_FLOOR,	 "metadata" },	/* Azure wire server */
	{ "224.0.0.0/4",	NETADDR_FLOOR,	 "multicast" },
	{ "255.255.255.255/32",	NETADDR_FLOOR,	 "broadcast" },
	{ "240.0.0.0/4",	NETADDR_FLOOR,	 "reserved" },
	{ "10.0.0.0/8",		NETADDR_PRIVATE, "rfc1918" },
	{ "172.16.0.0/12",	NETADDR_PRIVATE, "rfc1918" },
	{ "192.168.0.0/16",	NETADDR_PRIVATE, "rfc1918" },
	{ "100.64.0.0/10",	NETADDR_PRIVATE, "cgnat" },
	{ "192.0.0.0/24",	NETADDR_PRIVATE, "ietf-protocol" },
	{ "198.18.0.0/15",	NETADDR_PRIVATE, "benchmark" },
	{ "192.0.2.0/24",	NETADDR_PRIVATE, "documentation" },
	{ "198.51.100.0/24",	NETADDR_PRIVATE, "documentation" },
	{ "203.0.113.0/24",	NETADDR_PRIVATE, "documentation" },
};

static const struct netaddr_range netaddr_ranges_v6[] = {
	{ "::/128",		NETADDR_FLOOR,	 "unspecified" },
	{ "::1/128",		NETADDR_FLOOR,	 "loopback" },
	{ "fe80::/10",		NETADDR_FLOOR,	 "link-local" },
	{ "ff00::/8",		NETADDR_FLOOR,	 "multicast" },
	{ "fd00:ec2::254/128",	NETADDR_FLOOR,	 "metadata" },	/* AWS IMDS over IPv6 */
	{ "fc00::/7",		NETADDR_PRIVATE, "unique-local" },
	{ "fec0::/10",		NETADDR_PRIVATE, "site-local" },  /* deprecated, RFC 3879 */
	{ "2001:db8::/32",	NETADDR_PRIVATE, "documentation" },
	{ "100::/64",		NETADDR_PRIVATE, "discard" },
};

#define NETADDR_NV4	(sizeof(netaddr_ranges_v4) / sizeof(netaddr_ranges_v4[0]))
#define NETADDR_NV6	(sizeof(netaddr_ranges_v6) / sizeof(netaddr_ranges_v6[0]))

/* The tables above, parsed once (pthread_once) and never changed afterwards. */
static pthread_once_t		netaddr_once = PTHREAD_ONCE_INIT;
static struct netaddr_cidr	netaddr_cidrs_v4[NETADDR_NV4];
static struct netaddr_cidr	netaddr_cidrs_v6[NETADDR_NV6];
static int			netaddr_tables_ok;

static void
netaddr_tables_init(void)
{
	size_t i;

	for (i = 0; i < NETADDR_NV4; i++)
		if (netaddr_cidr_parse(netaddr_ranges_v4[i].nr_cidr,
		    &netaddr_cidrs_v4[i]) == -1)
			return;
	for (i = 0; i < NETADDR_NV6; i++)
		if (netaddr_cidr_parse(netaddr_ranges_v6[i].nr_cidr,
		    &netaddr_cidrs_v6[i]) == -1)
			return;
	netaddr_tables_ok = 1;
}

static enum netaddr_class
netaddr_classify_table(const struct netaddr *a, const struct netaddr_range *t,
    const struct netaddr_cidr *c, size_t n, const char **why)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (netaddr_cidr_contains_plain(&c[i], a)) {
			*why = t[i].nr_why;
			return t[i].nr_class;
		}
	}
	*why = "public";
	return NETADDR_PUBLIC;
}

int
netaddr_cidr_floor(const struct netaddr_cidr *c, const char **why)
{
	const struct netaddr_range *t;
	const struct netaddr_cidr *r;
	size_t i, n;

	if (pthread_once(&netaddr_once, netaddr_tables_init) != 0 ||
	    !netaddr_tables_ok) {
		*why = "internal-error";
		return 1;
	}
	t = c->nc_addr.na_family == AF_INET ? netaddr_ranges_v4 : netaddr_ranges_v6;
	r = c->nc_addr.na_family == AF_INET ? netaddr_cidrs_v4 : netaddr_cidrs_v6;
	n = c->nc_addr.na_family == AF_INET ? NETADDR_NV4 : NETADDR_NV6;
	/*
	 * Two CIDR blocks overlap exactly when one holds the other's first address:
	 * a range holding c's first (named as the address would be), then a range
	 * inside c.
	 */
	for (i = 0; i < n; i++)
		if (t[i].nr_class == NETADDR_FLOOR &&
		    netaddr_cidr_contains_plain(&r[i], &c->nc_addr)) {
			*why = t[i].nr_why;
			return 1;
		}
	for (i = 0; i < n; i++)
		if (t[i].nr_class == NETADDR_FLOOR &&
		    netaddr_cidr_contains_plain(c, &r[i].nc_addr)) {
			*why = t[i].nr_why;
			return 1;
		}
	return 0;
}

static enum netaddr_class
netaddr_classify_v4(const struct netaddr *a, const char **why)
{
	return netaddr_classify_table(a, netaddr_ranges_v4, netaddr_cidrs_v4,
	    NETADDR_NV4, why);
}

enum netaddr_class
netaddr_classify(const struct netaddr *a, const char **why)
{
	enum netaddr_class cl, cl48;
	struct netaddr v4;
	const uint8_t *b;
	const char *w = "public", *w48;
	uint8_t x[4];

	/* The tables are constant and tested; should they not parse, fail closed. */
	if (pthread_once(&netaddr_once, netaddr_tables_init) != 0 ||
	    !netaddr_tables_ok) {
		cl = NETADDR_FLOOR;
		w = "internal-error";
	} else if (a->na_family == AF_INET)
		cl = netaddr_classify_v4(a, &w);
	else if (a->na_family != AF_INET6) {
		cl = NETADDR_FLOOR;
		w = "unknown-family";
	} else if (netaddr_embedded_v4(a, &v4)) {
		cl = netaddr_classify_v4(&v4, &w);
		/*
		 * 64:ff9b:1::/48 with the RFC 6052 /48 layout puts the IPv4 address in
		 * bits 48..63 and 72..87; take whichever reading is stricter.
		 */
		b = a->na_u.v6.s6_addr;
		if (b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b &&
		    b[4] == 0x00 && b[5] == 0x01) {
			x[0] = b[6];
			x[1] = b[7];
			x[2] = b[9];
			x[3] = b[10];
			netaddr_set_v4(&v4, x);
			if ((cl48 = netaddr_classify_v4(&v4, &w48)) > cl) {
				cl = cl48;
				w = w48;
			}
		}
	} else
		cl = netaddr_classify_table(a, netaddr_ranges_v6, netaddr_cidrs_v6,
		    NETADDR_NV6, &w);
	if (why != NULL)
		*why = w;
	return cl;
}

int
netaddr_is_loopback(const struct netaddr *a)
{
	const char *why;

	return netaddr_classify(a, &why) == NETADDR_FLOOR &&
	    strcmp(why, "loopback") == 0;
}

int
netaddr_endpoint_parse(const char *s, struct netaddr *a, uint16_t *port)
{
	char host[NETADDR_STRLEN + 1];
	const char *colon, *p;
	unsigned long v = 0;
	size_t hl;

	if ((colon = strrchr(s, ':')) == NULL)
		return -1;
	hl = (size_t)(colon - s);
	if (hl >= 2 && s[0] == '[' && s[hl - 1] == ']') {
		s++;
		hl -= 2;
	} else if (memchr(s, ':', hl) != NULL)
		return -1;		/* an IPv6 address needs its brackets */
	if (hl == 0 || hl >= sizeof(host))
		return -1;
	memcpy(host, s, hl);
	host[hl] = '\0';
	/* Decimal digits only: no sign, no space, no "0x" that strtoul would take. */
	for (p = colon + 1; *p >= '0' && *p <= '9' && v <= 65535; p++)
		v = v * 10 + (unsigned long)(*p - '0');
	if (p == colon + 1 || *p != '\0' || v > 65535 ||
	    netaddr_parse(host, a) == -1)
		return -1;
	*port = (uint16_t)v;
	return 0;
}
