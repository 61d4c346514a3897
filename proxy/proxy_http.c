/*
 * proxy/proxy_http.c: see proxy_http.h.
 *
 * The parsers work on a complete head (http_head_find() first establishes where it
 * ends and that every line ends in CRLF with no NUL), so each check below is a plain
 * walk over a bounded span: an index never passes the head's end.  Anything RFC 9112
 * allows a recipient to "handle" leniently is refused instead: the bytes we forward
 * must mean one thing to us and to the origin.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "hexdig.h"
#include "proxy_http.h"
#include "proxy_reason.h"

/* ---- byte classes ---- */

static int
http_is_tchar(uint8_t c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9'))
		return 1;
	return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* field-vchar, SP or HTAB: what a field value (or reason phrase) may contain. */
static int
http_is_vbyte(uint8_t c)
{
	return c == ' ' || c == '\t' || (c >= 0x21 && c != 0x7f);
}

static int
http_is_ows(uint8_t c)
{
	return c == ' ' || c == '\t';
}

static uint8_t
http_lower(uint8_t c)
{
	return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

/* Case-insensitive equality of p[n] and the NUL-terminated lower-case s. */
static int
http_ieq(const uint8_t *p, size_t n, const char *s)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] == '\0' || http_lower(p[i]) != (uint8_t)s[i])
			return 0;
	return s[n] == '\0';
}

static int
http_ieq2(const uint8_t *a, const uint8_t *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (http_lower(a[i]) != http_lower(b[i]))
			return 0;
	return 1;
}

/* ---- struct http_buf ---- */

static int
http_buf_reserve(struct http_buf *b, size_t n)
{
	size_t need, cap;
	uint8_t *p;

	if (n > SIZE_MAX - b->hb_len) {
		errno = ENOMEM;
		return -1;
	}
	need = b->hb_len + n;
	if (b->hb_max != 0 && need > b->hb_max) {
		errno = EMSGSIZE;
		return -1;
	}
	if (need <= b->hb_cap)
		return 0;
	cap = b->hb_cap != 0 ? b->hb_cap : 256;
	while (cap < need) {
		if (cap > SIZE_MAX / 2) {
			errno = ENOMEM;
			return -1;
		}
		cap *= 2;
	}
	if (b->hb_max != 0 && cap > b->hb_max)
		cap = b->hb_max;
	/* Not realloc: the old block may hold a secret and must be wiped. */
	if ((p = malloc(cap)) == NULL)
		return -1;
	if (b->hb_p != NULL) {
		memcpy(p, b->hb_p, b->hb_len);
		OPENSSL_cleanse(b->hb_p, b->hb_cap);
		free(b->hb_p);
	}
	b->hb_p = p;
	b->hb_cap = cap;
	return 0;
}

int
http_buf_add(struct http_buf *b, const void *p, size_t n)
{
	if (n == 0)
		return 0;
	if (http_buf_reserve(b, n) == -1)
		return -1;
	memcpy(b->hb_p + b->hb_len, p, n);
	b->hb_len += n;
	return 0;
}

int
http_buf_add_str(struct http_buf *b, const char *s)
{
	return http_buf_add(b, s, strlen(s));
}

void
http_buf_drain(struct http_buf *b, size_t n)
{
	if (n >= b->hb_len) {
		if (b->hb_p != NULL)
			OPENSSL_cleanse(b->hb_p, b->hb_len);
		b->hb_len = 0;
		return;
	}
	memmove(b->hb_p, b->hb_p + n, b->hb_len - n);
	OPENSSL_cleanse(b->hb_p + b->hb_len - n, n);
	b->hb_len -= n;
}

void
http_buf_free(struct http_buf *b)
{
	if (b == NULL)
		return;
	if (b->hb_p != NULL) {
		OPENSSL_cleanse(b->hb_p, b->hb_cap);
		free(b->hb_p);
	}
	b->hb_p = NULL;
	b->hb_len = 0;
	b->hb_cap = 0;
}

int
http_buf_add_chunk(struct http_buf *b, const void *p, size_t n)
{
	char head[HTTP_CHUNK_HEAD_MAX];
	int hl;

	if (n == 0)
		return 0;
	hl = snprintf(head, sizeof(head), "%llx\r\n", (unsigned long long)n);
	if (hl < 0 || (size_t)hl >= sizeof(head)) {
		errno = EINVAL;
		return -1;
	}
	if (http_buf_reserve(b, (size_t)hl + n + 2) == -1)
		return -1;
	if (http_buf_add(b, head, (size_t)hl) == -1 ||
	    http_buf_add(b, p, n) == -1 || http_buf_add(b, "\r\n", 2) == -1)
		return -1;
	return 0;
}

int
http_buf_add_last_chunk(struct http_buf *b)
{
	return http_buf_add(b, "0\r\n\r\n", 5);
}

/* ---- results ---- */

int
http_res_status(enum http_res r)
{
	switch (r) {
	case HTTP_OK:
	case HTTP_NEED_MORE:
		return 0;
	case HTTP_E_BAD:
		return 400;
	case HTTP_E_TOO_LARGE:
		return 431;
	case HTTP_E_URI_TOO_LONG:
		return 414;
	case HTTP_E_TE:
		return 501;
	case HTTP_E_VERSION:
		return 505;
	case HTTP_E_METHOD:
		return 405;
	case HTTP_E_EXPECT:
		return 417;
	case HTTP_E_TARGET:
		return 400;
	}
	return 400;
}

const char *
http_res_str(enum http_res r)
{
	switch (r) {
	case HTTP_OK:
		return "ok";
	case HTTP_NEED_MORE:
		return "need more";
	case HTTP_E_BAD:
		return "bad request";
	case HTTP_E_TOO_LARGE:
		return "header section too large";
	case HTTP_E_URI_TOO_LONG:
		return "request line too long";
	case HTTP_E_TE:
		return "transfer coding not implemented";
	case HTTP_E_VERSION:
		return "HTTP version not supported";
	case HTTP_E_METHOD:
		return "method not allowed";
	case HTTP_E_EXPECT:
		return "expectation failed";
	case HTTP_E_TARGET:
		return "request-target could be read as an authority";
	}
	return "?";
}

const char *
http_res_reason(enum http_res r)
{
	switch (r) {
	case HTTP_E_TARGET:
		return PR_STR(INVALID_PATH);
	case HTTP_E_VERSION:
		return PR_STR(HTTP_VERSION_NOT_SUPPORTED);
	case HTTP_E_TOO_LARGE:
		return PR_STR(HTTP_HEAD_TOO_LARGE);
	default:
		return PR_STR(HTTP_MALFORMED);
	}
}

