/*
 * lib/config.c: see include/config.h.
 *
 * jansson stays inside this file.  jansson keeps no source positions on values, so
 * for errors found after parsing (unknown key, wrong type, bad value) the position of
 * the offending key is found again by config_pos(), a small scanner over the text
 * that jansson has already accepted.
 */
#include <sys/un.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "config.h"
#include "file.h"
#include "jsonpath.h"
#include "strtab.h"
#include "upstream.h"

#define CONFIG_FILE_MAX		(1024 * 1024)
#define CONFIG_USER_MAX		32
#define CONFIG_SUN_PATH_MAX	(sizeof(((struct sockaddr_un *)0)->sun_path) - 1)

static const struct strtab config_fsyncs[] = {
	{ "never", AUDIT_FSYNC_NEVER },
	{ "deny", AUDIT_FSYNC_DENY },
	{ "always", AUDIT_FSYNC_ALWAYS },
	{ NULL, 0 }
};

/*
 * The keys of the file: config_apply() and config_audit() find a key's case here
 * (a key in no table is an unknown key), and config_key_name() lists the same
 * tables, so no key is accepted that the list does not name.
 */
enum config_key {
	CK_STATE_DIR,
	CK_CONTROL_SOCKET,
	CK_PROXY_PORT,
	CK_DNS_PORT,
	CK_WORKERS,
	CK_ADDRESS_POOL,
	CK_MAPPED_POOL,
	CK_UPSTREAM_CA_FILE,
	CK_AUDIT,
	CK_LIBVIRT_URI,
	CK_USER,
	CK_METRICS_LISTEN,
	CK_UPSTREAM_PROXY,
	CK_POOL_IDLE_MS,
	CK_POOL_PER_HOST,
	CK_POOL_PER_SANDBOX,
	CK_POOL_MAX,
};

static const struct strtab config_keys[] = {
	{ "state_dir", CK_STATE_DIR },
	{ "control_socket", CK_CONTROL_SOCKET },
	{ "proxy_port", CK_PROXY_PORT },
	{ "dns_port", CK_DNS_PORT },
	{ "workers", CK_WORKERS },
	{ "address_pool", CK_ADDRESS_POOL },
	{ "mapped_pool", CK_MAPPED_POOL },
	{ "upstream_ca_file", CK_UPSTREAM_CA_FILE },
	{ "audit", CK_AUDIT },
	{ "libvirt_uri", CK_LIBVIRT_URI },
	{ "user", CK_USER },
	{ "metrics_listen", CK_METRICS_LISTEN },
	{ "upstream_proxy", CK_UPSTREAM_PROXY },
	{ "upstream_pool_idle_ms", CK_POOL_IDLE_MS },
	{ "upstream_pool_per_host", CK_POOL_PER_HOST },
	{ "upstream_pool_per_sandbox", CK_POOL_PER_SANDBOX },
	{ "upstream_pool_max", CK_POOL_MAX },
	{ NULL, 0 }
};

/* The keys of the "audit" object. */
enum config_audit_key {
	CK_AUDIT_PATH,
	CK_AUDIT_FSYNC,
	CK_AUDIT_KEY_FILE,
	CK_AUDIT_LOG_QUERY,
	CK_AUDIT_SIGN_KEY,
	CK_AUDIT_SIGN_EVERY,
	CK_AUDIT_MAX_BYTES,
	CK_AUDIT_KEEP,
	CK_AUDIT_SYSLOG,
};

static const struct strtab config_audit_keys[] = {
	{ "path", CK_AUDIT_PATH },
	{ "fsync", CK_AUDIT_FSYNC },
	{ "key_file", CK_AUDIT_KEY_FILE },
	{ "log_query", CK_AUDIT_LOG_QUERY },
	{ "sign_key", CK_AUDIT_SIGN_KEY },
	{ "sign_every", CK_AUDIT_SIGN_EVERY },
	{ "max_bytes", CK_AUDIT_MAX_BYTES },
	{ "keep", CK_AUDIT_KEEP },
	{ "syslog", CK_AUDIT_SYSLOG },
	{ NULL, 0 }
};

struct config_ctx {
	const char	*cc_file;	/* the path as given, for messages */
	const char	*cc_text;	/* the file's bytes, for config_pos() */
	size_t		 cc_len;
	char		*cc_err;
	size_t		 cc_errlen;
	int		 cc_set_audit_path;
	int		 cc_set_control_socket;
};

/*
 * Finds the line and column (1-based, bytes) of the key k2 of the object at top-level
 * key k1 (or of the top-level key k1 itself if k2 is NULL) in well-formed JSON text.
 * Keys written with escapes are not found.  Returns 0, or -1 if not found.
 */
