/*
 * tests/fuzz/fuzz_ipaddr.c: lib/netaddr.c over arbitrary text.
 *
 * Invariants: a parsed address formats and reparses to the same address;
 * acceptance agrees exactly with glibc's inet_pton(), which is strict for IPv4
 * (refuses "127.1", octal, hex) and for the dotted quad inside IPv6, and the values
 * agree too; classify and embedded_v4 never crash and unwrapping never makes an
 * address less strict; a parsed CIDR formats and reparses, contains its own network
 * address, and has zero host bits.
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netaddr.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
check_addr(const char *s, const struct netaddr *a)
{
	char buf[NETADDR_STRLEN], buf2[NETADDR_STRLEN];
	struct netaddr b, v4;
	struct in6_addr in6;
	struct in_addr in4;
	const char *why = NULL;
	enum netaddr_class cl;

	netaddr_fmt(a, buf, sizeof(buf));
	if (buf[0] == '\0' || netaddr_parse(buf, &b) != 0 || !netaddr_equal(a, &b))
		abort();
	netaddr_fmt(&b, buf2, sizeof(buf2));
	if (strcmp(buf, buf2) != 0)
		abort();
	if (a->na_family == AF_INET) {
		if (inet_pton(AF_INET, s, &in4) != 1 ||
		    in4.s_addr != a->na_u.v4.s_addr || strcmp(s, buf) != 0)
			abort();
	} else if (a->na_family == AF_INET6) {
		if (inet_pton(AF_INET6, s, &in6) != 1 ||
		    memcmp(&in6, &a->na_u.v6, sizeof(in6)) != 0)
			abort();
	} else
		abort();
	cl = netaddr_classify(a, &why);
	if (why == NULL || (cl != NETADDR_PUBLIC && cl != NETADDR_PRIVATE &&
	    cl != NETADDR_FLOOR) || (cl == NETADDR_PUBLIC) !=
	    (strcmp(why, "public") == 0))
		abort();
	if (netaddr_embedded_v4(a, &v4)) {
		if (a->na_family != AF_INET6 || v4.na_family != AF_INET)
			abort();
		/* Unwrapping never makes an address less strict. */
		if (netaddr_classify(&v4, NULL) > cl)
			abort();
	}
}

static void
check_cidr(const struct netaddr_cidr *c)
{
	char buf[NETADDR_STRLEN], text[NETADDR_STRLEN + 8];
	struct netaddr_cidr c2;
	const uint8_t *p;
	unsigned int bits, i;

	bits = c->nc_addr.na_family == AF_INET ? 32 : 128;
	if (c->nc_prefix > bits)
		abort();
	p = c->nc_addr.na_family == AF_INET ?
	    (const uint8_t *)&c->nc_addr.na_u.v4 : c->nc_addr.na_u.v6.s6_addr;
	for (i = c->nc_prefix; i < bits; i++)
		if (p[i / 8] & (0x80 >> (i % 8)))
			abort();
	snprintf(text, sizeof(text), "%s/%u",
	    netaddr_fmt(&c->nc_addr, buf, sizeof(buf)), c->nc_prefix);
	if (netaddr_cidr_parse(text, &c2) != 0 || c2.nc_prefix != c->nc_prefix ||
	    !netaddr_equal(&c2.nc_addr, &c->nc_addr))
		abort();
	if (!netaddr_cidr_contains(c, &c->nc_addr))
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct netaddr_cidr c;
	struct netaddr a;
	struct in6_addr in6;
	struct in_addr in4;
	char *s;
	int rc;

	if (size > 256)
		return 0;
	if ((s = malloc(size + 1)) == NULL)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';

	rc = netaddr_parse(s, &a);
	if (rc == 0)
		check_addr(s, &a);
	/* glibc's inet_pton(AF_INET) is as strict as ours: they must agree. */
	if (strchr(s, ':') == NULL && (inet_pton(AF_INET, s, &in4) == 1) !=
	    (rc == 0))
		abort();
	/*
	 * And glibc's inet_pton(AF_INET6) parses the same IPv6 text forms (it checks
	 * an embedded quad with its strict IPv4 parser; no zones, no brackets).
	 */
	if (strchr(s, ':') != NULL && (inet_pton(AF_INET6, s, &in6) == 1) !=
	    (rc == 0))
		abort();
	if (netaddr_cidr_parse(s, &c) == 0) {
		check_cidr(&c);
		if (rc == 0)
			abort();	/* an address is not a block */
	}
	if (size >= 2 && rc == -1) {
		/* Two halves: the first as a block, the second as an address. */
		char *mid = s + size / 2, save = *mid;

		*mid = '\0';
		if (netaddr_cidr_parse(s, &c) == 0) {
			*mid = save;
			if (netaddr_parse(mid, &a) == 0)
				(void)netaddr_cidr_contains(&c, &a);
		}
	}
	free(s);
	return 0;
}
