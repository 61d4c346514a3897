/*
 * include/netaddr.h: strict IP literals, CIDR blocks, and the address classifier that
 * decides which destinations no policy can open (the floor) and which a rule must name
 * explicitly (private ranges).  Pure code, no I/O.  Implemented in lib/netaddr.c.
 */
#ifndef AIRLOCK_NETADDR_H
#define AIRLOCK_NETADDR_H

#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

/* One address; IPv4 is kept as itself (family AF_INET), never as ::ffff:a.b.c.d. */
struct netaddr {
	int		na_family;		/* AF_INET or AF_INET6 */
	union {
		struct in_addr	v4;
		struct in6_addr	v6;
	}		na_u;
};

struct netaddr_cidr {
	struct netaddr	nc_addr;		/* host bits cleared */
	unsigned int	nc_prefix;		/* 0..32 or 0..128 */
};

#define NETADDR_STRLEN	INET6_ADDRSTRLEN

/*
 * Parses an IP literal: IPv4 only as four decimal octets without leading zeros
 * ("1.2.3.4"; not "1.2.3", "0x7f.1", "017.0.0.1", "2130706433"); IPv6 in RFC 4291 text
 * forms (with an embedded dotted quad allowed where RFC 4291 allows it), no zone id,
 * no brackets.  Returns 0 and fills *out, or -1 (nothing written).
 */
int	netaddr_parse(const char *s, struct netaddr *out);

/* "a.b.c.d/n" or "v6/n" with the same strict literals; host bits must be zero. */
int	netaddr_cidr_parse(const char *s, struct netaddr_cidr *out);

/* 1 if a is inside c (an IPv4-embedding IPv6 address is matched as its IPv4 address). */
int	netaddr_cidr_contains(const struct netaddr_cidr *c, const struct netaddr *a);
/*
 * 1 if any address of the block c is a floor address (never routable: loopback,
 * link-local, metadata, multicast, ...), with *why the range's name; else 0.
 */
int	netaddr_cidr_floor(const struct netaddr_cidr *c, const char **why);

/* Writes the canonical text form into buf (NETADDR_STRLEN bytes). Returns buf. */
const char *netaddr_fmt(const struct netaddr *a, char *buf, size_t len);

/*
 * Fills *out (and *port, host order, if not NULL) from a sockaddr_in or sockaddr_in6.
 * An IPv4-mapped sin6 (a dual-stack socket's IPv4 peer) becomes AF_INET.  Returns 0,
 * or -1 for another family.
 */
int	netaddr_from_sockaddr(const struct sockaddr *sa, struct netaddr *out,
	    uint16_t *port);
/* Fills *ss and *sslen for connect()/bind(); port in host order.  Returns 0 or -1. */
int	netaddr_to_sockaddr(const struct netaddr *a, uint16_t port,
	    struct sockaddr_storage *ss, socklen_t *sslen);
int	netaddr_equal(const struct netaddr *a, const struct netaddr *b);
/*
 * "ADDR:PORT" or "[V6]:PORT" (ADDR a strict literal as netaddr_parse() takes, PORT
 * decimal 0..65535) into *a and *port: a listening address of the configuration or
 * the command line.  Returns 0, or -1 (nothing written).
 */
int	netaddr_endpoint_parse(const char *s, struct netaddr *a, uint16_t *port);

/*
 * If a is an IPv6 address that embeds an IPv4 one (IPv4-mapped ::ffff:0:0/96,
 * IPv4-compatible ::/96 other than :: and ::1, NAT64 64:ff9b::/96 and 64:ff9b:1::/48,
 * 6to4 2002::/16, Teredo 2001::/32 (the client address, bits inverted)), stores it in
 * *v4 and returns 1; otherwise 0.  Also IPv4-translated ::ffff:0:0:0/96 (RFC 2765).
 * For 64:ff9b:1::/48 the last 32 bits are returned (the /96 layout);
 * netaddr_classify() additionally checks the RFC 6052 /48 layout and keeps the
 * stricter answer.
 */
int	netaddr_embedded_v4(const struct netaddr *a, struct netaddr *v4);

enum netaddr_class {
	NETADDR_PUBLIC = 0,	/* may be reached when a rule names the host */
	NETADDR_PRIVATE,	/* only when a rule names the range (cidr) explicitly */
	NETADDR_FLOOR,		/* never, whatever any policy says */
};

/*
 * Classifies a (after unwrapping an embedded IPv4 address).  *why, if not NULL, gets a
 * static short name of the range that decided ("loopback", "metadata", "rfc1918", ...).
 * The floor: unspecified, loopback, 169.254/16, fe80::/10, multicast, broadcast,
 * 0/8, the cloud metadata addresses, reserved 240/4.  Private: 10/8, 172.16/12,
 * 192.168/16, 100.64/10, fc00::/7, 192.0.0/24, 198.18/15, and the documentation nets.
 * The host's own addresses are not known here; the caller adds them.
 *
 * Floor ("why"): 0.0.0.0 "unspecified", 0/8 "this-network", 127/8 "loopback",
 * 169.254.169.254, 169.254.170.2, 100.100.100.200, 168.63.129.16 and fd00:ec2::254
 * "metadata", the rest of 169.254/16 and fe80::/10 "link-local", 224/4 and ff00::/8
 * "multicast", 255.255.255.255 "broadcast", 240/4 "reserved", :: "unspecified",
 * ::1 "loopback".  Private: 10/8, 172.16/12, 192.168/16 "rfc1918", 100.64/10 "cgnat",
 * 192.0.0/24 "ietf-protocol", 198.18/15 "benchmark", 192.0.2/24, 198.51.100/24,
 * 203.0.113/24 and 2001:db8::/32 "documentation", fc00::/7 "unique-local",
 * fec0::/10 "site-local", 100::/64 "discard".  Anything else: NETADDR_PUBLIC, "public".
 * An IPv4-embedding IPv6 address gets its IPv4 address's class and name.
 */
enum netaddr_class netaddr_classify(const struct netaddr *a, const char **why);
/* 1 if a is a loopback address (127.0.0.0/8, ::1, or one embedding 127/8), else 0. */
int	netaddr_is_loopback(const struct netaddr *a);

#endif