static int
config_pos(const char *t, size_t len, const char *k1, const char *k2, int *line,
    int *col)
{
	const char *key1 = NULL;
	size_t i, start, key1len = 0;
	int depth = 0, expect_key = 0, ln = 1, cl = 1, sline, scol;
	char stack[64];

	for (i = 0; i < len; i++, cl++) {
		switch (t[i]) {
		case '\n':
			ln++;
			cl = 0;
			break;
		case '{':
		case '[':
			if (depth < (int)sizeof(stack))
				stack[depth] = t[i];
			depth++;
			expect_key = t[i] == '{';
			break;
		case '}':
		case ']':
			depth--;
			expect_key = 0;
			break;
		case ',':
			expect_key = depth > 0 && depth <= (int)sizeof(stack) &&
			    stack[depth - 1] == '{';
			break;
		case ':':
			expect_key = 0;
			break;
		case '"':
			start = ++i;
			sline = ln;
			scol = cl;
			while (i < len && t[i] != '"') {
				if (t[i] == '\\')
					i++;
				i++;
			}
			if (i >= len)
				return -1;
			cl += (int)(i - start) + 1;
			if (!expect_key)
				break;
			if (depth == 1) {
				key1 = t + start;
				key1len = i - start;
				if (k2 == NULL && strlen(k1) == key1len &&
				    memcmp(key1, k1, key1len) == 0) {
					*line = sline;
					*col = scol;
					return 0;
				}
			} else if (depth == 2 && k2 != NULL && key1 != NULL &&
			    strlen(k1) == key1len && memcmp(key1, k1, key1len) == 0 &&
			    strlen(k2) == i - start && memcmp(t + start, k2,
			    i - start) == 0) {
				*line = sline;
				*col = scol;
				return 0;
			}
			break;
		}
	}
	return -1;
}

/* A printable, bounded copy of a key from the file, for one-line messages. */
static void
config_key_print(const char *key, char *buf, size_t len)
{
	size_t i, o = 0;

	for (i = 0; key[i] != '\0' && o + 4 < len && i < 64; i++)
		buf[o++] = ((unsigned char)key[i] < 0x20 ||
		    (unsigned char)key[i] >= 0x7f) ? '?' : key[i];
	if (key[i] != '\0' && o + 4 < len) {
		memcpy(buf + o, "...", 3);
		o += 3;
	}
	buf[o] = '\0';
}

/*
 * A document jansson refused, in the one format of configuration and policy errors
 * (policies/policy_load.c says it the same way): "FILE: empty ...", "FILE:LINE:COL:
 * $.path.key: duplicate key", or "FILE:LINE:COL: invalid JSON: jansson's text".
 */
static void
config_json_error(const json_error_t *e, const char *text, size_t len,
    const char *path, char *err, size_t errlen)
{
	char jp[256];
	size_t i;

	for (i = 0; i < len && strchr(" \t\r\n", text[i]) != NULL; i++)
		;
	if (i == len) {
		snprintf(err, errlen, "%s: empty: a JSON object is expected", path);
		return;
	}
	if (json_error_code(e) == json_error_duplicate_key && e->position >= 0)
		snprintf(err, errlen, "%s:%d:%d: %s: duplicate key", path, e->line,
		    e->column, json_path_at(text, len, (size_t)e->position, jp,
		    sizeof(jp)));
	else
		snprintf(err, errlen, "%s:%d:%d: invalid JSON: %s", path, e->line,
		    e->column > 0 ? e->column : 1, e->text);
}

/* Writes "FILE:LINE:COL: $.k1[.k2]: reason" into the caller's err.  Returns -1. */
static int __attribute__((format(printf, 4, 5)))
config_error(struct config_ctx *cc, const char *k1, const char *k2,
    const char *fmt, ...)
{
	char reason[256], key1[80], key2[80];
	va_list ap;
	int line, col;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	config_key_print(k1, key1, sizeof(key1));
	config_key_print(k2 != NULL ? k2 : "", key2, sizeof(key2));
	if (cc->cc_text != NULL && config_pos(cc->cc_text, cc->cc_len, k1, k2,
	    &line, &col) == 0)
		snprintf(cc->cc_err, cc->cc_errlen, "%s:%d:%d: $.%s%s%s: %s",
		    cc->cc_file, line, col, key1, k2 ? "." : "", key2, reason);
	else
		snprintf(cc->cc_err, cc->cc_errlen, "%s: $.%s%s%s: %s", cc->cc_file,
		    key1, k2 ? "." : "", key2, reason);
	return -1;
}

void
config_defaults(struct airlock_config *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->state_dir, sizeof(c->state_dir), "/var/lib/airlock");
	snprintf(c->control_socket, sizeof(c->control_socket),
	    "/run/airlock/control.sock");
	c->proxy_port = 15001;
	c->dns_port = 15053;
	c->workers = 0;
	if (netaddr_cidr_parse("10.233.0.0/16", &c->address_pool) == -1 ||
	    netaddr_cidr_parse("198.18.0.0/15", &c->mapped_pool) == -1)
		abort();	/* constant text: cannot happen */
	c->upstream_ca_file[0] = '\0';
	snprintf(c->audit_path, sizeof(c->audit_path),
	    "/var/log/airlock/audit.jsonl");
	c->audit_fsync = AUDIT_FSYNC_DENY;
	c->audit_log_query = 0;
	c->audit_sign_every = 1000;
	c->audit_max_bytes = 0;
	c->audit_keep = 5;
	c->syslog_queue = CONFIG_SYSLOG_QUEUE_DEFAULT;
	c->syslog_facility = 16;
	snprintf(c->syslog_app, sizeof(c->syslog_app), "airlock");
	snprintf(c->libvirt_uri, sizeof(c->libvirt_uri), "qemu:///system");
	snprintf(c->user, sizeof(c->user), "airlock");
	c->pool_idle_ms = 30000;
	c->pool_per_host = 4;
	c->pool_per_sandbox = 32;
	c->pool_max = 128;
}

