/*
 * policies/policy_load.c: validates one policy document against the schema of
 * policies/SCHEMA.md and builds the immutable struct policy of include/policy.h
 * (policy_layers.c reads the files, follows "base" and merges the documents).
 *
 * jansson parses (rejecting duplicate keys); the document is then walked by hand,
 * not with json_unpack, so that every error of the file is collected with its JSON
 * path and reason instead of stopping at the first.  jansson keeps no position per
 * value, so the position of an error's path is found by re-scanning the (already
 * valid) text: cheap, and only done for errors.  No jansson type leaves this file.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "hexdig.h"
#include "hostname.h"
#include "jsonpath.h"
#include "netaddr.h"
#include "policy.h"
#include "policy_int.h"
#include "upstream.h"

#define PL_DEPTH_MAX	8	/* deepest schema path: $.rules[i].inject[j].x */
#define PL_NAME_MAX	64	/* policy name, rule id, secret name */
#define PL_METHOD_MAX	32
#define PL_METHODS_MAX	64
#define PL_PATHS_MAX	256
#define PL_INJECT_MAX	16
#define PL_HEADER_MAX	64
#define PL_VALUE_MAX	1024

/* One component of the JSON path being validated: a key, or an array index. */
struct pl_comp {
	const char	*key;		/* NULL: idx */
	size_t		 idx;
};

struct pl_ctx {
	const char	*name;		/* file name for errors */
	const char	*buf;		/* the document, to locate paths */
	size_t		 len;
	struct policy_errors *errs;	/* may be NULL */
	size_t		 base;		/* errs->n when this load started */
	size_t		 nerr;		/* of the whole load (pl_doc_load()) */
	size_t		 nerr0;		/* nerr when this document started */
	int		 full;		/* POLICY_ERRORS_MAX reached */
	struct pl_comp	 comp[PL_DEPTH_MAX];
	size_t		 depth;
};

/*
 * Copies s into dst for an error message: printable ASCII stays ('"' and '\'
 * get a backslash), anything else becomes \xNN, and long strings are cut with
 * "...".  Error text goes to terminals
 * and logs, so no control byte of the input may reach it.
 */
const char *
pl_quote(char *dst, size_t dstlen, const char *s, size_t slen)
{
	size_t i, o = 0;
	unsigned char c;

	for (i = 0; i < slen; i++) {
		c = (unsigned char)s[i];
		if (o + 8 >= dstlen) {
			memcpy(dst + o, "...", 3);
			o += 3;
			break;
		}
		if (c < 0x20 || c >= 0x7f)
			o += (size_t)snprintf(dst + o, dstlen - o, "\\x%02x", c);
		else if (c == '"' || c == '\\') {
			dst[o++] = '\\';
			dst[o++] = (char)c;
		} else
			dst[o++] = (char)c;
	}
	dst[o] = '\0';
	return dst;
}

/* Undoes pl_quote()'s backslash before '"' and '\\' (for jansson's own text). */
static void
pl_unescape_quotes(char *s)
{
	char *o = s;

	for (; *s != '\0'; s++) {
		if (s[0] == '\\' && (s[1] == '"' || s[1] == '\\'))
			s++;
		*o++ = *s;
	}
	*o = '\0';
}

/* "$.rules[2].ports[0]"; keys that are not identifiers as ["..."]. */
static void
pl_path_fmt(const struct pl_ctx *c, char *buf, size_t len)
{
	char q[96];
	size_t i, o;

	o = (size_t)snprintf(buf, len, "$");
	for (i = 0; i < c->depth && i < PL_DEPTH_MAX && o < len; i++) {
		if (c->comp[i].key == NULL)
			o += (size_t)snprintf(buf + o, len - o, "[%zu]",
			    c->comp[i].idx);
		else if (json_key_is_ident(c->comp[i].key))
			o += (size_t)snprintf(buf + o, len - o, ".%s",
			    c->comp[i].key);
		else
			o += (size_t)snprintf(buf + o, len - o, "[\"%s\"]",
			    pl_quote(q, sizeof(q), c->comp[i].key,
			    strlen(c->comp[i].key)));
	}
}

static void
pl_push_key(struct pl_ctx *c, const char *key)
{
	if (c->depth < PL_DEPTH_MAX) {
		c->comp[c->depth].key = key;
		c->comp[c->depth].idx = 0;
	}
	c->depth++;
}

static void
pl_push_idx(struct pl_ctx *c, size_t idx)
{
	if (c->depth < PL_DEPTH_MAX) {
		c->comp[c->depth].key = NULL;
		c->comp[c->depth].idx = idx;
	}
	c->depth++;
}

static void
pl_pop(struct pl_ctx *c)
{
	c->depth--;
}

/* ---- locating a path in the text ---------------------------------------- */

struct pl_scan {
	const char	*p;
	const char	*end;
};

static void
pl_scan_ws(struct pl_scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' ||
	    *s->p == '\n' || *s->p == '\r'))
		s->p++;
}

static int
pl_scan_hex4(const char *p, const char *end, unsigned long *v)
{
	int i, d;

	if (end - p < 4)
		return -1;
	*v = 0;
	for (i = 0; i < 4; i++) {
		if ((d = hexdig_val((unsigned char)p[i])) == -1)
			return -1;
		*v = *v << 4 | (unsigned long)d;
	}
	return 0;
}

/*
 * Reads the string at s->p (at its opening quote), decoding escapes, and compares it
 * with want (which may be NULL: just skip).  Returns 1 equal, 0 different, -1 bad.
 */
static int
pl_scan_string(struct pl_scan *s, const char *want)
{
	unsigned char u[4];
	unsigned long cp, lo;
	size_t wi = 0, n, k;
	int eq = 1;

	if (s->p >= s->end || *s->p != '"')
		return -1;
	s->p++;
	while (s->p < s->end && *s->p != '"') {
		if (*s->p != '\\') {
			u[0] = (unsigned char)*s->p++;
			n = 1;
		} else {
			if (++s->p >= s->end)
				return -1;
			switch (*s->p++) {
			case '"': u[0] = '"'; n = 1; break;
			case '\\': u[0] = '\\'; n = 1; break;
			case '/': u[0] = '/'; n = 1; break;
			case 'b': u[0] = '\b'; n = 1; break;
			case 'f': u[0] = '\f'; n = 1; break;
			case 'n': u[0] = '\n'; n = 1; break;
			case 'r': u[0] = '\r'; n = 1; break;
			case 't': u[0] = '\t'; n = 1; break;
			case 'u':
				if (pl_scan_hex4(s->p, s->end, &cp) == -1)
					return -1;
				s->p += 4;
				if (cp >= 0xd800 && cp <= 0xdbff) {
					if (s->end - s->p < 6 || s->p[0] != '\\' ||
					    s->p[1] != 'u' || pl_scan_hex4(s->p + 2,
					    s->end, &lo) == -1)
						return -1;
					s->p += 6;
					cp = 0x10000 + ((cp - 0xd800) << 10) +
					    (lo - 0xdc00);
				}
				if (cp < 0x80) {
					u[0] = (unsigned char)cp;
					n = 1;
				} else if (cp < 0x800) {
					u[0] = (unsigned char)(0xc0 | cp >> 6);
					u[1] = (unsigned char)(0x80 | (cp & 0x3f));
					n = 2;
				} else if (cp < 0x10000) {
					u[0] = (unsigned char)(0xe0 | cp >> 12);
					u[1] = (unsigned char)(0x80 |
					    (cp >> 6 & 0x3f));
					u[2] = (unsigned char)(0x80 | (cp & 0x3f));
					n = 3;
				} else {
					u[0] = (unsigned char)(0xf0 | cp >> 18);
					u[1] = (unsigned char)(0x80 |
					    (cp >> 12 & 0x3f));
					u[2] = (unsigned char)(0x80 |
					    (cp >> 6 & 0x3f));
					u[3] = (unsigned char)(0x80 | (cp & 0x3f));
					n = 4;
				}
				break;
			default:
				return -1;
			}
		}
		if (want != NULL && eq) {
			for (k = 0; k < n; k++, wi++)
				if (want[wi] == '\0' ||
				    (unsigned char)want[wi] != u[k]) {
					eq = 0;
					break;
				}
		}
	}
	if (s->p >= s->end)
		return -1;
	s->p++;
	return want != NULL && eq && want[wi] == '\0';
}