/* ---- head framing ---- */

enum http_res
http_head_find(const uint8_t *buf, size_t len, size_t *state, size_t *head_len)
{
	size_t i;

	for (i = *state; i < len; i++) {
		if (i >= HTTP_HEAD_MAX)
			return HTTP_E_TOO_LARGE;
		switch (buf[i]) {
		case '\0':
			return HTTP_E_BAD;
		case '\r':
			if (i + 1 == len) {
				*state = i;
				return HTTP_NEED_MORE;
			}
			if (buf[i + 1] != '\n')
				return HTTP_E_BAD;
			break;
		case '\n':
			if (i == 0 || buf[i - 1] != '\r')
				return HTTP_E_BAD;
			/* An empty line: at the very start, or right after a CRLF. */
			if (i == 1 || (i >= 3 && buf[i - 2] == '\n')) {
				*head_len = i + 1;
				*state = i + 1;
				return HTTP_OK;
			}
			break;
		}
	}
	*state = i;
	return len > HTTP_HEAD_MAX ? HTTP_E_TOO_LARGE : HTTP_NEED_MORE;
}

/* ---- shared field parsing ---- */

/* Offset of the CRLF ending the line that starts at off (the head ends in one). */
static size_t
http_eol(const uint8_t *buf, size_t off, size_t end)
{
	while (off + 1 < end && !(buf[off] == '\r' && buf[off + 1] == '\n'))
		off++;
	return off;
}

/*
 * Parses the field lines in buf[off, end) (end: the offset of the final empty line)
 * into fields[], strictly.
 */
static enum http_res
http_fields_parse(const uint8_t *buf, size_t off, size_t end,
    struct http_field *fields, size_t *nfields, const char **why)
{
	size_t eol, i, vs, ve;

	*nfields = 0;
	while (off < end) {
		eol = http_eol(buf, off, end + 2);
		if (http_is_ows(buf[off])) {
			*why = "obs-fold or whitespace at the start of a field line";
			return HTTP_E_BAD;
		}
		for (i = off; i < eol && http_is_tchar(buf[i]); i++)
			;
		if (i == off) {
			*why = "field name empty or not a token";
			return HTTP_E_BAD;
		}
		if (i == eol || buf[i] != ':') {
			*why = http_is_ows(buf[i]) ?
			    "whitespace between field name and colon" :
			    "field name not a token or no colon";
			return HTTP_E_BAD;
		}
		if (*nfields >= HTTP_FIELDS_MAX) {
			*why = "too many header fields";
			return HTTP_E_TOO_LARGE;
		}
		fields[*nfields].hf_name.off = off;
		fields[*nfields].hf_name.len = i - off;
		for (vs = i + 1; vs < eol && http_is_ows(buf[vs]); vs++)
			;
		for (ve = eol; ve > vs && http_is_ows(buf[ve - 1]); ve--)
			;
		for (i = vs; i < ve; i++)
			if (!http_is_vbyte(buf[i])) {
				*why = "control byte in a field value";
				return HTTP_E_BAD;
			}
		fields[*nfields].hf_value.off = vs;
		fields[*nfields].hf_value.len = ve - vs;
		(*nfields)++;
		off = eol + 2;
	}
	return HTTP_OK;
}

int
http_field_find(const uint8_t *buf, const struct http_field *fields, size_t n,
    const char *name, size_t from)
{
	size_t i, nl = strlen(name);

	for (i = from; i < n; i++)
		if (fields[i].hf_name.len == nl &&
		    http_ieq2(buf + fields[i].hf_name.off, (const uint8_t *)name, nl))
			return (int)i;
	return -1;
}

/*
 * Walks the comma-separated list in v[n] (RFC 9110 5.6.1: empty elements and OWS
 * allowed).  Calls fn for each element; fn returns -1 to stop.  Returns -1 if an
 * element is not a token (when tokens_only) or fn stopped, else 0.
 */
struct http_list_el {
	const uint8_t	*p;
	size_t		 n;
};

static int
http_list_next(const uint8_t *v, size_t n, size_t *pos, struct http_list_el *el)
{
	size_t s, e;

	for (;;) {
		while (*pos < n && (http_is_ows(v[*pos]) || v[*pos] == ','))
			(*pos)++;
		if (*pos >= n)
			return 0;
		s = *pos;
		while (*pos < n && v[*pos] != ',')
			(*pos)++;
		e = *pos;
		while (e > s && http_is_ows(v[e - 1]))
			e--;
		el->p = v + s;
		el->n = e - s;
		return 1;
	}
}

static int
http_is_token(const uint8_t *p, size_t n)
{
	size_t i;

	if (n == 0)
		return 0;
	for (i = 0; i < n; i++)
		if (!http_is_tchar(p[i]))
			return 0;
	return 1;
}

/* Content-Length: 1*DIGIT, no overflow of 2^63 (so it also fits off_t). */
static int
http_parse_length(const uint8_t *p, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (n == 0 || n > 19)
		return -1;
	for (i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		v = v * 10 + (uint64_t)(p[i] - '0');
	}
	if (v > INT64_MAX)
		return -1;
	*out = v;
	return 0;
}

/* Transfer-Encoding value: exactly "chunked", else HTTP_E_TE or HTTP_E_BAD. */
static enum http_res
http_parse_te(const uint8_t *v, size_t n, const char **why)
{
	struct http_list_el el;
	size_t pos = 0, nel = 0, nchunked = 0;
	int last_chunked = 0, unknown = 0;

	while (http_list_next(v, n, &pos, &el)) {
		nel++;
		last_chunked = 0;
		if (http_ieq(el.p, el.n, "chunked")) {
			nchunked++;
			last_chunked = 1;
		} else if (http_is_token(el.p, el.n))
			unknown = 1;
		else {
			*why = "malformed Transfer-Encoding";
			return HTTP_E_BAD;
		}
	}
	if (nel == 0) {
		*why = "empty Transfer-Encoding";
		return HTTP_E_BAD;
	}
	if (unknown) {
		*why = "transfer coding other than chunked";
		return HTTP_E_TE;
	}
	if (nchunked != 1 || !last_chunked) {
		*why = "chunked applied more than once";
		return HTTP_E_BAD;
	}
	return HTTP_OK;
}

/*
 * uri-host [ ":" port ]: a reg-name of [A-Za-z0-9._~-] or an IPv6 literal in
 * brackets; a port of 1..5 digits up to 65535.  Stricter than RFC 3986 on purpose.
 */