/* An absolute path that fits in dst[dstlen] (and in maxlen bytes). */
static int
config_path(struct config_ctx *cc, const char *k1, const char *k2,
    const json_t *v, char *dst, size_t dstlen, size_t maxlen)
{
	const char *s;
	size_t len;

	if (!json_is_string(v))
		return config_error(cc, k1, k2, "must be a string (a path)");
	s = json_string_value(v);
	len = json_string_length(v);
	if (len != strlen(s))
		return config_error(cc, k1, k2, "must not contain NUL");
	if (len == 0)
		return config_error(cc, k1, k2, "must not be empty");
	if (s[0] != '/')
		return config_error(cc, k1, k2, "must be an absolute path");
	if (len >= dstlen || len > maxlen)
		return config_error(cc, k1, k2, "path longer than %zu bytes",
		    maxlen < dstlen - 1 ? maxlen : dstlen - 1);
	memcpy(dst, s, len + 1);
	return 0;
}

static int
config_port(struct config_ctx *cc, const char *k, const json_t *v, uint16_t *out)
{
	json_int_t n;

	if (!json_is_integer(v))
		return config_error(cc, k, NULL, "must be an integer 1..65535");
	n = json_integer_value(v);
	if (n < 1 || n > 65535)
		return config_error(cc, k, NULL, "port %lld out of range 1..65535",
		    (long long)n);
	*out = (uint16_t)n;
	return 0;
}

/* An integer in 0..max. */
static int
config_uint(struct config_ctx *cc, const char *k, const json_t *v,
    unsigned int max, unsigned int *out)
{
	json_int_t n;

	if (!json_is_integer(v))
		return config_error(cc, k, NULL, "must be an integer 0..%u", max);
	n = json_integer_value(v);
	if (n < 0 || n > (json_int_t)max)
		return config_error(cc, k, NULL, "%lld out of range 0..%u",
		    (long long)n, max);
	*out = (unsigned int)n;
	return 0;
}

/* An IPv4 pool: strict CIDR, /8../30, no address of it in the floor. */
static int
config_pool(struct config_ctx *cc, const char *k, const json_t *v,
    struct netaddr_cidr *out)
{
	struct netaddr_cidr c;
	const char *why;

	if (!json_is_string(v))
		return config_error(cc, k, NULL, "must be a string (an IPv4 CIDR)");
	if (netaddr_cidr_parse(json_string_value(v), &c) == -1)
		return config_error(cc, k, NULL, "not a CIDR block with zero "
		    "host bits (e.g. \"10.233.0.0/16\")");
	if (c.nc_addr.na_family != AF_INET)
		return config_error(cc, k, NULL, "must be an IPv4 block");
	if (c.nc_prefix < 8 || c.nc_prefix > 30)
		return config_error(cc, k, NULL, "prefix must be /8../30");
	if (netaddr_cidr_floor(&c, &why))
		return config_error(cc, k, NULL, "overlaps a never-routable "
		    "range (%s)", why);
	*out = c;
	return 0;
}

/*
 * metrics_listen: null (none), or "ADDR:PORT" on a loopback address ("127.0.0.1:9345",
 * "[::1]:9345"): never an address a VM could reach.
 */
static int
config_metrics(struct config_ctx *cc, const char *k, const json_t *v,
    struct airlock_config *c)
{
	struct netaddr a;
	uint16_t port;

	if (json_is_null(v)) {
		c->metrics_on = 0;
		return 0;
	}
	if (!json_is_string(v))
		return config_error(cc, k, NULL, "must be null or a string "
		    "(\"127.0.0.1:PORT\")");
	if (netaddr_endpoint_parse(json_string_value(v), &a, &port) == -1 ||
	    port == 0)
		return config_error(cc, k, NULL, "not ADDR:PORT (an IP address and "
		    "a port 1..65535)");
	if (!netaddr_is_loopback(&a))
		return config_error(cc, k, NULL, "must be a loopback address "
		    "(127.0.0.0/8 or ::1): metrics are for the host only");
	c->metrics_on = 1;
	c->metrics_addr = a;
	c->metrics_port = port;
	return 0;
}

/*
 * upstream_proxy: null (connections go direct), or {"url": "http://HOST:PORT",
 * "auth": null | "SECRET"}.  Whether an IPv4 literal lies in a pool is checked once
 * every key is in (config_apply()).  No message quotes the URL: someone may have
 * written a password into it.
 */
static int
config_upstream(struct config_ctx *cc, const char *k, json_t *v,
    struct airlock_config *c)
{
	struct upstream_proxy up;
	const char *key, *why;
	json_t *url, *auth, *x;