/* Skips one value (the text is known to be valid JSON). */
static int
pl_scan_skip(struct pl_scan *s)
{
	size_t nest = 0;

	do {
		pl_scan_ws(s);
		if (s->p >= s->end)
			return -1;
		switch (*s->p) {
		case '"':
			if (pl_scan_string(s, NULL) == -1)
				return -1;
			break;
		case '{':
		case '[':
			nest++;
			s->p++;
			break;
		case '}':
		case ']':
			if (nest == 0)
				return -1;
			nest--;
			s->p++;
			break;
		case ',':
		case ':':
			s->p++;
			break;
		default:
			/*
			 * A scalar.  jansson lets a NUL byte trail a scalar
			 * ("[1\0]" parses), so NUL is not a terminator here:
			 * always make progress.
			 */
			do
				s->p++;
			while (s->p < s->end && (*s->p == '\0' ||
			    strchr(",}] \t\r\n", *s->p) == NULL));
			break;
		}
	} while (nest > 0);
	return 0;
}

/* Byte offset of the current path's key (or value) in the text, or -1. */
static long
pl_locate_off(const struct pl_ctx *c)
{
	struct pl_scan s = { c->buf, c->buf + c->len };
	const char *at, *keyat;
	size_t i, n;
	int eq;

	if (c->buf == NULL || c->depth > PL_DEPTH_MAX)
		return -1;
	pl_scan_ws(&s);
	at = s.p;
	for (i = 0; i < c->depth; i++) {
		if (s.p >= s.end)
			return -1;
		if (c->comp[i].key != NULL) {
			if (*s.p != '{')
				return -1;
			s.p++;
			for (;;) {
				pl_scan_ws(&s);
				if (s.p >= s.end || *s.p != '"')
					return -1;
				keyat = s.p;
				if ((eq = pl_scan_string(&s, c->comp[i].key)) == -1)
					return -1;
				pl_scan_ws(&s);
				if (s.p >= s.end || *s.p != ':')
					return -1;
				s.p++;
				pl_scan_ws(&s);
				if (eq) {
					at = keyat;	/* point at the key */
					break;
				}
				if (pl_scan_skip(&s) == -1)
					return -1;
				pl_scan_ws(&s);
				if (s.p >= s.end || *s.p != ',')
					return -1;
				s.p++;
			}
		} else {
			if (*s.p != '[')
				return -1;
			s.p++;
			for (n = 0;; n++) {
				pl_scan_ws(&s);
				if (s.p >= s.end || *s.p == ']')
					return -1;
				if (n == c->comp[i].idx) {
					at = s.p;
					break;
				}
				if (pl_scan_skip(&s) == -1)
					return -1;
				pl_scan_ws(&s);
				if (s.p >= s.end || *s.p != ',')
					return -1;
				s.p++;
			}
		}
	}
	return at - c->buf;
}

/* Line and column (1-based, characters like jansson counts them) of the path. */
static void
pl_locate(const struct pl_ctx *c, int *line, int *col)
{
	long off, i;

	*line = *col = 0;
	if ((off = pl_locate_off(c)) == -1)
		return;
	*line = 1;
	*col = 1;
	for (i = 0; i < off; i++) {
		if (c->buf[i] == '\n') {
			(*line)++;
			*col = 1;
		} else if (((unsigned char)c->buf[i] & 0xc0) != 0x80)
			(*col)++;
	}
}

/* ---- errors --------------------------------------------------------------- */

static void
pl_add(struct pl_ctx *c, const char *path, int line, int col, const char *reason)
{
	struct policy_error *v, *e;
	struct policy_errors *errs = c->errs;

	c->nerr++;
	if (errs == NULL)
		return;
	if ((v = reallocarray(errs->v, errs->n + 1, sizeof(*v))) == NULL)
		return;	/* nerr still says the policy is bad */
	errs->v = v;
	e = &v[errs->n];
	memset(e, 0, sizeof(*e));
	e->pe_file = strdup(c->name);
	e->pe_path = path != NULL ? strdup(path) : NULL;
	e->pe_line = line;
	e->pe_column = col;
	e->pe_reason = strdup(reason);
	if (e->pe_file == NULL || (path != NULL && e->pe_path == NULL) ||
	    e->pe_reason == NULL) {
		free(e->pe_file);
		free(e->pe_path);
		free(e->pe_reason);
		return;
	}
	errs->n++;
}

static void
pl_verr(struct pl_ctx *c, const char *fmt, va_list ap)
{
	char path[512], reason[512];
	int line, col;

	if (c->full)
		return;
	if (c->nerr + 1 >= POLICY_ERRORS_MAX) {
		c->full = 1;
		pl_add(c, NULL, 0, 0, "too many errors, giving up");
		return;
	}
	vsnprintf(reason, sizeof(reason), fmt, ap);
	pl_path_fmt(c, path, sizeof(path));
	pl_locate(c, &line, &col);
	pl_add(c, path, line, col, reason);
}

static void __attribute__((format(printf, 2, 3)))
pl_err(struct pl_ctx *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	pl_verr(c, fmt, ap);
	va_end(ap);
}

static void __attribute__((format(printf, 3, 4)))
pl_err_key(struct pl_ctx *c, const char *key, const char *fmt, ...)
{
	va_list ap;

	pl_push_key(c, key);
	va_start(ap, fmt);
	pl_verr(c, fmt, ap);
	va_end(ap);
	pl_pop(c);
}

void
pl_verr_at(struct policy_errors *errs, size_t *nerr, const char *name,
    const char *buf, size_t len, const char *key, long idx, const char *fmt,
    va_list ap)
{
	struct pl_ctx c;

	memset(&c, 0, sizeof(c));
	c.name = name;
	c.buf = buf;
	c.len = len;
	c.errs = errs;
	c.nerr = *nerr;
	c.full = *nerr >= POLICY_ERRORS_MAX;
	pl_push_key(&c, key);
	if (idx >= 0)
		pl_push_idx(&c, (size_t)idx);
	pl_verr(&c, fmt, ap);
	*nerr = c.nerr;
}