static int
http_authority_valid(const uint8_t *p, size_t n)
{
	size_t i = 0, hs;
	unsigned long port;

	if (n == 0)
		return 0;
	if (p[0] == '[') {
		for (i = 1; i < n && p[i] != ']'; i++)
			if (!((p[i] >= '0' && p[i] <= '9') ||
			    (http_lower(p[i]) >= 'a' && http_lower(p[i]) <= 'f') ||
			    p[i] == ':' || p[i] == '.'))
				return 0;
		if (i == n || i == 1)
			return 0;
		i++;
	} else {
		hs = i;
		while (i < n && ((p[i] >= '0' && p[i] <= '9') ||
		    (http_lower(p[i]) >= 'a' && http_lower(p[i]) <= 'z') ||
		    p[i] == '.' || p[i] == '-' || p[i] == '_' || p[i] == '~'))
			i++;
		if (i == hs)
			return 0;
	}
	if (i == n)
		return 1;
	if (p[i] != ':' || i + 1 == n || n - i - 1 > 5)
		return 0;
	port = 0;
	for (i++; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return 0;
		port = port * 10 + (p[i] - '0');
	}
	return port <= 65535;
}

/* "HTTP/1.0" or "HTTP/1.1": 0; another "HTTP/d.d": 1; anything else: -1. */
static int
http_version(const uint8_t *p, size_t n, int *minor)
{
	if (n != 8 || memcmp(p, "HTTP/", 5) != 0 || p[5] < '0' || p[5] > '9' ||
	    p[6] != '.' || p[7] < '0' || p[7] > '9')
		return -1;
	if (p[5] != '1' || (p[7] != '0' && p[7] != '1'))
		return 1;
	*minor = p[7] - '0';
	return 0;
}

/* What the semantic pass over the fields found (shared by requests and responses). */
struct http_facts {
	int		 nhost;
	struct http_span host;
	int		 ncl;
	uint64_t	 cl;
	int		 nte;
	int		 conn_close;
	int		 conn_keepalive;
	int		 conn_upgrade;
	int		 upgrade_ws;
	int		 expect_continue;
	int		 expect_other;
};

static enum http_res
http_facts_get(const uint8_t *buf, const struct http_field *f, size_t n,
    struct http_facts *fa, const char **why)
{
	struct http_list_el el;
	const uint8_t *name, *v;
	size_t i, nl, vl, pos;
	enum http_res r;

	memset(fa, 0, sizeof(*fa));
	for (i = 0; i < n; i++) {
		name = buf + f[i].hf_name.off;
		nl = f[i].hf_name.len;
		v = buf + f[i].hf_value.off;
		vl = f[i].hf_value.len;
		if (http_ieq(name, nl, "host")) {
			if (fa->nhost++ > 0) {
				*why = "duplicate Host";
				return HTTP_E_BAD;
			}
			fa->host = f[i].hf_value;
		} else if (http_ieq(name, nl, "content-length")) {
			if (fa->ncl++ > 0) {
				*why = "several Content-Length fields";
				return HTTP_E_BAD;
			}
			if (http_parse_length(v, vl, &fa->cl) == -1) {
				*why = "invalid Content-Length";
				return HTTP_E_BAD;
			}
		} else if (http_ieq(name, nl, "transfer-encoding")) {
			if (fa->nte++ > 0) {
				*why = "several Transfer-Encoding fields";
				return HTTP_E_BAD;
			}
			if ((r = http_parse_te(v, vl, why)) != HTTP_OK)
				return r;
		} else if (http_ieq(name, nl, "connection")) {
			pos = 0;
			while (http_list_next(v, vl, &pos, &el)) {
				if (!http_is_token(el.p, el.n)) {
					*why = "malformed Connection";
					return HTTP_E_BAD;
				}
				if (http_ieq(el.p, el.n, "close"))
					fa->conn_close = 1;
				else if (http_ieq(el.p, el.n, "keep-alive"))
					fa->conn_keepalive = 1;
				else if (http_ieq(el.p, el.n, "upgrade"))
					fa->conn_upgrade = 1;
			}
		} else if (http_ieq(name, nl, "upgrade")) {
			pos = 0;
			while (http_list_next(v, vl, &pos, &el))
				if (http_ieq(el.p, el.n, "websocket"))
					fa->upgrade_ws = 1;
		} else if (http_ieq(name, nl, "expect")) {
			if (http_ieq(v, vl, "100-continue"))
				fa->expect_continue = 1;
			else
				fa->expect_other = 1;
		}
	}
	if (fa->ncl > 0 && fa->nte > 0) {
		*why = "both Content-Length and Transfer-Encoding";
		return HTTP_E_BAD;
	}
	return HTTP_OK;
}

/* ---- requests ---- */

static const struct {
	const char		*name;
	enum http_method	 m;
} http_methods[] = {
	{ "GET", HTTP_M_GET }, { "HEAD", HTTP_M_HEAD }, { "POST", HTTP_M_POST },
	{ "PUT", HTTP_M_PUT }, { "DELETE", HTTP_M_DELETE },
	{ "OPTIONS", HTTP_M_OPTIONS }, { "PATCH", HTTP_M_PATCH },
	{ "TRACE", HTTP_M_TRACE },
};

/*
 * The IANA HTTP Method Registry (https://www.iana.org/assignments/http-methods,
 * as of 2026), less the common seven, CONNECT, PRI and TRACE.  Sorted.
 */
static const char *const http_registered_methods[] = {
	"ACL", "BASELINE-CONTROL", "BIND", "CHECKIN", "CHECKOUT", "COPY", "LABEL",
	"LINK", "LOCK", "MERGE", "MKACTIVITY", "MKCALENDAR", "MKCOL",
	"MKREDIRECTREF", "MKWORKSPACE", "MOVE", "ORDERPATCH", "PROPFIND",
	"PROPPATCH", "QUERY", "REBIND", "REPORT", "SEARCH", "UNBIND", "UNCHECKOUT",
	"UNLINK", "UNLOCK", "UPDATE", "UPDATEREDIRECTREF", "VERSION-CONTROL",
};

static int
http_meq(const uint8_t *m, size_t n, const char *s)
{
	return strlen(s) == n && memcmp(m, s, n) == 0;
}