	if (json_is_null(v)) {
		c->upstream_proxy_on = 0;
		memset(&c->upstream_proxy, 0, sizeof(c->upstream_proxy));
		return 0;
	}
	if (!json_is_object(v))
		return config_error(cc, k, NULL, "must be null or an object "
		    "({\"url\": \"http://HOST:PORT\", \"auth\": null})");
	json_object_foreach(v, key, x)
		if (strcmp(key, "url") != 0 && strcmp(key, "auth") != 0)
			return config_error(cc, k, key, "unknown key");
	if ((url = json_object_get(v, "url")) == NULL)
		return config_error(cc, k, NULL, "missing required key \"url\"");
	if (!json_is_string(url))
		return config_error(cc, k, "url", "must be a string "
		    "(\"http://HOST:PORT\")");
	if (upstream_url_parse(json_string_value(url), json_string_length(url), &up,
	    &why) == -1)
		return config_error(cc, k, "url", "%s", why);
	if ((auth = json_object_get(v, "auth")) != NULL && !json_is_null(auth)) {
		if (!json_is_string(auth) || !upstream_auth_is_valid(
		    json_string_value(auth), json_string_length(auth)))
			return config_error(cc, k, "auth", "must be null or a vault "
			    "secret's name (1..%d of A-Z a-z 0-9 _ . -, starting "
			    "with a letter or digit)", UPSTREAM_AUTH_MAX);
		if (up.up_is_addr)
			return config_error(cc, k, "auth", "credentials need the "
			    "proxy named by a host name in \"url\": the vault binds "
			    "the secret to that name (vault put --host), never to an "
			    "address");
		memcpy(up.up_auth, json_string_value(auth),
		    json_string_length(auth) + 1);
	}
	c->upstream_proxy_on = 1;
	c->upstream_proxy = up;
	return 0;
}

/* An integer in lo..hi (or 0, with zero_ok) of the audit object. */
static int
config_audit_int(struct config_ctx *cc, const char *k, const json_t *v,
    long long lo, long long hi, int zero_ok, long long *out)
{
	json_int_t n;

	if (!json_is_integer(v) || (n = json_integer_value(v)) > hi ||
	    (n < lo && !(zero_ok && n == 0)))
		return config_error(cc, "audit", k, "must be an integer %s%lld..%lld",
		    zero_ok ? "0 or " : "", lo, hi);
	*out = (long long)n;
	return 0;
}

/* A key file of the audit object: null (none: "") or an absolute path. */
static int
config_audit_path_or_null(struct config_ctx *cc, const char *k, const json_t *v,
    char *dst, size_t dstlen)
{
	if (json_is_null(v)) {
		dst[0] = '\0';
		return 0;
	}
	if (!json_is_string(v))
		return config_error(cc, "audit", k, "must be null or a string (a path)");
	return config_path(cc, "audit", k, v, dst, dstlen, PATH_MAX - 1);
}

/* The facilities of RFC 5424, by their number. */
static const char *const config_facilities[24] = {
	"kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news", "uucp",
	"cron", "authpriv", "ftp", "ntp", "security", "console", "solaris-cron",
	"local0", "local1", "local2", "local3", "local4", "local5", "local6",
	"local7",
};

/* "FILE:LINE:COL: $.audit.syslog.K: reason", at the position of "syslog". */
static int __attribute__((format(printf, 3, 4)))
config_syslog_error(struct config_ctx *cc, const char *k, const char *fmt, ...)
{
	char reason[256], key[80];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	config_key_print(k, key, sizeof(key));
	return config_error(cc, "audit", "syslog", "%s%s%s", key,
	    key[0] != '\0' ? ": " : "", reason);
}

/*
 * audit.syslog.target: "unix:/PATH", "tcp:HOST:PORT" or "tls:HOST:PORT", HOST an
 * IPv4 address outside the floor or a host name (upstream_url_parse()'s rules,
 * the same as for an upstream proxy: airlockd's sockets never reach the floor).
 */
static int
config_syslog_target(struct config_ctx *cc, const json_t *v,
    struct airlock_config *c)
{
	struct upstream_proxy up;
	const char *s, *why;
	char url[UPSTREAM_URL_MAX + 16];
	size_t len;