void
pl_err_file(struct policy_errors *errs, size_t *nerr, const char *name,
    const char *reason)
{
	struct pl_ctx c;

	memset(&c, 0, sizeof(c));
	c.name = name;
	c.errs = errs;
	c.nerr = *nerr;
	pl_add(&c, NULL, 0, 0, reason);
	*nerr = c.nerr;
}

/* Errors in document order (missing keys point at their object). */
static void
pl_sort(struct pl_ctx *c)
{
	struct policy_error t, *v;
	size_t i, j;

	if (c->errs == NULL || c->errs->n <= c->base + 1)
		return;
	v = c->errs->v;
	for (i = c->base + 1; i < c->errs->n; i++) {
		t = v[i];
		if (t.pe_line == 0)
			continue;
		for (j = i; j > c->base && v[j - 1].pe_line != 0 &&
		    (v[j - 1].pe_line > t.pe_line ||
		    (v[j - 1].pe_line == t.pe_line &&
		    v[j - 1].pe_column > t.pe_column)); j--)
			v[j] = v[j - 1];
		v[j] = t;
	}
}

/* ---- value helpers -------------------------------------------------------- */

static const char *
pl_type(const json_t *j)
{
	switch (json_typeof(j)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
		return "an integer";
	case JSON_REAL:
		return "a number with a fraction or exponent";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	case JSON_NULL:
		return "null";
	}
	return "unknown";
}

/* Reports every key of obj not in allowed (NULL-terminated).  Returns the count. */
static size_t
pl_unknown_keys(struct pl_ctx *c, json_t *obj, const char *const *allowed,
    const char *what)
{
	const char *key;
	json_t *val;
	char q[96];
	size_t i, n = 0;

	json_object_foreach(obj, key, val) {
		for (i = 0; allowed[i] != NULL; i++)
			if (strcmp(key, allowed[i]) == 0)
				break;
		if (allowed[i] != NULL)
			continue;
		pl_err_key(c, key, "unknown key \"%s\" in %s", pl_quote(q,
		    sizeof(q), key, strlen(key)), what);
		n++;
	}
	return n;
}

/* [A-Za-z0-9._-]{1,max} */
static int
pl_is_name(const char *s, size_t max)
{
	size_t i;

	for (i = 0; s[i] != '\0'; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' &&
		    s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
		    s[i] == '.' || s[i] == '_' || s[i] == '-'))
			return 0;
	return i >= 1 && i <= max;
}

/* RFC 9110 5.6.2 tchar. */
static int
pl_is_tchar(int ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
	    (ch >= '0' && ch <= '9') || (ch != '\0' &&
	    strchr("!#$%&'*+-.^_`|~", ch) != NULL);
}

static int
pl_is_token(const char *s, size_t max)
{
	size_t i;

	for (i = 0; s[i] != '\0'; i++)
		if (!pl_is_tchar((unsigned char)s[i]))
			return 0;
	return i >= 1 && i <= max;
}

/*
 * A string member: NULL (and no error) when absent; NULL with an error on a wrong
 * type; the borrowed string otherwise.  *present says whether the key was there.
 */
static const char *
pl_get_string(struct pl_ctx *c, json_t *obj, const char *key, int *present)
{
	json_t *j;

	if ((j = json_object_get(obj, key)) == NULL) {
		if (present != NULL)
			*present = 0;
		return NULL;
	}
	if (present != NULL)
		*present = 1;
	if (!json_is_string(j)) {
		pl_err_key(c, key, "must be a string, not %s", pl_type(j));
		return NULL;
	}
	return json_string_value(j);
}

/*
 * The value in t of the string member key, or def when it is absent or not a name
 * of t (an error that says it is not <what>).  *present as for pl_get_string().
 */
static int
pl_get_enum(struct pl_ctx *c, json_t *obj, const char *key,
    const struct strtab *t, int def, const char *what, int *present)
{
	const char *s;
	char q[96];
	int v = def;

	if ((s = pl_get_string(c, obj, key, present)) != NULL &&
	    strtab_value(t, s, &v) == -1)
		pl_err_key(c, key, "\"%s\" is not %s", pl_quote(q, sizeof(q), s,
		    strlen(s)), what);
	return v;
}

/* An array member that must be non-empty and at most max long; NULL otherwise. */
static json_t *
pl_get_array(struct pl_ctx *c, json_t *obj, const char *key, size_t max)
{
	json_t *j;

	if ((j = json_object_get(obj, key)) == NULL)
		return NULL;
	if (!json_is_array(j)) {
		pl_err_key(c, key, "must be an array, not %s", pl_type(j));
		return NULL;
	}
	if (json_array_size(j) == 0) {
		pl_err_key(c, key, "must not be empty");
		return NULL;
	}
	if (json_array_size(j) > max) {
		pl_err_key(c, key, "too many entries (at most %zu)", max);
		return NULL;
	}
	return j;
}

/*
 * A required string member that must be a name (pl_is_name): the borrowed string,
 * or NULL after an error (missing, not a string, not a name).  hint follows the
 * "missing required key" message; what and class describe a bad value:
 * "\"x\" is not WHAT (CLASS, 1..64 characters)".
 */
static const char *
pl_get_name(struct pl_ctx *c, json_t *obj, const char *key, const char *hint,
    const char *what, const char *class)
{
	const char *s;
	char q[96];
	int present;

	s = pl_get_string(c, obj, key, &present);
	if (!present)
		pl_err(c, "missing required key \"%s\"%s", key, hint);
	else if (s != NULL && !pl_is_name(s, PL_NAME_MAX)) {
		pl_err_key(c, key, "\"%s\" is not %s (%s, 1..%d characters)",
		    pl_quote(q, sizeof(q), s, strlen(s)), what, class,
		    PL_NAME_MAX);
		s = NULL;
	}
	return s;
}

static int
pl_strdup(struct pl_ctx *c, char **dst, const char *s)
{
	if ((*dst = strdup(s)) == NULL) {
		pl_err(c, "out of memory");
		return -1;
	}
	return 0;
}

/* ---- the schema ----------------------------------------------------------- */

static const char *const pl_top_keys[] = { "policy", "base", "mode", "unknown", "rules",
    "limits", "upstream_proxy", NULL };
static const char *const pl_rule_keys[] = { "id", "action", "host", "cidr",
    "ports", "protocol", "tls", "http", "inject", NULL };
static const char *const pl_http_keys[] = { "methods", "paths", "websocket",
    "forwarded", NULL };
static const char *const pl_inject_keys[] = { "secret", "header", "value",
    NULL };
static const char *const pl_upstream_keys[] = { "url", "auth", NULL };
static const char *const pl_limit_keys[] = { "connections",
    "connections_per_second", "requests_per_second", "bytes_per_second",
    "h2_streams", "h2_resets_per_second", "h2_control_per_second", NULL };

/* Header names a policy may not set: hop-by-hop, framing, routing. */
static const char *const pl_bad_headers[] = { "host", "content-length",
    "transfer-encoding", "connection", "upgrade", "te", "trailer",
    "keep-alive", NULL };