enum http_method_class
http_method_classify(const uint8_t *m, size_t n)
{
	static const char *const common[] = { "GET", "HEAD", "POST", "PUT",
	    "DELETE", "PATCH", "OPTIONS" };
	size_t i;

	for (i = 0; i < sizeof(common) / sizeof(common[0]); i++)
		if (http_meq(m, n, common[i]))
			return HTTP_MC_COMMON;
	if (http_meq(m, n, "TRACE") || http_meq(m, n, "TRACK"))
		return HTTP_MC_ECHO;
	if (http_meq(m, n, "CONNECT") || http_meq(m, n, "PRI"))
		return HTTP_MC_REFUSED;
	for (i = 0; i < sizeof(http_registered_methods) /
	    sizeof(http_registered_methods[0]); i++)
		if (http_meq(m, n, http_registered_methods[i]))
			return HTTP_MC_REGISTERED;
	return HTTP_MC_UNKNOWN;
}

const char *const http_identity_fields[] = {
	"forwarded", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto",
	"x-forwarded-port", "x-forwarded-server", "x-forwarded-prefix", "x-real-ip",
	"x-client-ip", "true-client-ip", "cf-connecting-ip", "fastly-client-ip",
	"x-cluster-client-ip", "x-original-forwarded-for", "client-ip",
	"x-originating-ip", "x-remote-ip", "x-remote-addr", "via", NULL
};

int
http_forwarded_value(const char *sandbox, int tls, char *out, size_t outlen)
{
	struct http_buf b = HTTP_BUF_INIT;
	const char *p;
	char ch;
	int rc = -1;

	if (outlen == 0)
		return -1;
	out[0] = '\0';
	/* RFC 7239 6.3: obfnode = "_" 1*( ALPHA / DIGIT / "." / "_" / "-" ) */
	if (http_buf_add_str(&b, "for=\"_airlock-") == -1)
		goto out;
	for (p = sandbox; *p != '\0'; p++) {
		ch = *p;
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-'))
			ch = '-';
		if (http_buf_add(&b, &ch, 1) == -1)
			goto out;
	}
	if (http_buf_add_str(&b, tls ? "\";proto=https" : "\";proto=http") == -1 ||
	    b.hb_len >= outlen)
		goto out;
	memcpy(out, b.hb_p, b.hb_len);
	out[b.hb_len] = '\0';
	rc = 0;
 out:
	http_buf_free(&b);
	return rc;
}

int
http_target_split(const uint8_t *target, size_t len, struct http_span *path,
    struct http_span *query)
{
	const uint8_t *q;

	path->off = 0;
	if ((q = memchr(target, '?', len)) == NULL) {
		path->len = len;
		query->off = len;
		query->len = 0;
		return 0;
	}
	path->len = (size_t)(q - target);
	query->off = path->len + 1;
	query->len = len - query->off;
	return 1;
}

/*
 * 1 if the path p[n] could be read as a network-path reference ("//host/..."):
 * a raw '\' anywhere (not a URI character; WHATWG URL parsers, and servers built
 * on them, read it as '/'), or a path that starts with "//" once %2F, %5C and %2E
 * are decoded (some servers and frameworks decode before routing), '\' is taken
 * for '/' and dot segments are removed as RFC 3986 5.2.4 does ("/.//h" and
 * "/a/..//h" become "//h").  Only whether two resolved segments exist and the
 * first is empty matters, so the walk keeps the segment depth and whether
 * segment 0 is empty, never a copy.  A '%' that is not followed by two
 * hex digits counts as an ordinary byte here (the policy normaliser refuses it
 * where a rule has paths).
 */
static int
http_path_authority_like(const uint8_t *p, size_t n)
{
	size_t i, depth = 0, seglen;
	int e0 = 0, dotonly, last, h1, h2;
	uint8_t ch;

	if (memchr(p, '\\', n) != NULL)
		return 1;
	if (n == 0 || p[0] != '/')
		return 0;	/* absolute-form with an empty path: "/" */
	for (i = 1, last = 0; !last; ) {
		/* One segment: up to the next (decoded) '/' or the end. */
		seglen = 0;
		dotonly = 1;
		last = 1;
		while (i < n) {
			ch = p[i++];
			if (ch == '%' && i + 1 < n &&
			    (h1 = hexdig_val(p[i])) != -1 &&
			    (h2 = hexdig_val(p[i + 1])) != -1) {
				ch = (uint8_t)(h1 << 4 | h2);
				if (ch == '\\')
					ch = '/';
				else if (ch != '/' && ch != '.')
					ch = 'x';
				i += 2;
			}
			if (ch == '/') {
				last = 0;
				break;
			}
			seglen++;
			if (ch != '.')
				dotonly = 0;
		}
		if (dotonly && (seglen == 1 || seglen == 2)) {
			/* "." stays, ".." pops; at the end either leaves "/" */
			if (seglen == 2 && depth > 0)
				depth--;
			if (!last)
				continue;
			seglen = 0;
		}
		if (depth == 0)
			e0 = seglen == 0;
		depth++;
	}
	return depth >= 2 && e0;
}

/* Validates the target in buf at t and fills the path/query/absolute fields. */
static enum http_res
http_target_parse(const uint8_t *buf, struct http_request *rq,
    struct http_span *authority)
{
	const uint8_t *t = buf + rq->hq_target.off;
	size_t n = rq->hq_target.len, i, s, a;
	struct http_span p, q;

	for (i = 0; i < n; i++)
		if (t[i] < 0x21 || t[i] > 0x7e || t[i] == '#') {
			rq->hq_why = "invalid byte or fragment in the request-target";
			return HTTP_E_BAD;
		}
	authority->len = 0;
	if (t[0] == '/') {
		s = 0;
	} else if (n == 1 && t[0] == '*') {
		rq->hq_why = "asterisk-form request-target";
		return HTTP_E_BAD;
	} else {
		if (n > 7 && http_ieq(t, 7, "http://"))
			a = 7;
		else if (n > 8 && http_ieq(t, 8, "https://"))
			a = 8;
		else {
			rq->hq_why = "request-target neither origin- nor absolute-form";
			return HTTP_E_BAD;
		}
		for (s = a; s < n && t[s] != '/' && t[s] != '?'; s++)
			if (t[s] == '@') {
				rq->hq_why = "userinfo in the request-target";
				return HTTP_E_BAD;
			}
		if (!http_authority_valid(t + a, s - a)) {
			rq->hq_why = "invalid authority in the request-target";
			return HTTP_E_BAD;
		}
		authority->off = rq->hq_target.off + a;
		authority->len = s - a;
		rq->hq_absolute = 1;
	}
	rq->hq_has_query = http_target_split(t + s, n - s, &p, &q);
	rq->hq_path.off = rq->hq_target.off + s + p.off;
	rq->hq_path.len = p.len;
	rq->hq_query.off = rq->hq_target.off + s + q.off;
	rq->hq_query.len = q.len;
	if (http_path_authority_like(buf + rq->hq_path.off, rq->hq_path.len)) {
		rq->hq_why = "request-target path could be read as an authority";
		return HTTP_E_TARGET;
	}
	return HTTP_OK;
}