	if (!json_is_string(v))
		return config_syslog_error(cc, "target", "must be a string "
		    "(\"unix:/PATH\", \"tcp:HOST:PORT\" or \"tls:HOST:PORT\")");
	s = json_string_value(v);
	len = json_string_length(v);
	if (len != strlen(s))
		return config_syslog_error(cc, "target", "must not contain NUL");
	if (strncmp(s, "unix:", 5) == 0) {
		if (s[5] != '/')
			return config_syslog_error(cc, "target", "unix: needs an "
			    "absolute path");
		if (len - 5 > CONFIG_SUN_PATH_MAX)
			return config_syslog_error(cc, "target", "the socket path is "
			    "longer than %zu bytes", (size_t)CONFIG_SUN_PATH_MAX);
		c->syslog_proto = AUDIT_SYSLOG_UNIX;
		memcpy(c->syslog_path, s + 5, len - 5 + 1);
		return 0;
	}
	if (strncmp(s, "tcp:", 4) == 0)
		c->syslog_proto = AUDIT_SYSLOG_TCP;
	else if (strncmp(s, "tls:", 4) == 0)
		c->syslog_proto = AUDIT_SYSLOG_TLS;
	else
		return config_syslog_error(cc, "target", "must start with "
		    "\"unix:\", \"tcp:\" or \"tls:\"");
	if (len - 4 > UPSTREAM_URL_MAX - 7)
		return config_syslog_error(cc, "target", "too long");
	snprintf(url, sizeof(url), "http://%s", s + 4);
	if (strchr(s + 4, '/') != NULL || strchr(s + 4, '@') != NULL ||
	    upstream_url_parse(url, strlen(url), &up, &why) == -1)
		return config_syslog_error(cc, "target", "not HOST:PORT (an IPv4 "
		    "address outside the floor or a host name, and a port "
		    "1..65535)%s%s", strchr(s + 4, '/') != NULL ||
		    strchr(s + 4, '@') != NULL ? "" : ": ",
		    strchr(s + 4, '/') != NULL || strchr(s + 4, '@') != NULL ? "" :
		    why);
	memcpy(c->syslog_host, up.up_host, sizeof(c->syslog_host));
	c->syslog_host_is_addr = up.up_is_addr;
	c->syslog_addr = up.up_addr;
	c->syslog_port = up.up_port;
	return 0;
}

/* audit.syslog: null (off), or the collector's object. */
static int
config_syslog(struct config_ctx *cc, json_t *obj, struct airlock_config *c)
{
	const char *k;
	json_t *v;
	int i, have_target = 0;

	c->syslog_on = 0;
	c->syslog_ca[0] = '\0';
	if (json_is_null(obj))
		return 0;
	if (!json_is_object(obj))
		return config_error(cc, "audit", "syslog", "must be null or an object "
		    "({\"target\": \"tls:HOST:PORT\", \"ca\": \"/PATH\"})");
	json_object_foreach(obj, k, v) {
		if (strcmp(k, "target") == 0) {
			if (config_syslog_target(cc, v, c) == -1)
				return -1;
			have_target = 1;
		} else if (strcmp(k, "ca") == 0) {
			if (json_is_null(v))
				continue;
			if (!json_is_string(v) || json_string_length(v) !=
			    strlen(json_string_value(v)) ||
			    json_string_value(v)[0] != '/' ||
			    json_string_length(v) >= sizeof(c->syslog_ca))
				return config_syslog_error(cc, k, "must be null or "
				    "an absolute path (a PEM file of CAs)");
			memcpy(c->syslog_ca, json_string_value(v),
			    json_string_length(v) + 1);
		} else if (strcmp(k, "queue") == 0) {
			if (!json_is_integer(v) || json_integer_value(v) < 1 ||
			    json_integer_value(v) > CONFIG_SYSLOG_QUEUE_MAX)
				return config_syslog_error(cc, k, "must be an "
				    "integer 1..%d", CONFIG_SYSLOG_QUEUE_MAX);
			c->syslog_queue = (unsigned int)json_integer_value(v);
		} else if (strcmp(k, "facility") == 0) {
			for (i = 0; i < 24 && json_is_string(v); i++)
				if (strcmp(json_string_value(v),
				    config_facilities[i]) == 0)
					break;
			if (!json_is_string(v) || i == 24)
				return config_syslog_error(cc, k, "must be a "
				    "facility's name (\"local0\" .. \"local7\", "
				    "\"daemon\", \"auth\", ...)");
			c->syslog_facility = i;
		} else if (strcmp(k, "app_name") == 0) {
			const char *a = json_is_string(v) ? json_string_value(v) :
			    NULL;
			size_t j, n = a != NULL ? json_string_length(v) : 0;

			for (j = 0; j < n; j++)
				if ((unsigned char)a[j] < 33 ||
				    (unsigned char)a[j] > 126)
					break;
			if (a == NULL || n == 0 || n > CONFIG_SYSLOG_APP_MAX ||
			    j < n)
				return config_syslog_error(cc, k, "must be 1..%d "
				    "printable ASCII characters, no space",
				    CONFIG_SYSLOG_APP_MAX);
			memcpy(c->syslog_app, a, n + 1);
		} else
			return config_syslog_error(cc, k, "unknown key");
	}
	if (!have_target)
		return config_syslog_error(cc, "", "missing required key "
		    "\"target\"");
	if (c->syslog_proto == AUDIT_SYSLOG_TLS && c->syslog_ca[0] == '\0')
		return config_syslog_error(cc, "ca", "a tls: target needs \"ca\" "
		    "(the collector's certificate is always verified)");
	if (c->syslog_proto != AUDIT_SYSLOG_TLS && c->syslog_ca[0] != '\0')
		return config_syslog_error(cc, "ca", "only for a tls: target");
	c->syslog_on = 1;
	return 0;
}