static void
pl_limits(struct pl_ctx *c, json_t *obj, struct policy_limits *l)
{
	json_t *j;
	json_int_t v;
	size_t i;
	uint64_t max;
	int h2;

	if (!json_is_object(obj)) {
		pl_err(c, "must be an object, not %s", pl_type(obj));
		return;
	}
	pl_unknown_keys(c, obj, pl_limit_keys, "limits");
	for (i = 0; pl_limit_keys[i] != NULL; i++) {
		if ((j = json_object_get(obj, pl_limit_keys[i])) == NULL)
			continue;
		if (!json_is_integer(j)) {
			pl_err_key(c, pl_limit_keys[i],
			    "must be a non-negative integer, not %s", pl_type(j));
			continue;
		}
		v = json_integer_value(j);
		/* The HTTP/2 ones may only lower airlock's own limit (0: keep it). */
		h2 = strncmp(pl_limit_keys[i], "h2_", 3) == 0;
		max = strcmp(pl_limit_keys[i], "bytes_per_second") == 0 ?
		    (uint64_t)INT64_MAX : h2 ? POLICY_H2_LIMIT_MAX : UINT32_MAX;
		if (v < 0 || (uint64_t)v > max) {
			pl_err_key(c, pl_limit_keys[i],
			    "must be between 0 and %llu (0: %s)",
			    (unsigned long long)max, h2 ? "the default" : "unlimited");
			continue;
		}
		if (strcmp(pl_limit_keys[i], "connections") == 0)
			l->pl_connections = (uint32_t)v;
		else if (strcmp(pl_limit_keys[i], "connections_per_second") == 0)
			l->pl_connections_per_second = (uint32_t)v;
		else if (strcmp(pl_limit_keys[i], "requests_per_second") == 0)
			l->pl_requests_per_second = (uint32_t)v;
		else if (strcmp(pl_limit_keys[i], "h2_streams") == 0)
			l->pl_h2_streams = (uint32_t)v;
		else if (strcmp(pl_limit_keys[i], "h2_resets_per_second") == 0)
			l->pl_h2_resets_per_second = (uint32_t)v;
		else if (strcmp(pl_limit_keys[i], "h2_control_per_second") == 0)
			l->pl_h2_control_per_second = (uint32_t)v;
		else
			l->pl_bytes_per_second = (uint64_t)v;
	}
}

/*
 * "upstream_proxy": "direct", or {"url": "http://HOST:PORT", "auth": null |
 * "SECRET"} (lib/upstream.c parses the URL for airlock.json too).  No message
 * quotes the URL: someone may have written a password into it.  Whether the vault
 * holds the secret, bound to the proxy's name, is airlockd's check at load.
 */
static void
pl_upstream(struct pl_ctx *c, json_t *obj, struct policy *p)
{
	struct upstream_proxy *up = &p->p_upstream_proxy;
	const char *url, *auth, *why;
	json_t *j;
	int present;

	if (json_is_string(obj) && strcmp(json_string_value(obj), "direct") == 0 &&
	    json_string_length(obj) == 6) {
		p->p_upstream = POLICY_UPSTREAM_DIRECT;
		return;
	}
	if (!json_is_object(obj)) {
		pl_err(c, "must be \"direct\" or an object ({\"url\": "
		    "\"http://HOST:PORT\", \"auth\": null}), not %s%s",
		    pl_type(obj), json_is_string(obj) ? " other than \"direct\"" :
		    "");
		return;
	}
	p->p_upstream = POLICY_UPSTREAM_PROXY;
	pl_unknown_keys(c, obj, pl_upstream_keys, "upstream_proxy");
	url = pl_get_string(c, obj, "url", &present);
	if (!present)
		pl_err(c, "missing required key \"url\" (\"http://HOST:PORT\")");
	else if (url != NULL && upstream_url_parse(url,
	    json_string_length(json_object_get(obj, "url")), up, &why) == -1)
		pl_err_key(c, "url", "%s", why);
	if ((j = json_object_get(obj, "auth")) == NULL || json_is_null(j))
		return;
	if (!json_is_string(j) || !upstream_auth_is_valid(json_string_value(j),
	    json_string_length(j))) {
		pl_err_key(c, "auth", "must be null or a vault secret's name (1..%d "
		    "of A-Z a-z 0-9 _ . -, starting with a letter or digit)",
		    UPSTREAM_AUTH_MAX);
		return;
	}
	auth = json_string_value(j);
	if (url != NULL && up->up_host[0] != '\0' && up->up_is_addr) {
		pl_err_key(c, "auth", "credentials need the proxy named by a host "
		    "name in \"url\": the vault binds the secret to that name "
		    "(vault put --host), never to an address");
		return;
	}
	memcpy(up->up_auth, auth, strlen(auth) + 1);
}

static int
pl_port_cmp(const void *a, const void *b)
{
	uint16_t x = *(const uint16_t *)a, y = *(const uint16_t *)b;

	return (x > y) - (x < y);
}

static void
pl_ports(struct pl_ctx *c, json_t *arr, struct policy_rule *r)
{
	unsigned char seen[65536 / 8];
	json_t *j;
	json_int_t v;
	size_t i, n;
	int bad = 0;

	memset(seen, 0, sizeof(seen));
	n = json_array_size(arr);
	if ((r->pr_ports = calloc(n, sizeof(*r->pr_ports))) == NULL) {
		pl_err_key(c, "ports", "out of memory");
		return;
	}
	pl_push_key(c, "ports");
	json_array_foreach(arr, i, j) {
		pl_push_idx(c, i);
		if (!json_is_integer(j))
			pl_err(c, "a port must be an integer, not %s", pl_type(j));
		else if ((v = json_integer_value(j)) < 1 || v > 65535)
			pl_err(c, "port %lld is out of range (1..65535)",
			    (long long)v);
		else if (seen[v / 8] & (1 << (v % 8)))
			pl_err(c, "duplicate port %lld", (long long)v);
		else {
			seen[v / 8] |= (unsigned char)(1 << (v % 8));
			r->pr_ports[r->pr_nports++] = (uint16_t)v;
			pl_pop(c);
			continue;
		}
		bad = 1;
		pl_pop(c);
	}
	pl_pop(c);
	/* Sorted, so that equal sets compare with memcmp (pl_shadowed()). */
	if (!bad)
		qsort(r->pr_ports, r->pr_nports, sizeof(*r->pr_ports),
		    pl_port_cmp);
}

/*
 * A glob is written in the normalised form of the paths it is matched against
 * (otherwise it could never match), with "**" only as a whole segment.
 */
static void
pl_glob(struct pl_ctx *c, const char *g)
{
	char norm[POLICY_GLOB_MAX + 1], q[96];
	const char *seg, *end;
	size_t len = strlen(g);

	if (len == 0 || g[0] != '/') {
		pl_err(c, "a path glob must start with '/'");
		return;
	}
	if (len > POLICY_GLOB_MAX) {
		pl_err(c, "a path glob must be at most %d bytes", POLICY_GLOB_MAX);
		return;
	}
	if (strpbrk(g, "?#") != NULL) {
		pl_err(c, "a path glob cannot contain '?' or '#' (query strings "
		    "are not matched)");
		return;
	}
	if (policy_path_normalize(g, len, norm, sizeof(norm)) == -1) {
		pl_err(c, "invalid path glob (encoded '/', '\\', control or "
		    "non-ASCII bytes, bad %%-escape, or '..' above the root)");
		return;
	}
	if (strcmp(norm, g) != 0) {
		pl_err(c, "path glob is not in normalised form; write it as "
		    "\"%s\"", pl_quote(q, sizeof(q), norm, strlen(norm)));
		return;
	}
	for (seg = g + 1; seg != NULL; seg = *end == '/' ? end + 1 : NULL) {
		end = seg + strcspn(seg, "/");
		if (end - seg > 2 && memmem(seg, (size_t)(end - seg), "**", 2)) {
			pl_err(c, "'**' must be a whole path segment");
			return;
		}
	}
}