enum http_res
http_request_line_check(const uint8_t *buf, size_t len, const char **why)
{
	size_t eol, sp1, sp2;
	int minor, v;

	for (eol = 0; eol + 1 < len && !(buf[eol] == '\r' && buf[eol + 1] == '\n');
	    eol++)
		;
	if (eol + 1 >= len)
		return HTTP_NEED_MORE;
	if (eol == 0) {
		*why = "empty line before the request line";
		return HTTP_E_BAD;
	}
	for (sp1 = 0; sp1 < eol && http_is_tchar(buf[sp1]); sp1++)
		;
	if (sp1 == 0 || sp1 == eol || buf[sp1] != ' ') {
		*why = "method not a token";
		return HTTP_E_BAD;
	}
	for (sp2 = sp1 + 1; sp2 < eol && buf[sp2] != ' '; sp2++)
		;
	if (sp2 == eol) {
		*why = "no HTTP version (HTTP/0.9)";
		return HTTP_E_VERSION;
	}
	if ((v = http_version(buf + sp2 + 1, eol - sp2 - 1, &minor)) != 0) {
		*why = v == 1 ? "HTTP version not 1.0 or 1.1" :
		    "malformed HTTP version";
		return v == 1 ? HTTP_E_VERSION : HTTP_E_BAD;
	}
	return HTTP_OK;
}

enum http_res
http_request_parse(const uint8_t *buf, size_t len, struct http_request *rq)
{
	struct http_span auth = { 0, 0 };
	struct http_facts fa;
	size_t state = 0, hl, eol, i, sp1, sp2;
	enum http_res r;
	int v;

	memset(rq, 0, sizeof(*rq));
	if ((r = http_head_find(buf, len, &state, &hl)) != HTTP_OK) {
		rq->hq_why = r == HTTP_NEED_MORE ? NULL : r == HTTP_E_TOO_LARGE ?
		    "header section too large" : "bare CR, bare LF or NUL";
		/* A request line alone over the limit is 414, not 431. */
		if (r == HTTP_E_TOO_LARGE &&
		    memchr(buf, '\n', HTTP_LINE_MAX) == NULL) {
			rq->hq_why = "request line too long";
			return HTTP_E_URI_TOO_LONG;
		}
		return r;
	}
	rq->hq_head_len = hl;
	if (hl == 2) {
		rq->hq_why = "empty line before the request line";
		return HTTP_E_BAD;
	}
	eol = http_eol(buf, 0, hl);
	if (eol > HTTP_LINE_MAX) {
		rq->hq_why = "request line too long";
		return HTTP_E_URI_TOO_LONG;
	}

	/* method SP request-target SP HTTP-version */
	for (sp1 = 0; sp1 < eol && http_is_tchar(buf[sp1]); sp1++)
		;
	if (sp1 == 0 || sp1 == eol || buf[sp1] != ' ') {
		rq->hq_why = "method not a token";
		return HTTP_E_BAD;
	}
	if (sp1 > HTTP_METHOD_MAX) {
		rq->hq_why = "method too long";
		return HTTP_E_BAD;
	}
	rq->hq_method.off = 0;
	rq->hq_method.len = sp1;
	for (i = 0; i < sizeof(http_methods) / sizeof(http_methods[0]); i++)
		if (strlen(http_methods[i].name) == sp1 &&
		    memcmp(buf, http_methods[i].name, sp1) == 0)
			rq->hq_meth = http_methods[i].m;
	if (sp1 == 7 && memcmp(buf, "CONNECT", 7) == 0) {
		rq->hq_why = "CONNECT inside an inspected connection";
		return HTTP_E_METHOD;
	}
	for (sp2 = sp1 + 1; sp2 < eol && buf[sp2] != ' '; sp2++)
		;
	if (sp2 == sp1 + 1) {
		rq->hq_why = "empty request-target";
		return HTTP_E_BAD;
	}
	if (sp2 == eol) {
		rq->hq_why = "no HTTP version (HTTP/0.9)";
		return HTTP_E_VERSION;
	}
	rq->hq_target.off = sp1 + 1;
	rq->hq_target.len = sp2 - sp1 - 1;
	if ((v = http_version(buf + sp2 + 1, eol - sp2 - 1, &rq->hq_minor)) != 0) {
		rq->hq_why = v == 1 ? "HTTP version not 1.0 or 1.1" :
		    "malformed HTTP version";
		return v == 1 ? HTTP_E_VERSION : HTTP_E_BAD;
	}
	if ((r = http_target_parse(buf, rq, &auth)) != HTTP_OK)
		return r;

	if ((r = http_fields_parse(buf, eol + 2, hl - 2, rq->hq_fields,
	    &rq->hq_nfields, &rq->hq_why)) != HTTP_OK)
		return r;
	if ((r = http_facts_get(buf, rq->hq_fields, rq->hq_nfields, &fa,
	    &rq->hq_why)) != HTTP_OK)
		return r;
	if (fa.nhost == 0 && rq->hq_minor == 1) {
		rq->hq_why = "no Host in an HTTP/1.1 request";
		return HTTP_E_BAD;
	}
	if (fa.nhost == 1 && !http_authority_valid(buf + fa.host.off,
	    fa.host.len)) {
		rq->hq_why = "invalid Host";
		return HTTP_E_BAD;
	}
	rq->hq_host = fa.host;
	if (rq->hq_absolute && (fa.nhost == 0 || auth.len != fa.host.len ||
	    !http_ieq2(buf + auth.off, buf + fa.host.off, auth.len))) {
		rq->hq_why = "absolute-form authority differs from Host";
		return HTTP_E_BAD;
	}
	if (fa.nte > 0 && rq->hq_minor == 0) {
		rq->hq_why = "Transfer-Encoding in an HTTP/1.0 request";
		return HTTP_E_BAD;
	}
	if (fa.expect_other) {
		rq->hq_why = "Expect other than 100-continue";
		return HTTP_E_EXPECT;
	}
	if (fa.nte > 0)
		rq->hq_framing = HTTP_BODY_CHUNKED;
	else if (fa.ncl > 0) {
		rq->hq_framing = HTTP_BODY_LENGTH;
		rq->hq_length = fa.cl;
	} else
		rq->hq_framing = HTTP_BODY_NONE;
	rq->hq_keepalive = rq->hq_minor == 1 ? !fa.conn_close :
	    fa.conn_keepalive && !fa.conn_close;
	rq->hq_websocket = rq->hq_meth == HTTP_M_GET && rq->hq_minor == 1 &&
	    fa.conn_upgrade && fa.upgrade_ws;
	rq->hq_expect_continue = fa.expect_continue;
	return HTTP_OK;
}