static int
config_audit(struct config_ctx *cc, struct airlock_config *c, json_t *obj)
{
	const char *k;
	json_t *v;
	long long n;
	int fsync, key;

	if (!json_is_object(obj))
		return config_error(cc, "audit", NULL, "must be an object");
	json_object_foreach(obj, k, v) {
		if (strtab_value(config_audit_keys, k, &key) == -1)
			return config_error(cc, "audit", k, "unknown key");
		switch ((enum config_audit_key)key) {
		case CK_AUDIT_PATH:
			if (config_path(cc, "audit", k, v, c->audit_path,
			    sizeof(c->audit_path), PATH_MAX - 1) == -1)
				return -1;
			cc->cc_set_audit_path = 1;
			break;
		case CK_AUDIT_FSYNC:
			if (!json_is_string(v))
				return config_error(cc, "audit", k, "must be a "
				    "string: \"never\", \"deny\" or \"always\"");
			if (strtab_value(config_fsyncs, json_string_value(v),
			    &fsync) == -1)
				return config_error(cc, "audit", k, "must be "
				    "\"never\", \"deny\" or \"always\"");
			c->audit_fsync = (enum audit_fsync)fsync;
			break;
		case CK_AUDIT_KEY_FILE:
			if (config_audit_path_or_null(cc, k, v, c->audit_key_file,
			    sizeof(c->audit_key_file)) == -1)
				return -1;
			break;
		case CK_AUDIT_LOG_QUERY:
			if (!json_is_boolean(v))
				return config_error(cc, "audit", k,
				    "must be true or false");
			c->audit_log_query = json_is_true(v);
			break;
		case CK_AUDIT_SIGN_KEY:
			if (config_audit_path_or_null(cc, k, v, c->audit_sign_key,
			    sizeof(c->audit_sign_key)) == -1)
				return -1;
			break;
		case CK_AUDIT_SIGN_EVERY:
			if (config_audit_int(cc, k, v, 1, CONFIG_SIGN_EVERY_MAX,
			    0, &n) == -1)
				return -1;
			c->audit_sign_every = n;
			break;
		case CK_AUDIT_MAX_BYTES:
			if (config_audit_int(cc, k, v, CONFIG_AUDIT_MAX_BYTES_MIN,
			    CONFIG_AUDIT_MAX_BYTES_MAX, 1, &n) == -1)
				return -1;
			c->audit_max_bytes = n;
			break;
		case CK_AUDIT_KEEP:
			if (config_audit_int(cc, k, v, 1, CONFIG_AUDIT_KEEP_MAX, 0,
			    &n) == -1)
				return -1;
			c->audit_keep = (unsigned int)n;
			break;
		case CK_AUDIT_SYSLOG:
			if (config_syslog(cc, v, c) == -1)
				return -1;
			break;
		}
	}
	return 0;
}

static int
config_string(struct config_ctx *cc, const char *k, const json_t *v, char *dst,
    size_t dstlen)
{
	const char *s;
	size_t i, len;

	if (!json_is_string(v))
		return config_error(cc, k, NULL, "must be a string");
	s = json_string_value(v);
	len = json_string_length(v);
	if (len == 0)
		return config_error(cc, k, NULL, "must not be empty");
	if (len >= dstlen)
		return config_error(cc, k, NULL, "longer than %zu bytes",
		    dstlen - 1);
	for (i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return config_error(cc, k, NULL,
			    "must not contain control characters");
	memcpy(dst, s, len + 1);
	return 0;
}

/* A portable user name: [A-Za-z_][A-Za-z0-9_.-]*, at most 32 bytes. */
static int
config_user(struct config_ctx *cc, const json_t *v, char *dst, size_t dstlen)
{
	const char *s;
	size_t i, len;
	char ch;

	if (!json_is_string(v))
		return config_error(cc, "user", NULL, "must be a string");
	s = json_string_value(v);
	len = json_string_length(v);
	if (len == 0 || len > CONFIG_USER_MAX || len >= dstlen)
		return config_error(cc, "user", NULL, "must be 1..%d bytes",
		    CONFIG_USER_MAX);
	for (i = 0; i < len; i++) {
		ch = s[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    ch == '_' || (i > 0 && ((ch >= '0' && ch <= '9') ||
		    ch == '-' || ch == '.'))))
			return config_error(cc, "user", NULL,
			    "not a valid user name");
	}
	memcpy(dst, s, len + 1);
	return 0;
}