static void
pl_http(struct pl_ctx *c, json_t *obj, struct policy_rule *r)
{
	json_t *arr, *j;
	char *m, q[96];
	size_t i, k, n;

	if (!json_is_object(obj)) {
		pl_err(c, "must be an object, not %s", pl_type(obj));
		return;
	}
	pl_unknown_keys(c, obj, pl_http_keys, "http");
	if ((arr = pl_get_array(c, obj, "methods", PL_METHODS_MAX)) != NULL) {
		n = json_array_size(arr);
		if ((r->pr_methods = calloc(n, sizeof(char *))) == NULL) {
			pl_err(c, "out of memory");
			return;
		}
		pl_push_key(c, "methods");
		json_array_foreach(arr, i, j) {
			pl_push_idx(c, i);
			if (!json_is_string(j))
				pl_err(c, "a method must be a string, not %s",
				    pl_type(j));
			else if (!pl_is_token(json_string_value(j),
			    PL_METHOD_MAX))
				pl_err(c, "\"%s\" is not an HTTP method (an RFC "
				    "9110 token of 1..%d characters)",
				    pl_quote(q, sizeof(q), json_string_value(j),
				    json_string_length(j)), PL_METHOD_MAX);
			else if (pl_strdup(c, &m, json_string_value(j)) == 0) {
				for (k = 0; m[k] != '\0'; k++)
					if (m[k] >= 'a' && m[k] <= 'z')
						m[k] = (char)(m[k] - 'a' + 'A');
				for (k = 0; k < r->pr_nmethods; k++)
					if (strcmp(r->pr_methods[k], m) == 0)
						break;
				if (k < r->pr_nmethods) {
					pl_err(c, "duplicate method \"%s\"", m);
					free(m);
				} else
					r->pr_methods[r->pr_nmethods++] = m;
			}
			pl_pop(c);
		}
		pl_pop(c);
	}
	if ((arr = pl_get_array(c, obj, "paths", PL_PATHS_MAX)) != NULL) {
		n = json_array_size(arr);
		if ((r->pr_paths = calloc(n, sizeof(char *))) == NULL) {
			pl_err(c, "out of memory");
			return;
		}
		pl_push_key(c, "paths");
		json_array_foreach(arr, i, j) {
			pl_push_idx(c, i);
			if (!json_is_string(j))
				pl_err(c, "a path glob must be a string, not %s",
				    pl_type(j));
			else {
				size_t before = c->nerr;

				pl_glob(c, json_string_value(j));
				for (k = 0; k < r->pr_npaths; k++)
					if (strcmp(r->pr_paths[k],
					    json_string_value(j)) == 0)
						break;
				if (c->nerr == before && k < r->pr_npaths)
					pl_err(c, "duplicate path glob");
				else if (c->nerr == before && pl_strdup(c,
				    &r->pr_paths[r->pr_npaths],
				    json_string_value(j)) == 0)
					r->pr_npaths++;
			}
			pl_pop(c);
		}
		pl_pop(c);
	}
	if ((j = json_object_get(obj, "websocket")) != NULL) {
		if (!json_is_boolean(j))
			pl_err_key(c, "websocket", "must be true or false, not %s",
			    pl_type(j));
		else
			r->pr_websocket = json_is_true(j);
	}
	if ((j = json_object_get(obj, "forwarded")) != NULL) {
		if (!json_is_boolean(j))
			pl_err_key(c, "forwarded", "must be true or false, not %s",
			    pl_type(j));
		else
			r->pr_forwarded = json_is_true(j);
	}
}

static int
pl_header_is_forbidden(const char *h)
{
	size_t i;

	if (strncasecmp(h, "proxy-", 6) == 0)
		return 1;
	for (i = 0; pl_bad_headers[i] != NULL; i++)
		if (strcasecmp(h, pl_bad_headers[i]) == 0)
			return 1;
	return 0;
}

static void
pl_inject_one(struct pl_ctx *c, json_t *obj, struct policy_rule *r)
{
	struct policy_inject *pi = &r->pr_inject[r->pr_ninject];
	const char *secret, *header, *value, *t;
	char q[96];
	size_t i, before = c->nerr;
	int present, nsub;

	if (!json_is_object(obj)) {
		pl_err(c, "must be an object, not %s", pl_type(obj));
		return;
	}
	pl_unknown_keys(c, obj, pl_inject_keys, "inject");
	secret = pl_get_name(c, obj, "secret", " (a vault name)", "a vault name",
	    "[A-Za-z0-9_.-]");
	header = pl_get_string(c, obj, "header", &present);
	if (!present)
		pl_err(c, "missing required key \"header\"");
	else if (header != NULL && !pl_is_token(header, PL_HEADER_MAX))
		pl_err_key(c, "header", "\"%s\" is not a header name (an RFC "
		    "9110 token of 1..%d characters)", pl_quote(q, sizeof(q),
		    header, strlen(header)), PL_HEADER_MAX);
	else if (header != NULL && pl_header_is_forbidden(header))
		pl_err_key(c, "header", "\"%s\" cannot be injected: it is a "
		    "hop-by-hop, framing or routing header", header);
	else if (header != NULL) {
		for (i = 0; i < r->pr_ninject; i++)
			if (strcasecmp(r->pr_inject[i].pi_header, header) == 0)
				pl_err_key(c, "header", "header \"%s\" is already "
				    "injected by inject[%zu]", header, i);
	}
	value = pl_get_string(c, obj, "value", &present);
	if (!present)
		value = "{secret}";
	else if (value != NULL) {
		for (nsub = 0, t = value; (t = strstr(t, "{secret}")) != NULL;
		    t += 8)
			nsub++;
		for (t = value; *t != '\0'; t++)
			if (((unsigned char)*t < 0x20 && *t != '\t') ||
			    (unsigned char)*t >= 0x7f)
				break;
		if (*t != '\0')
			pl_err_key(c, "value", "a header value template may hold "
			    "only printable ASCII, spaces and tabs (no CR, LF, "
			    "NUL)");
		else if (nsub != 1)
			pl_err_key(c, "value", "must contain \"{secret}\" exactly "
			    "once (found %d)", nsub);
		else if (strlen(value) > PL_VALUE_MAX)
			pl_err_key(c, "value", "must be at most %d bytes",
			    PL_VALUE_MAX);
	}
	if (c->nerr != before || secret == NULL || header == NULL ||
	    value == NULL)
		return;
	/* Counted only when complete, so policy_free() never sees half. */
	if ((pi->pi_secret = strdup(secret)) == NULL ||
	    (pi->pi_header = strdup(header)) == NULL ||
	    (pi->pi_value = strdup(value)) == NULL) {
		free(pi->pi_secret);
		free(pi->pi_header);
		memset(pi, 0, sizeof(*pi));
		pl_err(c, "out of memory");
		return;
	}
	r->pr_ninject++;
}