/* ---- responses ---- */

enum http_res
http_response_parse(const uint8_t *buf, size_t len, enum http_method req_method,
    struct http_response *rs)
{
	struct http_facts fa;
	size_t state = 0, hl, eol, i;
	enum http_res r;
	int v;

	memset(rs, 0, sizeof(*rs));
	if ((r = http_head_find(buf, len, &state, &hl)) != HTTP_OK) {
		rs->hs_why = r == HTTP_NEED_MORE ? NULL : r == HTTP_E_TOO_LARGE ?
		    "header section too large" : "bare CR, bare LF or NUL";
		return r;
	}
	rs->hs_head_len = hl;
	eol = http_eol(buf, 0, hl);
	/* HTTP-version SP 3DIGIT [ SP reason-phrase ] */
	if (eol < 12 || buf[8] != ' ' || (eol > 12 && buf[12] != ' ')) {
		rs->hs_why = "malformed status line";
		return HTTP_E_BAD;
	}
	if ((v = http_version(buf, 8, &rs->hs_minor)) != 0) {
		rs->hs_why = v == 1 ? "HTTP version not 1.0 or 1.1" :
		    "malformed HTTP version";
		return v == 1 ? HTTP_E_VERSION : HTTP_E_BAD;
	}
	for (i = 9; i < 12; i++) {
		if (buf[i] < '0' || buf[i] > '9') {
			rs->hs_why = "malformed status code";
			return HTTP_E_BAD;
		}
		rs->hs_status = rs->hs_status * 10 + (buf[i] - '0');
	}
	if (rs->hs_status < 100 || rs->hs_status > 599) {
		rs->hs_why = "status code out of range";
		return HTTP_E_BAD;
	}
	rs->hs_reason.off = eol > 12 ? 13 : 12;
	rs->hs_reason.len = eol - rs->hs_reason.off;
	for (i = rs->hs_reason.off; i < eol; i++)
		if (!http_is_vbyte(buf[i])) {
			rs->hs_why = "control byte in the reason phrase";
			return HTTP_E_BAD;
		}
	if ((r = http_fields_parse(buf, eol + 2, hl - 2, rs->hs_fields,
	    &rs->hs_nfields, &rs->hs_why)) != HTTP_OK)
		return r;
	if ((r = http_facts_get(buf, rs->hs_fields, rs->hs_nfields, &fa,
	    &rs->hs_why)) != HTTP_OK)
		return r;
	if (fa.nte > 0 && rs->hs_minor == 0) {
		rs->hs_why = "Transfer-Encoding in an HTTP/1.0 response";
		return HTTP_E_BAD;
	}
	rs->hs_keepalive = rs->hs_minor == 1 ? !fa.conn_close :
	    fa.conn_keepalive && !fa.conn_close;
	if (rs->hs_status == 101) {
		if (!fa.conn_upgrade || !fa.upgrade_ws) {
			rs->hs_why = "101 that is not a websocket upgrade";
			return HTTP_E_BAD;
		}
		rs->hs_switching = 1;
		rs->hs_keepalive = 0;
		rs->hs_framing = HTTP_BODY_NONE;
	} else if (rs->hs_status < 200) {
		rs->hs_interim = 1;
		rs->hs_framing = HTTP_BODY_NONE;
	} else if (rs->hs_status == 204 || rs->hs_status == 304 ||
	    req_method == HTTP_M_HEAD) {
		rs->hs_framing = HTTP_BODY_NONE;
	} else if (fa.nte > 0) {
		rs->hs_framing = HTTP_BODY_CHUNKED;
	} else if (fa.ncl > 0) {
		rs->hs_framing = HTTP_BODY_LENGTH;
		rs->hs_length = fa.cl;
	} else {
		rs->hs_framing = HTTP_BODY_CLOSE;
		rs->hs_keepalive = 0;
	}
	return HTTP_OK;
}

enum http_res
http_connect_reply(const uint8_t *buf, size_t len, size_t max, int *status,
    size_t *used, const char **why)
{
	struct http_response rs;
	size_t off = 0, lim = len < max ? len : max;
	enum http_res r;

	*status = 0;
	*used = 0;
	*why = NULL;
	for (;;) {
		r = http_response_parse(buf + off, lim - off, HTTP_M_HEAD, &rs);
		if (r == HTTP_NEED_MORE && len >= max) {
			*why = "no complete answer within the limit";
			return HTTP_E_TOO_LARGE;
		}
		if (r != HTTP_OK) {
			*why = rs.hs_why;
			return r;
		}
		if (rs.hs_switching) {
			*why = "101 to a CONNECT";
			return HTTP_E_BAD;
		}
		off += rs.hs_head_len;
		if (!rs.hs_interim)
			break;
	}
	*status = rs.hs_status;
	*used = off;
	return HTTP_OK;
}

/* ---- building heads ---- */

static const char *const http_hop_by_hop[] = {
	"connection", "keep-alive", "proxy-connection", "te", "trailer",
	"upgrade", "proxy-authorization", "proxy-authenticate",
	"content-length", "transfer-encoding",
};

/* 1 if the field name[nl] is a token of any Connection field among fields[n]. */
static int
http_named_by_connection(const uint8_t *buf, const struct http_field *f,
    size_t n, const uint8_t *name, size_t nl)
{
	struct http_list_el el;
	size_t i, pos;

	for (i = 0; i < n; i++) {
		if (!http_ieq(buf + f[i].hf_name.off, f[i].hf_name.len,
		    "connection"))
			continue;
		pos = 0;
		while (http_list_next(buf + f[i].hf_value.off,
		    f[i].hf_value.len, &pos, &el))
			if (el.n == nl && http_ieq2(el.p, name, nl))
				return 1;
	}
	return 0;
}

static int
http_hdr_set_valid(const struct http_hdr_set *s)
{
	size_t i;

	if (s->hx_name == NULL || !http_is_token((const uint8_t *)s->hx_name,
	    strlen(s->hx_name)))
		return 0;
	for (i = 0; i < s->hx_value_len; i++)
		if (!http_is_vbyte(s->hx_value[i]))
			return 0;
	return 1;
}