static int
config_apply(struct config_ctx *cc, struct airlock_config *c, json_t *root)
{
	const char *k;
	json_int_t n;
	json_t *v;
	int key;

	if (!json_is_object(root)) {
		snprintf(cc->cc_err, cc->cc_errlen, "%s:1:1: $: must be a JSON "
		    "object", cc->cc_file);
		return -1;
	}
	json_object_foreach(root, k, v) {
		if (strtab_value(config_keys, k, &key) == -1)
			return config_error(cc, k, NULL, "unknown key");
		switch ((enum config_key)key) {
		case CK_STATE_DIR:
			if (config_path(cc, k, NULL, v, c->state_dir,
			    sizeof(c->state_dir), PATH_MAX - 1) == -1)
				return -1;
			break;
		case CK_CONTROL_SOCKET:
			if (config_path(cc, k, NULL, v, c->control_socket,
			    sizeof(c->control_socket), CONFIG_SUN_PATH_MAX) == -1)
				return -1;
			cc->cc_set_control_socket = 1;
			break;
		case CK_PROXY_PORT:
			if (config_port(cc, k, v, &c->proxy_port) == -1)
				return -1;
			break;
		case CK_DNS_PORT:
			if (config_port(cc, k, v, &c->dns_port) == -1)
				return -1;
			break;
		case CK_WORKERS:
			if (!json_is_integer(v))
				return config_error(cc, k, NULL, "must be an "
				    "integer 0..%d", CONFIG_WORKERS_MAX);
			n = json_integer_value(v);
			if (n < 0 || n > CONFIG_WORKERS_MAX)
				return config_error(cc, k, NULL, "%lld out of "
				    "range 0..%d", (long long)n, CONFIG_WORKERS_MAX);
			c->workers = (unsigned int)n;
			break;
		case CK_ADDRESS_POOL:
			if (config_pool(cc, k, v, &c->address_pool) == -1)
				return -1;
			break;
		case CK_MAPPED_POOL:
			if (config_pool(cc, k, v, &c->mapped_pool) == -1)
				return -1;
			break;
		case CK_UPSTREAM_CA_FILE:
			if (json_is_null(v))
				c->upstream_ca_file[0] = '\0';
			else if (!json_is_string(v))
				return config_error(cc, k, NULL,
				    "must be null or a string (a path)");
			else if (config_path(cc, k, NULL, v, c->upstream_ca_file,
			    sizeof(c->upstream_ca_file), PATH_MAX - 1) == -1)
				return -1;
			break;
		case CK_AUDIT:
			if (config_audit(cc, c, v) == -1)
				return -1;
			break;
		case CK_LIBVIRT_URI:
			if (config_string(cc, k, v, c->libvirt_uri,
			    sizeof(c->libvirt_uri)) == -1)
				return -1;
			break;
		case CK_USER:
			if (config_user(cc, v, c->user, sizeof(c->user)) == -1)
				return -1;
			break;
		case CK_METRICS_LISTEN:
			if (config_metrics(cc, k, v, c) == -1)
				return -1;
			break;
		case CK_UPSTREAM_PROXY:
			if (config_upstream(cc, k, v, c) == -1)
				return -1;
			break;
		case CK_POOL_IDLE_MS:
			if (config_uint(cc, k, v, CONFIG_POOL_IDLE_MS_MAX,
			    &c->pool_idle_ms) == -1)
				return -1;
			break;
		case CK_POOL_PER_HOST:
			if (config_uint(cc, k, v, CONFIG_POOL_PER_HOST_MAX,
			    &c->pool_per_host) == -1)
				return -1;
			break;
		case CK_POOL_PER_SANDBOX:
			if (config_uint(cc, k, v, CONFIG_POOL_PER_SANDBOX_MAX,
			    &c->pool_per_sandbox) == -1)
				return -1;
			break;
		case CK_POOL_MAX:
			if (config_uint(cc, k, v, CONFIG_POOL_MAX,
			    &c->pool_max) == -1)
				return -1;
			break;
		}
	}
	/* Both are TCP listeners (DNS over TCP too): one port cannot be both. */
	if (c->proxy_port == c->dns_port)
		return config_error(cc, json_object_get(root, "dns_port") ?
		    "dns_port" : "proxy_port", NULL,
		    "proxy_port and dns_port are both %u: they must differ",
		    (unsigned int)c->proxy_port);
	/* Both pools are routed on the host: they must not overlap. */
	if (netaddr_cidr_contains(&c->address_pool, &c->mapped_pool.nc_addr) ||
	    netaddr_cidr_contains(&c->mapped_pool, &c->address_pool.nc_addr))
		return config_error(cc, json_object_get(root, "mapped_pool") ?
		    "mapped_pool" : "address_pool", NULL,
		    "address_pool and mapped_pool overlap");
	if (c->syslog_on && c->syslog_host_is_addr &&
	    (netaddr_cidr_contains(&c->address_pool, &c->syslog_addr) ||
	    netaddr_cidr_contains(&c->mapped_pool, &c->syslog_addr)))
		return config_error(cc, "audit", "syslog", "target: the address is "
		    "in address_pool or mapped_pool: a sandbox's, never a "
		    "collector's");
	/* The sandboxes' own addresses are never a proxy's. */
	if (c->upstream_proxy_on && c->upstream_proxy.up_is_addr &&
	    (netaddr_cidr_contains(&c->address_pool, &c->upstream_proxy.up_addr) ||
	    netaddr_cidr_contains(&c->mapped_pool, &c->upstream_proxy.up_addr)))
		return config_error(cc, "upstream_proxy", "url", "the address is "
		    "in address_pool or mapped_pool: a sandbox's, never a proxy's");
	return 0;
}