/*
 * A deny rule only refuses: it decides no TLS mode and adds nothing to a request.
 * "http" (its methods and paths) makes it decide requests: then "protocol", when
 * written, must be one that carries them; and no cidr (an address has no name to
 * inspect under).
 */
static void
pl_deny_only(struct pl_ctx *c, json_t *obj, json_t *http, int tcp, int is_cidr)
{
	static const char *const what[] = { "tls", "inject" };
	static const char *const hwhat[] = { "websocket", "forwarded" };
	size_t i;

	for (i = 0; i < sizeof(what) / sizeof(what[0]); i++)
		if (json_object_get(obj, what[i]) != NULL)
			pl_err_key(c, what[i], "\"%s\" does not apply to a deny rule "
			    "(it only refuses)", what[i]);
	if (http == NULL || !json_is_object(http))
		return;
	for (i = 0; i < sizeof(hwhat) / sizeof(hwhat[0]); i++)
		if (json_object_get(http, hwhat[i]) != NULL) {
			pl_push_key(c, "http");
			pl_err_key(c, hwhat[i], "\"%s\" does not apply to a deny "
			    "rule (it only refuses)", hwhat[i]);
			pl_pop(c);
		}
	if (is_cidr)
		pl_err_key(c, "http", "a cidr rule cannot decide requests: a "
		    "connection to an address is never inspected");
	else if (tcp)
		pl_err_key(c, "http", "\"http\" does not apply to \"protocol\": "
		    "\"tcp\" (raw TCP is not parsed; leave \"protocol\" out to "
		    "refuse requests over inspected TLS and plain HTTP)");
}

/* Parses one rule into r; prior holds the rules before it (for unique ids). */
static void
pl_rule(struct pl_ctx *c, json_t *obj, struct policy_rule *r,
    const struct policy_rule *prior, size_t nprior)
{
	struct netaddr a;
	json_t *http, *inject, *ports, *j;
	const char *id, *host, *cidr;
	char q[96];
	size_t i;
	int has_host, has_cidr, has_tls, has_proto, hrc, deny;

	if (!json_is_object(obj)) {
		pl_err(c, "a rule must be an object, not %s", pl_type(obj));
		return;
	}
	pl_unknown_keys(c, obj, pl_rule_keys, "a rule");
	r->pr_action = (enum policy_action)pl_get_enum(c, obj, "action",
	    policy_action_names, POLICY_ACTION_ALLOW, "an action (allow or deny)",
	    NULL);
	deny = r->pr_action == POLICY_ACTION_DENY;

	id = pl_get_name(c, obj, "id", "", "a valid rule id", "[A-Za-z0-9._-]");
	if (id != NULL) {
		for (i = 0; i < nprior; i++)
			if (prior[i].pr_id != NULL &&
			    strcmp(prior[i].pr_id, id) == 0)
				break;
		if (i < nprior)
			pl_err_key(c, "id", "duplicate rule id \"%s\" (also "
			    "rules[%zu])", id, i);
		else
			pl_strdup(c, &r->pr_id, id);
	}

	host = pl_get_string(c, obj, "host", &has_host);
	cidr = pl_get_string(c, obj, "cidr", &has_cidr);
	if (has_host && has_cidr)
		pl_err(c, "a rule has either \"host\" or \"cidr\", not both");
	else if (!has_host && !has_cidr)
		pl_err(c, "missing required key \"host\" (or \"cidr\")");
	else if (host != NULL) {
		hrc = hostname_pattern_normalize(host, strlen(host), r->pr_host);
		if (netaddr_parse(host, &a) == 0)
			pl_err_key(c, "host", "\"%s\" is an IP address, not a "
			    "host name; use \"cidr\": \"%s/%d\" to allow it",
			    host, host, a.na_family == AF_INET ? 32 : 128);
		else if (hrc == HOSTNAME_IP_LITERAL)
			pl_err_key(c, "host", "\"%s\" looks like an IP address, "
			    "not a host name; use \"cidr\" with a strict address "
			    "to allow one", pl_quote(q, sizeof(q), host,
			    strlen(host)));
		else if (hrc != HOSTNAME_OK)
			pl_err_key(c, "host", "invalid host pattern \"%s\": %s",
			    pl_quote(q, sizeof(q), host, strlen(host)),
			    hostname_strerror(hrc));
	} else if (cidr != NULL) {
		r->pr_is_cidr = 1;
		if (netaddr_cidr_parse(cidr, &r->pr_cidr) == -1 &&
		    netaddr_parse(cidr, &a) == 0)
			pl_err_key(c, "cidr", "\"%s\" is an address, not a "
			    "block: write \"%s/%d\"", cidr, cidr,
			    a.na_family == AF_INET ? 32 : 128);
		else if (netaddr_cidr_parse(cidr, &r->pr_cidr) == -1)
			pl_err_key(c, "cidr", "invalid cidr \"%s\" (expected "
			    "a.b.c.d/N or an IPv6 block ADDR/N, strict literals, "
			    "host bits zero)", pl_quote(q, sizeof(q), cidr,
			    strlen(cidr)));
	}

	/* A deny rule without "protocol" matches any bytes, as "tcp" does. */
	r->pr_proto = (enum policy_proto)pl_get_enum(c, obj, "protocol",
	    policy_proto_names, deny ? POLICY_PROTO_TCP : POLICY_PROTO_TLS,
	    "a protocol (tls, http or tcp)", &has_proto);

	if ((ports = pl_get_array(c, obj, "ports", 65535)) != NULL)
		pl_ports(c, ports, r);
	else if (json_object_get(obj, "ports") == NULL && !deny) {
		if ((r->pr_ports = calloc(1, sizeof(*r->pr_ports))) == NULL)
			pl_err(c, "out of memory");
		else {
			r->pr_ports[0] = r->pr_proto == POLICY_PROTO_HTTP ? 80 :
			    443;
			r->pr_nports = 1;
		}
	}

	r->pr_tls = (enum policy_tls)pl_get_enum(c, obj, "tls", policy_tls_names,
	    POLICY_TLS_SPLICE, "a TLS mode (splice or inspect)", &has_tls);

	http = json_object_get(obj, "http");
	if (http != NULL) {
		pl_push_key(c, "http");
		pl_http(c, http, r);
		pl_pop(c);
	}
	inject = json_object_get(obj, "inject");
	if (deny) {
		pl_deny_only(c, obj, http, has_proto &&
		    r->pr_proto == POLICY_PROTO_TCP, has_cidr && !has_host);
		return;
	}
	if (inject != NULL && (inject = pl_get_array(c, obj, "inject",
	    PL_INJECT_MAX)) != NULL) {
		if ((r->pr_inject = calloc(json_array_size(inject),
		    sizeof(*r->pr_inject))) == NULL)
			pl_err(c, "out of memory");
		else {
			pl_push_key(c, "inject");
			json_array_foreach(inject, i, j) {
				pl_push_idx(c, i);
				pl_inject_one(c, j, r);
				pl_pop(c);
			}
			pl_pop(c);
		}
	}
	inject = json_object_get(obj, "inject");

	/* Impossible combinations, each at the key that makes it impossible. */
	if (r->pr_proto == POLICY_PROTO_TCP) {
		if (has_tls)
			pl_err_key(c, "tls", "\"tls\" does not apply to "
			    "\"protocol\": \"tcp\" (raw TCP is relayed as is)");
		if (http != NULL)
			pl_err_key(c, "http", "\"http\" does not apply to "
			    "\"protocol\": \"tcp\" (raw TCP is not parsed)");
		if (inject != NULL)
			pl_err_key(c, "inject", "\"inject\" does not apply to "
			    "\"protocol\": \"tcp\" (raw TCP is not parsed)");
	} else if (r->pr_proto == POLICY_PROTO_HTTP) {
		if (has_tls)
			pl_err_key(c, "tls", "\"tls\" does not apply to "
			    "\"protocol\": \"http\" (plain HTTP)");
		if (inject != NULL)
			pl_err_key(c, "inject", "secrets are injected only into "
			    "inspected TLS, never into plain HTTP: use "
			    "\"protocol\": \"tls\"");
	} else if (http != NULL || inject != NULL) {
		if (has_tls && r->pr_tls == POLICY_TLS_SPLICE)
			pl_err_key(c, http != NULL ? "http" : "inject",
			    "\"%s\" needs \"tls\": \"inspect\" (a spliced "
			    "connection is never decrypted)",
			    http != NULL ? "http" : "inject");
		else
			r->pr_tls = POLICY_TLS_INSPECT;	/* implied */
	}
	/*
	 * Frames after a websocket upgrade are relayed unscanned, so a secret the
	 * origin echoes in a frame would reach the VM unredacted: a rule may inject
	 * or allow websocket, not both (until frames are scanned).
	 */
	if (inject != NULL && r->pr_websocket)
		pl_err_key(c, "inject", "a rule that injects secrets cannot allow "
		    "\"websocket\": frames after the upgrade are not scanned, so "
		    "an echoed secret would reach the VM unredacted");
	if (has_cidr && !has_host) {
		if (http != NULL)
			pl_err_key(c, "http", "a cidr rule cannot inspect HTTP: "
			    "it has no host name to verify the upstream "
			    "certificate against");
		if (inject != NULL)
			pl_err_key(c, "inject", "a cidr rule cannot inject "
			    "secrets: it has no host name to bind them to");
		if (has_tls && r->pr_tls == POLICY_TLS_INSPECT)
			pl_err_key(c, "tls", "a cidr rule cannot inspect TLS: it "
			    "has no host name to verify the upstream certificate "
			    "against");
	}
}