static int
http_add_field(struct http_buf *out, const uint8_t *name, size_t nl,
    const uint8_t *v, size_t vl)
{
	if (http_buf_add(out, name, nl) == -1 || http_buf_add(out, ": ", 2) == -1 ||
	    http_buf_add(out, v, vl) == -1 || http_buf_add(out, "\r\n", 2) == -1)
		return -1;
	return 0;
}

/*
 * Steps 1-4 of struct http_rewrite, after the start line; ends the head.  The head
 * began at out->hb_len == start with nout fields already written (a Host we
 * added): the fields and bytes added here are counted against the limits the
 * parsers enforce (HTTP_FIELDS_MAX, HTTP_HEAD_MAX), so what we emit is always a
 * head we would accept ourselves (EMSGSIZE otherwise).
 */
static int
http_fields_emit(const uint8_t *buf, const struct http_field *f, size_t n,
    const struct http_rewrite *rw, int is_request, struct http_buf *out,
    size_t start, size_t nout)
{
	const uint8_t *name, *v;
	char num[32];
	size_t i, j, nl, vl, k;
	int drop, rc;

	for (j = 0; j < rw->rw_nset; j++)
		if (!http_hdr_set_valid(&rw->rw_set[j])) {
			errno = EINVAL;
			return -1;
		}
	for (i = 0; i < n; i++) {
		name = buf + f[i].hf_name.off;
		nl = f[i].hf_name.len;
		v = buf + f[i].hf_value.off;
		vl = f[i].hf_value.len;
		drop = 0;
		for (k = 0; k < sizeof(http_hop_by_hop) / sizeof(http_hop_by_hop[0]);
		    k++)
			if (http_ieq(name, nl, http_hop_by_hop[k]))
				drop = 1;
		/*
		 * XXX Host is never dropped by a Connection token: an origin
		 * without Host would pick a default virtual host we did not check.
		 */
		if (!drop && !(is_request && http_ieq(name, nl, "host")) &&
		    http_named_by_connection(buf, f, n, name, nl))
			drop = 1;
		for (j = 0; !drop && j < rw->rw_nset; j++)
			if (strlen(rw->rw_set[j].hx_name) == nl &&
			    http_ieq2(name, (const uint8_t *)rw->rw_set[j].hx_name,
			    nl))
				drop = 1;
		for (j = 0; !drop && j < rw->rw_ndrop; j++)
			if (http_ieq(name, nl, rw->rw_drop[j]))
				drop = 1;
		/* The client's claims about who it is or came through (proxy_http.h). */
		for (k = 0; !drop && is_request && http_identity_fields[k] != NULL; k++)
			if (http_ieq(name, nl, http_identity_fields[k]))
				drop = 1;
		if (drop)
			continue;
		nout++;
		if (rw->rw_value_fn != NULL) {
			if (http_buf_add(out, name, nl) == -1 ||
			    http_buf_add(out, ": ", 2) == -1)
				return -1;
			rc = rw->rw_value_fn(rw->rw_value_arg, name, nl, v, vl, out);
			if (rc == -1)
				return -1;
			if ((rc == 0 && http_buf_add(out, v, vl) == -1) ||
			    http_buf_add(out, "\r\n", 2) == -1)
				return -1;
		} else if (http_add_field(out, name, nl, v, vl) == -1)
			return -1;
	}
	for (j = 0; j < rw->rw_nset; j++)
		if (http_add_field(out, (const uint8_t *)rw->rw_set[j].hx_name,
		    strlen(rw->rw_set[j].hx_name), rw->rw_set[j].hx_value,
		    rw->rw_set[j].hx_value_len) == -1)
			return -1;
	/* Framing (0 or 1 field) and Connection (1, or 2 with Upgrade). */
	nout += rw->rw_nset + (rw->rw_framing == HTTP_BODY_LENGTH ||
	    rw->rw_framing == HTTP_BODY_CHUNKED) + (rw->rw_upgrade ? 2 : 1);
	if (nout > HTTP_FIELDS_MAX) {
		errno = EMSGSIZE;
		return -1;
	}
	switch (rw->rw_framing) {
	case HTTP_BODY_LENGTH:
		snprintf(num, sizeof(num), "%llu",
		    (unsigned long long)rw->rw_length);
		if (http_add_field(out, (const uint8_t *)"Content-Length", 14,
		    (const uint8_t *)num, strlen(num)) == -1)
			return -1;
		break;
	case HTTP_BODY_CHUNKED:
		if (http_buf_add_str(out, "Transfer-Encoding: chunked\r\n") == -1)
			return -1;
		break;
	case HTTP_BODY_NONE:
	case HTTP_BODY_CLOSE:
		break;
	}
	if (rw->rw_upgrade) {
		if (http_buf_add_str(out,
		    "Connection: upgrade\r\nUpgrade: websocket\r\n") == -1)
			return -1;
	} else if (http_buf_add_str(out, rw->rw_close ? "Connection: close\r\n" :
	    "Connection: keep-alive\r\n") == -1)
		return -1;
	if (http_buf_add(out, "\r\n", 2) == -1)
		return -1;
	if (out->hb_len - start > HTTP_HEAD_MAX) {
		errno = EMSGSIZE;
		return -1;
	}
	return 0;
}

int
http_request_rewrite(const uint8_t *buf, const struct http_request *rq,
    const struct http_rewrite *rw, struct http_buf *out)
{
	size_t start = out->hb_len, nout = 0;

	if (http_buf_add(out, buf + rq->hq_method.off, rq->hq_method.len) == -1 ||
	    http_buf_add(out, " ", 1) == -1)
		return -1;
	if (rq->hq_absolute) {
		if ((rq->hq_path.len == 0 ? http_buf_add(out, "/", 1) :
		    http_buf_add(out, buf + rq->hq_path.off, rq->hq_path.len)) == -1)
			return -1;
		if (rq->hq_has_query && (http_buf_add(out, "?", 1) == -1 ||
		    http_buf_add(out, buf + rq->hq_query.off,
		    rq->hq_query.len) == -1))
			return -1;
	} else if (http_buf_add(out, buf + rq->hq_target.off,
	    rq->hq_target.len) == -1)
		return -1;
	if (http_buf_add_str(out, " HTTP/1.1\r\n") == -1)
		return -1;
	if (rq->hq_host.len == 0) {
		if (rw->rw_host == NULL || !http_authority_valid(
		    (const uint8_t *)rw->rw_host, strlen(rw->rw_host))) {
			errno = EINVAL;
			return -1;
		}
		if (http_add_field(out, (const uint8_t *)"Host", 4,
		    (const uint8_t *)rw->rw_host, strlen(rw->rw_host)) == -1)
			return -1;
		nout = 1;
	}
	return http_fields_emit(buf, rq->hq_fields, rq->hq_nfields, rw, 1, out,
	    start, nout);
}

