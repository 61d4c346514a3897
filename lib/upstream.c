/*
 * lib/upstream.c: see include/upstream.h.
 */
#include <string.h>

#include "hostname.h"
#include "netaddr.h"
#include "upstream.h"

#define UPSTREAM_SCHEME	"http://"

int
upstream_url_parse(const char *url, size_t len, struct upstream_proxy *out,
    const char **why)
{
	struct upstream_proxy up;
	const char *host, *colon, *end, *cls;
	size_t i, hl;
	unsigned long port = 0;
	char h[HOSTNAME_MAX + 1];
	int rc;

	memset(&up, 0, sizeof(up));
	*why = NULL;
	if (len == 0) {
		*why = "must not be empty (\"http://HOST:PORT\")";
		return -1;
	}
	if (len > UPSTREAM_URL_MAX) {
		*why = "longer than 300 bytes";
		return -1;
	}
	for (i = 0; i < len; i++)
		if ((unsigned char)url[i] <= 0x20 || (unsigned char)url[i] >= 0x7f) {
			*why = "must not contain spaces, control or non-ASCII bytes";
			return -1;
		}
	if (len >= 8 && strncmp(url, "https://", 8) == 0) {
		*why = "https:// is not supported: airlock speaks CONNECT over plain "
		    "TCP to the proxy (\"http://HOST:PORT\"), the tunnel carries "
		    "the origin's own TLS";
		return -1;
	}
	if (len < sizeof(UPSTREAM_SCHEME) - 1 ||
	    strncmp(url, UPSTREAM_SCHEME, sizeof(UPSTREAM_SCHEME) - 1) != 0) {
		*why = "must be \"http://HOST:PORT\"";
		return -1;
	}
	host = url + sizeof(UPSTREAM_SCHEME) - 1;
	end = url + len;
	if (end > host && end[-1] == '/')
		end--;			/* "http://proxy:3128/" */
	if (memchr(host, '@', (size_t)(end - host)) != NULL) {
		*why = "credentials do not go in the URL: name a vault secret in "
		    "\"auth\"";
		return -1;
	}
	if (memchr(host, '/', (size_t)(end - host)) != NULL ||
	    memchr(host, '?', (size_t)(end - host)) != NULL ||
	    memchr(host, '#', (size_t)(end - host)) != NULL) {
		*why = "must be \"http://HOST:PORT\", without a path or query";
		return -1;
	}
	if (host < end && host[0] == '[') {
		*why = "an IPv6 proxy is not supported (upstream connections are "
		    "IPv4)";
		return -1;
	}
	for (colon = end; colon > host && colon[-1] != ':'; colon--)
		;
	if (colon == host) {
		*why = "the port is missing (\"http://HOST:PORT\")";
		return -1;
	}
	hl = (size_t)(colon - 1 - host);
	if (colon == end || end - colon > 5 || colon[0] == '0') {
		*why = "the port must be a number 1..65535";
		return -1;
	}
	for (i = 0; i < (size_t)(end - colon); i++) {
		if (colon[i] < '0' || colon[i] > '9') {
			*why = "the port must be a number 1..65535";
			return -1;
		}
		port = port * 10 + (unsigned long)(colon[i] - '0');
	}
	if (port < 1 || port > 65535) {
		*why = "the port must be a number 1..65535";
		return -1;
	}
	if (hl == 0 || hl > HOSTNAME_MAX) {
		*why = "the host is missing or too long";
		return -1;
	}
	if (memchr(host, ':', hl) != NULL) {
		*why = "an IPv6 proxy is not supported (upstream connections are "
		    "IPv4)";
		return -1;
	}
	memcpy(h, host, hl);
	h[hl] = '\0';
	if (netaddr_parse(h, &up.up_addr) == 0) {
		if (netaddr_classify(&up.up_addr, &cls) == NETADDR_FLOOR) {
			*why = strcmp(cls, "loopback") == 0 ?
			    "a loopback proxy is refused: airlockd's own "
			    "connections never reach loopback (the nftables floor)" :
			    "the address is in the never-routable floor "
			    "(link-local, metadata, multicast, ...)";
			return -1;
		}
		up.up_is_addr = 1;
		memcpy(up.up_host, h, hl + 1);
	} else if ((rc = hostname_normalize(h, hl, up.up_host)) != HOSTNAME_OK) {
		*why = rc == HOSTNAME_IP_LITERAL ? "the host looks like an IP address "
		    "but is not a strict IPv4 literal" : "the host is not a valid "
		    "host name";
		return -1;
	}
	up.up_port = (uint16_t)port;
	*out = up;
	return 0;
}

int
upstream_auth_is_valid(const char *s, size_t len)
{
	size_t i;
	char c;

	if (len == 0 || len > UPSTREAM_AUTH_MAX)
		return 0;
	for (i = 0; i < len; i++) {
		c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') ||
		    (i > 0 && (c == '_' || c == '.' || c == '-'))))
			return 0;
	}
	return 1;
}

int
upstream_same(const struct upstream_proxy *a, const struct upstream_proxy *b)
{
	return a->up_port == b->up_port && strcmp(a->up_host, b->up_host) == 0;
}