static int
pl_same_dest(const struct policy_rule *a, const struct policy_rule *b)
{
	if (a->pr_is_cidr != b->pr_is_cidr)
		return 0;
	if (!a->pr_is_cidr)
		return strcmp(a->pr_host, b->pr_host) == 0;
	return a->pr_cidr.nc_prefix == b->pr_cidr.nc_prefix &&
	    netaddr_equal(&a->pr_cidr.nc_addr, &b->pr_cidr.nc_addr);
}

/*
 * A rule with the same host (or cidr) and the same ports as an earlier one can
 * never decide anything (first match wins): certainly a mistake.  A rule whose
 * ports are only a subset of an earlier rule's is also dead, but is accepted
 * (policies/SCHEMA.md): it is harmless and can be a deliberate placeholder.
 * Allow rules only: deny rules are all tried first, and a second deny for the same
 * destination may still match what the first (with methods or paths) does not.
 */
static void
pl_shadowed(struct pl_ctx *c, struct policy *p)
{
	const struct policy_rule *a, *b;
	size_t i, k;

	for (i = 1; i < p->p_nrules && !c->full; i++) {
		b = &p->p_rules[i];
		if (b->pr_action == POLICY_ACTION_DENY)
			continue;
		for (k = 0; k < i; k++) {
			a = &p->p_rules[k];
			if (a->pr_action == POLICY_ACTION_DENY ||
			    a->pr_nports != b->pr_nports || !pl_same_dest(a, b) ||
			    memcmp(a->pr_ports, b->pr_ports, a->pr_nports *
			    sizeof(*a->pr_ports)) != 0)
				continue;
			pl_push_key(c, "rules");
			pl_push_idx(c, i);
			pl_err(c, "rule \"%s\" can never match: rule \"%s\" "
			    "(rules[%zu]) has the same %s and ports and comes "
			    "first", b->pr_id, a->pr_id, k,
			    b->pr_is_cidr ? "cidr" : "host");
			pl_pop(c);
			pl_pop(c);
			break;
		}
	}
}

/*
 * "base": the files whose rules this one is layered on (policy_layers.c reads and
 * checks them), each a path as written, relative to this file's folder or absolute.
 */
static void
pl_bases(struct pl_ctx *c, json_t *root, struct pl_doc *d)
{
	json_t *arr, *j;
	const char *s;
	char q[96];
	size_t i, k;

	if ((arr = pl_get_array(c, root, "base", POLICY_BASES_MAX)) == NULL)
		return;
	if ((d->pd_base = calloc(json_array_size(arr), sizeof(char *))) == NULL) {
		pl_err_key(c, "base", "out of memory");
		return;
	}
	pl_push_key(c, "base");
	json_array_foreach(arr, i, j) {
		pl_push_idx(c, i);
		s = json_string_value(j);
		if (!json_is_string(j))
			pl_err(c, "a base must be a file name (a string), not %s",
			    pl_type(j));
		else if (json_string_length(j) == 0 ||
		    json_string_length(j) != strlen(s))
			pl_err(c, "a base must be a file name: not empty, no NUL");
		else if (json_string_length(j) >= PATH_MAX)
			pl_err(c, "a base's name must be shorter than %d bytes",
			    PATH_MAX);
		else {
			for (k = 0; k < d->pd_nbase; k++)
				if (strcmp(d->pd_base[k], s) == 0)
					break;
			if (k < d->pd_nbase)
				pl_err(c, "duplicate base \"%s\"", pl_quote(q,
				    sizeof(q), s, strlen(s)));
			else if (pl_strdup(c, &d->pd_base[d->pd_nbase], s) == 0)
				d->pd_nbase++;
		}
		pl_pop(c);
	}
	pl_pop(c);
}

