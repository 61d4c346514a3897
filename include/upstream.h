/*
 * include/upstream.h: an upstream (corporate) HTTP proxy that airlockd's connections
 * go through, as airlock.json's "upstream_proxy" and a policy's "upstream_proxy" name
 * it (docs/CONFIGURATION.md, policies/SCHEMA.md): the URL "http://HOST:PORT" and the
 * vault secret whose value ("user:password") goes as Proxy-Authorization: Basic on
 * the CONNECT.  The one parser of both, so the two files refuse the same things.
 * Pure code, no I/O.  Implemented in lib/upstream.c.
 */
#ifndef AIRLOCK_UPSTREAM_H
#define AIRLOCK_UPSTREAM_H

#include <stddef.h>
#include <stdint.h>

#include "hostname.h"
#include "netaddr.h"

#define UPSTREAM_URL_MAX	300	/* bytes of the URL as written */
#define UPSTREAM_AUTH_MAX	64	/* a vault secret name (VAULT_NAME_MAX) */

struct upstream_proxy {
	/* the host as written, normalised: a DNS name, or the IPv4 literal */
	char		 up_host[HOSTNAME_MAX + 1];
	int		 up_is_addr;	/* up_host is an IPv4 literal: up_addr */
	struct netaddr	 up_addr;
	uint16_t	 up_port;
	char		 up_auth[UPSTREAM_AUTH_MAX + 1];	/* "": no credentials */
};

/*
 * Parses url[len] ("http://HOST:PORT", one trailing '/' allowed) into *out (up_auth
 * left ""): the http scheme only (CONNECT over plain TCP to the proxy), a port
 * 1..65535 (required, decimal, no leading zero), HOST a strict IPv4 literal outside
 * the floor (netaddr_classify(): loopback, link-local, metadata, ... are refused; a
 * private address is allowed: the operator named it) or a host name
 * (hostname_normalize(), no wildcard).  Refused too: userinfo ("user:pass@": the
 * credentials are a vault secret's), IPv6 (upstream connections are IPv4), a path,
 * a query, control bytes.  Returns 0, or -1 with a static reason in *why that never
 * quotes the URL (it might hold a password).
 */
int	upstream_url_parse(const char *url, size_t len, struct upstream_proxy *out,
	    const char **why);

/*
 * 1 if s (len bytes) may name the vault secret of "auth": 1..64 of A-Z a-z 0-9 _ . -,
 * starting with a letter or a digit (vault_name_is_valid()'s rule, which the parts
 * below the vault cannot call).
 */
int	upstream_auth_is_valid(const char *s, size_t len);

/* 1 if a and b are the same proxy (host and port; the credentials aside). */
int	upstream_same(const struct upstream_proxy *a, const struct upstream_proxy *b);

#endif