int
config_key_name(size_t i, char *buf, size_t len)
{
	const struct strtab *t;
	int n;

	for (t = config_keys; t->st_name != NULL; t++, i--)
		if (i == 0) {
			n = snprintf(buf, len, "%s", t->st_name);
			return n < 0 || (size_t)n >= len ? -1 : 0;
		}
	for (t = config_audit_keys; t->st_name != NULL; t++, i--)
		if (i == 0) {
			n = snprintf(buf, len, "audit.%s", t->st_name);
			return n < 0 || (size_t)n >= len ? -1 : 0;
		}
	return -1;
}

/*
 * An override directory (env or --state-dir): relative to the current directory if
 * not absolute, trailing slashes dropped.
 */
static int
config_dir_override(const char *what, const char *dir, char *dst, size_t dstlen,
    char *err, size_t errlen)
{
	char cwd[PATH_MAX];
	size_t len;
	int n;

	if (dir[0] == '\0') {
		snprintf(err, errlen, "%s: state_dir: must not be empty", what);
		return -1;
	}
	if (dir[0] == '/')
		n = snprintf(dst, dstlen, "%s", dir);
	else {
		if (getcwd(cwd, sizeof(cwd)) == NULL) {
			snprintf(err, errlen, "%s: state_dir: current directory: "
			    "%s", what, strerror(errno));
			return -1;
		}
		n = snprintf(dst, dstlen, "%s/%s", strcmp(cwd, "/") == 0 ? "" :
		    cwd, dir);
	}
	if (n < 0 || (size_t)n >= dstlen) {
		snprintf(err, errlen, "%s: state_dir: path too long", what);
		return -1;
	}
	len = (size_t)n;
	while (len > 1 && dst[len - 1] == '/')
		dst[--len] = '\0';
	return 0;
}

int
config_load(struct airlock_config *c, const char *path, const char *state_dir,
    char *err, size_t errlen)
{
	struct config_ctx cc;
	struct airlock_config tmp;
	json_error_t jerr;
	json_t *root = NULL;
	const char *env, *sdsrc = NULL, *sd = NULL;
	char *text = NULL;
	size_t len = 0;
	int implicit = 0, n, rc = -1;

	memset(&cc, 0, sizeof(cc));
	cc.cc_err = err;
	cc.cc_errlen = errlen;
	if (errlen > 0)
		err[0] = '\0';
	config_defaults(&tmp);

	if (path == NULL && (env = getenv("AIRLOCK_CONFIG")) != NULL &&
	    env[0] != '\0')
		path = env;
	if (path == NULL) {
		path = CONFIG_DEFAULT_PATH;
		implicit = 1;
	}
	cc.cc_file = path;
	if (file_read(path, CONFIG_FILE_MAX, &text, &len) == -1) {
		if (errno == EFBIG) {
			snprintf(err, errlen, "%s: larger than %d bytes", path,
			    CONFIG_FILE_MAX);
			goto out;
		}
		/* No file at the default path: the defaults. */
		if (!implicit || errno != ENOENT) {
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			goto out;
		}
	}
	if (text != NULL) {
		cc.cc_text = text;
		cc.cc_len = len;
		if ((root = json_loadb(text, len, JSON_REJECT_DUPLICATES,
		    &jerr)) == NULL) {
			config_json_error(&jerr, text, len, path, err, errlen);
			goto out;
		}
		if (config_apply(&cc, &tmp, root) == -1)
			goto out;
	}

	/* --state-dir beats $AIRLOCK_STATE_DIR beats the file. */
	if ((env = getenv("AIRLOCK_STATE_DIR")) != NULL && env[0] != '\0') {
		sd = env;
		sdsrc = "AIRLOCK_STATE_DIR";
	}
	if (state_dir != NULL) {
		sd = state_dir;
		sdsrc = "--state-dir";
	}
	if (sd != NULL) {
		if (config_dir_override(sdsrc, sd, tmp.state_dir,
		    sizeof(tmp.state_dir), err, errlen) == -1)
			goto out;
		/* Keep everything under the overriding directory (tests). */
		if (!cc.cc_set_audit_path) {
			n = snprintf(tmp.audit_path, sizeof(tmp.audit_path),
			    "%s/audit.jsonl", tmp.state_dir);
			if (n < 0 || (size_t)n >= sizeof(tmp.audit_path)) {
				snprintf(err, errlen, "%s: audit.path: %s/audit.jsonl "
				    "too long", sdsrc, tmp.state_dir);
				goto out;
			}
		}
		if (!cc.cc_set_control_socket) {
			n = snprintf(tmp.control_socket, sizeof(tmp.control_socket),
			    "%s/control.sock", tmp.state_dir);
			if (n < 0 || (size_t)n > CONFIG_SUN_PATH_MAX) {
				snprintf(err, errlen, "%s: control_socket: "
				    "%s/control.sock is longer than a socket path "
				    "may be (%zu bytes); set control_socket", sdsrc,
				    tmp.state_dir, CONFIG_SUN_PATH_MAX);
				goto out;
			}
		}
	}
	*c = tmp;
	rc = 0;
 out:
	json_decref(root);
	free(text);
	return rc;
}