static void
pl_top(struct pl_ctx *c, json_t *root, struct pl_doc *d)
{
	struct policy *p = d->pd_pol;
	json_t *rules, *j;
	const char *name;
	size_t i, n;

	if (!json_is_object(root)) {
		pl_err(c, "a policy must be a JSON object, not %s", pl_type(root));
		return;
	}
	pl_unknown_keys(c, root, pl_top_keys, "the policy");

	name = pl_get_name(c, root, "policy", " (the policy's name)",
	    "a valid policy name", "[A-Za-z0-9._-]");
	if (name != NULL)
		pl_strdup(c, &p->p_name, name);

	p->p_mode = (enum policy_mode)pl_get_enum(c, root, "mode",
	    policy_mode_names, POLICY_MODE_ENFORCE, "a mode (enforce or report)",
	    &d->pd_mode);
	p->p_unknown = (enum policy_unknown)pl_get_enum(c, root, "unknown",
	    policy_unknown_names, POLICY_UNKNOWN_DENY, "what an unknown name gets "
	    "(deny or ask)", &d->pd_unknown);

	if (json_object_get(root, "base") != NULL)
		pl_bases(c, root, d);

	if ((j = json_object_get(root, "limits")) != NULL) {
		pl_push_key(c, "limits");
		pl_limits(c, j, &p->p_limits);
		pl_pop(c);
	}

	if ((j = json_object_get(root, "upstream_proxy")) != NULL) {
		pl_push_key(c, "upstream_proxy");
		pl_upstream(c, j, p);
		pl_pop(c);
	}

	if ((rules = json_object_get(root, "rules")) == NULL) {
		pl_err(c, "missing required key \"rules\" (an empty array denies "
		    "everything)");
		return;
	}
	if (!json_is_array(rules)) {
		pl_err_key(c, "rules", "must be an array, not %s", pl_type(rules));
		return;
	}
	if ((n = json_array_size(rules)) > POLICY_RULES_MAX) {
		pl_err_key(c, "rules", "too many rules (at most %d)",
		    POLICY_RULES_MAX);
		return;
	}
	if (n == 0)
		return;
	if ((p->p_rules = calloc(n, sizeof(*p->p_rules))) == NULL) {
		pl_err_key(c, "rules", "out of memory");
		return;
	}
	p->p_nrules = n;
	pl_push_key(c, "rules");
	json_array_foreach(rules, i, j) {
		if (c->full)
			break;
		pl_push_idx(c, i);
		pl_rule(c, j, &p->p_rules[i], p->p_rules, i);
		pl_pop(c);
	}
	pl_pop(c);
	if (c->nerr == c->nerr0)
		pl_shadowed(c, p);
}

int
pl_hash(const void *buf, size_t len, char *hex)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0, i;

	if (EVP_Digest(buf, len, md, &mdlen, EVP_sha256(), NULL) != 1 ||
	    mdlen != 32)
		return -1;
	for (i = 0; i < mdlen; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	return 0;
}

int
pl_doc_load(const char *buf, size_t len, const char *name,
    struct policy_errors *errs, size_t *nerr, struct pl_doc *d)
{
	struct pl_ctx c;
	json_error_t jerr;
	json_t *root = NULL;
	char text[sizeof(jerr.text) + 32], q[sizeof(jerr.text) + 16];
	char jp[256];
	size_t i;

	memset(d, 0, sizeof(*d));
	memset(&c, 0, sizeof(c));
	c.name = name;
	c.errs = errs;
	c.base = errs != NULL ? errs->n : 0;
	c.nerr = c.nerr0 = *nerr;
	c.full = *nerr >= POLICY_ERRORS_MAX;
	if (len > POLICY_FILE_MAX) {
		pl_add(&c, NULL, 0, 0, "larger than 1 MiB: not a policy");
		goto error;
	}
	root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL) {
		/*
		 * The one format of configuration and policy errors (lib/config.c
		 * says it the same way): empty, a duplicate key named, or jansson's
		 * text (it quotes input bytes: kept, minus control bytes).
		 */
		for (i = 0; i < len && strchr(" \t\r\n", buf[i]) != NULL; i++)
			;
		pl_quote(q, sizeof(q), jerr.text, strlen(jerr.text));
		pl_unescape_quotes(q);
		if (i == len) {
			pl_add(&c, NULL, 0, 0, "empty: a JSON object is expected");
			goto error;
		}
		if (json_error_code(&jerr) == json_error_duplicate_key &&
		    jerr.position >= 0) {
			pl_add(&c, json_path_at(buf, len, (size_t)jerr.position, jp,
			    sizeof(jp)), jerr.line, jerr.column, "duplicate key");
			goto error;
		}
		snprintf(text, sizeof(text), "invalid JSON: %s", q);
		pl_add(&c, NULL, jerr.line > 0 ? jerr.line : 0,
		    jerr.line > 0 ? (jerr.column > 0 ? jerr.column : 1) : 0, text);
		goto error;
	}
	c.buf = buf;
	c.len = len;
	if ((d->pd_pol = calloc(1, sizeof(*d->pd_pol))) == NULL) {
		pl_add(&c, NULL, 0, 0, "out of memory");
		goto error;
	}
	pl_top(&c, root, d);
	if (c.nerr == c.nerr0 && pl_hash(buf, len, d->pd_pol->p_hash) == -1)
		pl_add(&c, NULL, 0, 0, "cannot compute the SHA-256 hash");
	if (c.nerr > c.nerr0)
		goto error;
	json_decref(root);
	*nerr = c.nerr;
	return 0;
 error:
	pl_sort(&c);
	json_decref(root);
	pl_doc_free(d);
	*nerr = c.nerr;
	return -1;
}

void
pl_doc_free(struct pl_doc *d)
{
	size_t i;

	policy_free(d->pd_pol);
	for (i = 0; i < d->pd_nbase; i++)
		free(d->pd_base[i]);
	free(d->pd_base);
	memset(d, 0, sizeof(*d));
}

static void
policy_rule_clear(struct policy_rule *r)
{
	size_t i;

	free(r->pr_id);
	free(r->pr_ports);
	for (i = 0; i < r->pr_nmethods; i++)
		free(r->pr_methods[i]);
	free(r->pr_methods);
	for (i = 0; i < r->pr_npaths; i++)
		free(r->pr_paths[i]);
	free(r->pr_paths);
	for (i = 0; i < r->pr_ninject; i++) {
		free(r->pr_inject[i].pi_secret);
		free(r->pr_inject[i].pi_header);
		free(r->pr_inject[i].pi_value);
	}
	free(r->pr_inject);
}

void
policy_free(struct policy *p)
{
	size_t i;

	if (p == NULL)
		return;
	for (i = 0; i < p->p_nrules; i++)
		policy_rule_clear(&p->p_rules[i]);
	free(p->p_rules);
	for (i = 0; i < p->p_nfiles; i++) {
		free(p->p_files[i]->ps_file);
		free(p->p_files[i]->ps_name);
		free(p->p_files[i]);
	}
	free(p->p_files);
	free(p->p_name);
	free(p->p_file);
	free(p);
}

void
policy_errors_free(struct policy_errors *errs)
{
	size_t i;

	if (errs == NULL)
		return;
	for (i = 0; i < errs->n; i++) {
		free(errs->v[i].pe_file);
		free(errs->v[i].pe_path);
		free(errs->v[i].pe_reason);
	}
	free(errs->v);
	errs->v = NULL;
	errs->n = 0;
}

int
policy_error_fmt(const struct policy_error *e, char *buf, size_t len)
{
	char pos[32] = "";

	if (e->pe_line > 0)
		snprintf(pos, sizeof(pos), ":%d:%d", e->pe_line, e->pe_column);
	if (e->pe_path != NULL)
		return snprintf(buf, len, "%s%s: %s: %s", e->pe_file, pos,
		    e->pe_path, e->pe_reason);
	return snprintf(buf, len, "%s%s: %s", e->pe_file, pos, e->pe_reason);
}