int
http_response_rewrite(const uint8_t *buf, const struct http_response *rs,
    const struct http_rewrite *rw, struct http_buf *out)
{
	size_t start = out->hb_len;
	char line[32];

	snprintf(line, sizeof(line), "HTTP/1.1 %03d ", rs->hs_status);
	if (http_buf_add_str(out, line) == -1 ||
	    http_buf_add(out, buf + rs->hs_reason.off, rs->hs_reason.len) == -1 ||
	    http_buf_add(out, "\r\n", 2) == -1)
		return -1;
	return http_fields_emit(buf, rs->hs_fields, rs->hs_nfields, rw, 0, out,
	    start, 0);
}

/* ---- chunked ---- */

enum {
	HC_SIZE0 = 0,		/* first hex digit of a size */
	HC_SIZE,		/* more digits, BWS, ';' or CR */
	HC_EXT_BWS,		/* whitespace after the size: only ';' may follow */
	HC_EXT,			/* extension bytes until CR */
	HC_SIZE_LF,
	HC_DATA,
	HC_DATA_CR,
	HC_DATA_LF,
	HC_TR_LINE,		/* start of a trailer line, or the final CRLF */
	HC_TR_NAME,
	HC_TR_VALUE,
	HC_TR_VALUE_LF,
	HC_TR_END_LF,
	HC_DONE,
	HC_ERR,
};

void
http_chunked_init(struct http_chunked *c)
{
	memset(c, 0, sizeof(*c));
	c->hc_state = HC_SIZE0;
}

static enum http_res
http_chunked_fail(struct http_chunked *c, const char *why)
{
	c->hc_state = HC_ERR;
	c->hc_why = why;
	return HTTP_E_BAD;
}

enum http_res
http_chunked_feed(struct http_chunked *c, const uint8_t *in, size_t len,
    size_t *consumed, struct http_span *data)
{
	size_t i = 0, take;
	uint8_t b;
	int h;

	*consumed = 0;
	data->off = 0;
	data->len = 0;
	if (c->hc_state == HC_DONE)
		return HTTP_OK;
	if (c->hc_state == HC_ERR)
		return HTTP_E_BAD;
	while (i < len) {
		b = in[i];
		if (c->hc_state >= HC_TR_LINE && ++c->hc_trailer > HTTP_TRAILER_MAX)
			return http_chunked_fail(c, "trailer section too large");
		switch (c->hc_state) {
		case HC_SIZE0:
		case HC_SIZE:
			if ((h = hexdig_val(b)) != -1) {
				if (++c->hc_digits > 16)
					return http_chunked_fail(c,
					    "chunk size over 16 hex digits");
				c->hc_left = c->hc_left << 4 | (uint64_t)h;
				c->hc_state = HC_SIZE;
			} else if (c->hc_state == HC_SIZE0)
				return http_chunked_fail(c,
				    "chunk size empty or not hex");
			else if (b == '\r')
				c->hc_state = HC_SIZE_LF;
			else if (b == ';')
				c->hc_state = HC_EXT;
			else if (http_is_ows(b))
				c->hc_state = HC_EXT_BWS;
			else
				return http_chunked_fail(c,
				    "junk after the chunk size");
			break;
		case HC_EXT_BWS:
			if (++c->hc_ext > HTTP_CHUNK_EXT_MAX)
				return http_chunked_fail(c,
				    "chunk extensions too long");
			if (b == ';')
				c->hc_state = HC_EXT;
			else if (!http_is_ows(b))
				return http_chunked_fail(c,
				    "junk after the chunk size");
			break;
		case HC_EXT:
			if (++c->hc_ext > HTTP_CHUNK_EXT_MAX)
				return http_chunked_fail(c,
				    "chunk extensions too long");
			if (b == '\r')
				c->hc_state = HC_SIZE_LF;
			else if (!http_is_vbyte(b))
				return http_chunked_fail(c,
				    "control byte in a chunk extension");
			break;
		case HC_SIZE_LF:
			if (b != '\n')
				return http_chunked_fail(c,
				    "chunk size line not ended by CRLF");
			c->hc_digits = 0;
			c->hc_ext = 0;
			c->hc_state = c->hc_left == 0 ? HC_TR_LINE : HC_DATA;
			break;
		case HC_DATA:
			take = len - i;
			if ((uint64_t)take > c->hc_left)
				take = (size_t)c->hc_left;
			data->off = i;
			data->len = take;
			c->hc_left -= take;
			c->hc_total += take;
			if (c->hc_left == 0)
				c->hc_state = HC_DATA_CR;
			*consumed = i + take;
			return HTTP_NEED_MORE;
		case HC_DATA_CR:
			if (b != '\r')
				return http_chunked_fail(c,
				    "chunk data not followed by CRLF");
			c->hc_state = HC_DATA_LF;
			break;
		case HC_DATA_LF:
			if (b != '\n')
				return http_chunked_fail(c,
				    "chunk data not followed by CRLF");
			c->hc_state = HC_SIZE0;
			break;
		case HC_TR_LINE:
			if (b == '\r')
				c->hc_state = HC_TR_END_LF;
			else if (http_is_tchar(b)) {
				if (++c->hc_nfields > HTTP_TRAILER_FIELDS_MAX)
					return http_chunked_fail(c,
					    "too many trailer fields");
				c->hc_state = HC_TR_NAME;
			} else
				return http_chunked_fail(c,
				    "malformed trailer field (or obs-fold)");
			break;
		case HC_TR_NAME:
			if (b == ':')
				c->hc_state = HC_TR_VALUE;
			else if (!http_is_tchar(b))
				return http_chunked_fail(c,
				    "malformed trailer field name");
			break;
		case HC_TR_VALUE:
			if (b == '\r')
				c->hc_state = HC_TR_VALUE_LF;
			else if (!http_is_vbyte(b))
				return http_chunked_fail(c,
				    "control byte in a trailer field");
			break;
		case HC_TR_VALUE_LF:
			if (b != '\n')
				return http_chunked_fail(c,
				    "trailer line not ended by CRLF");
			c->hc_state = HC_TR_LINE;
			break;
		case HC_TR_END_LF:
			if (b != '\n')
				return http_chunked_fail(c,
				    "trailer section not ended by CRLF");
			c->hc_state = HC_DONE;
			*consumed = i + 1;
			return HTTP_OK;
		default:
			return http_chunked_fail(c, "internal state");
		}
		i++;
	}
	*consumed = i;
	return HTTP_NEED_MORE;
}
