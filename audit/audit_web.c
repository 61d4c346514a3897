/*
 * audit/audit_web.c: what the web view of `airlock audit serve` takes from a
 * request (include/audit.h).  Nothing here trusts the browser: any page the
 * reviewer has open can make it send requests (and, rebinding a name of its own to
 * 127.0.0.1, read the answers, unless the Host check below refuses them), so every
 * parameter is named, once, bounded and decoded strictly, and a file name is a
 * plain name or nothing.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "audit.h"
#include "hexdig.h"

/* Each parameter: its name, group, and where its value goes. */
enum param_kind { P_STR, P_NUM, P_TIME, P_DECISION, P_EVENT, P_ORDER };
struct param {
	const char	*p_name;
	unsigned int	 p_group;
	enum param_kind	 p_kind;
	size_t		 p_off;		/* in struct audit_web_query */
	size_t		 p_size;	/* P_STR: the array's size */
	long long	 p_min;		/* P_NUM: bounds */
	long long	 p_max;
};
#define Q(f)		offsetof(struct audit_web_query, f)
#define QS(f)		Q(f), sizeof(((struct audit_web_query *)0)->f)
#define NUM_MAX		1000000000000000LL	/* 10^15: more records than any disk */
static const struct param params[] = {
	{ "sandbox", AUDIT_WEB_FILTERS | AUDIT_WEB_SUMMARY, P_STR, QS(awq_sandbox),
	  0, 0 },
	{ "event", AUDIT_WEB_FILTERS, P_EVENT, QS(awq_event), 0, 0 },
	{ "decision", AUDIT_WEB_FILTERS, P_DECISION, QS(awq_decision), 0, 0 },
	{ "reason", AUDIT_WEB_FILTERS, P_STR, QS(awq_reason), 0, 0 },
	{ "host", AUDIT_WEB_FILTERS, P_STR, QS(awq_host), 0, 0 },
	{ "host_part", AUDIT_WEB_FILTERS, P_STR, QS(awq_host_part), 0, 0 },
	{ "q", AUDIT_WEB_FILTERS, P_STR, QS(awq_text), 0, 0 },
	{ "since", AUDIT_WEB_FILTERS, P_TIME, Q(awq_since), 0, 0, 0 },
	{ "until", AUDIT_WEB_FILTERS, P_TIME, Q(awq_until), 0, 1, 0 },
	{ "offset", AUDIT_WEB_PAGE, P_NUM, Q(awq_offset), 0, 0, NUM_MAX },
	{ "limit", AUDIT_WEB_PAGE | AUDIT_WEB_TAIL, P_NUM, Q(awq_limit), 0, 1,
	  AUDIT_WEB_LIMIT_MAX },
	{ "order", AUDIT_WEB_PAGE, P_ORDER, Q(awq_desc), 0, 0, 0 },
	{ "after", AUDIT_WEB_TAIL, P_NUM, Q(awq_after), 0, 0, NUM_MAX },
	{ "wait", AUDIT_WEB_TAIL, P_NUM, Q(awq_wait), 0, 0, AUDIT_WEB_WAIT_MAX },
	{ "n", AUDIT_WEB_RECORD, P_NUM, Q(awq_n), 0, 1, NUM_MAX },
	{ "top", AUDIT_WEB_SUMMARY, P_NUM, Q(awq_top), 0, 1, AUDIT_WEB_TOP_MAX },
};
#define NPARAMS		(sizeof(params) / sizeof(params[0]))

/*
 * Decodes s[0..len-1] ('+' a space, %XX a byte) into out (room for max bytes and
 * a NUL).  Returns the decoded length, -1 for a bad escape or a control byte, -2
 * when longer than max.
 */
static long
decode(const char *s, size_t len, char *out, size_t max)
{
	size_t i, o = 0;
	int c, hi, lo;

	for (i = 0; i < len; i++) {
		c = (unsigned char)s[i];
		if (c == '+')
			c = ' ';
		else if (c == '%') {
			if (i + 2 >= len)
				return -1;
			if ((hi = hexdig_val((unsigned char)s[i + 1])) < 0 ||
			    (lo = hexdig_val((unsigned char)s[i + 2])) < 0)
				return -1;
			c = hi * 16 + lo;
			i += 2;
		}
		if (c < 0x20 || c == 0x7f)
			return -1;
		if (o == max)
			return -2;
		out[o++] = (char)c;
	}
	out[o] = '\0';
	return (long)o;
}

/* A decimal number within [min, max]. */
static int
parse_num(const char *v, long long min, long long max, long long *out)
{
	long long n = 0;
	const char *p;

	for (p = v; *p >= '0' && *p <= '9'; p++) {
		n = n * 10 + (*p - '0');
		if (n > max)
			return -1;
	}
	if (p == v || *p != '\0' || n < min)
		return -1;
	*out = n;
	return 0;
}

static int
param_set(const struct param *p, const char *v, struct audit_web_query *q,
    char *err, size_t errlen)
{
	char *field = (char *)q + p->p_off;
	enum audit_event ev;

	switch (p->p_kind) {
	case P_STR:
		if (strlen(v) >= p->p_size) {
			snprintf(err, errlen, "%s: longer than %zu bytes", p->p_name,
			    p->p_size - 1);
			return -1;
		}
		memcpy(field, v, strlen(v) + 1);
		return 0;
	case P_EVENT:
	case P_DECISION:
		if (p->p_kind == P_EVENT ? audit_event_parse(v, &ev) == -1 :
		    strcmp(v, "allow") != 0 && strcmp(v, "deny") != 0) {
			snprintf(err, errlen, "%s", p->p_kind == P_EVENT ?
			    "event: not an event (dns, connect, request, deny, exfil, "
			    "sandbox, config, alarm)" : "decision: allow or deny");
			return -1;
		}
		memcpy(field, v, strlen(v) + 1);
		return 0;
	case P_ORDER:
		if (strcmp(v, "asc") != 0 && strcmp(v, "desc") != 0) {
			snprintf(err, errlen, "order: asc or desc");
			return -1;
		}
		*(int *)(void *)field = strcmp(v, "desc") == 0;
		return 0;
	case P_TIME:
		if (audit_time_parse(v, (int)p->p_min, (long long *)(void *)field) ==
		    -1) {
			snprintf(err, errlen, "%s: not a time (2026-11-30, "
			    "2026-11-30T12:00:00Z or 2026-11-30T12:00:00.123Z)",
			    p->p_name);
			return -1;
		}
		return 0;
	case P_NUM:
		if (parse_num(v, p->p_min, p->p_max,
		    (long long *)(void *)field) == -1) {
			snprintf(err, errlen, "%s: a number from %lld to %lld",
			    p->p_name, p->p_min, p->p_max);
			return -1;
		}
		return 0;
	}
	return -1;
}

int
audit_web_query_parse(const char *query, unsigned int which,
    struct audit_web_query *q, char *err, size_t errlen)
{
	char key[32], val[AUDIT_WEB_STR_MAX + 1];
	const char *p, *amp, *eq;
	unsigned int seen = 0;
	size_t i, klen, vlen;
	long r;

	memset(q, 0, sizeof(*q));
	q->awq_since = q->awq_until = -1;
	q->awq_wait = -1;
	if (query == NULL)
		return 0;
	if (strlen(query) > AUDIT_WEB_QUERY_MAX) {
		snprintf(err, errlen, "query longer than %d bytes",
		    AUDIT_WEB_QUERY_MAX);
		return -1;
	}
	for (p = query; *p != '\0'; p = *amp == '\0' ? amp : amp + 1) {
		amp = p + strcspn(p, "&");
		if (amp == p)
			continue;			/* "a=1&&b=2" */
		eq = memchr(p, '=', (size_t)(amp - p));
		klen = (size_t)((eq != NULL ? eq : amp) - p);
		vlen = eq != NULL ? (size_t)(amp - eq - 1) : 0;
		r = decode(p, klen, key, sizeof(key) - 1);
		for (i = 0; i < NPARAMS && r >= 0; i++)
			if ((params[i].p_group & which) != 0 &&
			    strcmp(params[i].p_name, key) == 0)
				break;
		if (r < 0 || i == NPARAMS) {
			/* Named only when it is a plain word: it is the page's. */
			if (r > 0 && strspn(key, "abcdefghijklmnopqrstuvwxyz_") ==
			    (size_t)r)
				snprintf(err, errlen, "unknown parameter '%s'", key);
			else
				snprintf(err, errlen, "unknown parameter");
			return -1;
		}
		if (seen & (1U << i)) {
			snprintf(err, errlen, "%s: given twice", key);
			return -1;
		}
		seen |= 1U << i;
		if ((r = decode(eq != NULL ? eq + 1 : amp, vlen, val,
		    sizeof(val) - 1)) < 0) {
			if (r == -2)
				snprintf(err, errlen, "%s: longer than %d bytes", key,
				    AUDIT_WEB_STR_MAX);
			else
				snprintf(err, errlen, "%s: a bad %%-escape or a "
				    "control character", key);
			return -1;
		}
		if (r == 0)
			continue;			/* an empty field of the form */
		if (param_set(&params[i], val, q, err, errlen) == -1)
			return -1;
	}
	return 0;
}

void
audit_web_filter(const struct audit_web_query *q, struct audit_filter *f)
{
	*f = (struct audit_filter)AUDIT_FILTER_INIT;
	f->af_sandbox = q->awq_sandbox[0] != '\0' ? q->awq_sandbox : NULL;
	f->af_event = q->awq_event[0] != '\0' ? q->awq_event : NULL;
	f->af_decision = q->awq_decision[0] != '\0' ? q->awq_decision : NULL;
	f->af_reason = q->awq_reason[0] != '\0' ? q->awq_reason : NULL;
	f->af_host = q->awq_host[0] != '\0' ? q->awq_host : NULL;
	f->af_host_part = q->awq_host_part[0] != '\0' ? q->awq_host_part : NULL;
	f->af_text = q->awq_text[0] != '\0' ? q->awq_text : NULL;
	f->af_since = q->awq_since;
	f->af_until = q->awq_until;
}

/* 1 if host is name, then ":PORT" (or nothing when port is 80). */
static int
host_is(const char *host, const char *name, size_t nlen, unsigned int port,
    int nocase)
{
	char tail[16];

	if ((nocase ? strncasecmp(host, name, nlen) : strncmp(host, name, nlen)) != 0)
		return 0;
	host += nlen;
	if (*host == '\0')
		return port == 80;
	snprintf(tail, sizeof(tail), ":%u", port);
	return strcmp(host, tail) == 0;
}

int
audit_web_host_ok(const char *host, const char *addr, int v6, unsigned int port)
{
	char name[64];

	if (host == NULL)
		return 0;
	if (host_is(host, "localhost", 9, port, 1))
		return 1;
	if (snprintf(name, sizeof(name), v6 ? "[%s]" : "%s", addr) >=
	    (int)sizeof(name))
		return 0;
	/* The address's canonical text only (lower-case hex for IPv6). */
	return host_is(host, name, strlen(name), port, 0);
}

int
audit_web_static(const char *path, char *name, size_t len, const char **ctype)
{
	static const struct {
		const char	*ext;
		const char	*type;
	} types[] = {
		{ ".html", "text/html; charset=utf-8" },
		{ ".css", "text/css; charset=utf-8" },
		{ ".js", "text/javascript; charset=utf-8" },
		{ ".png", "image/png" },
	};
	const char *n, *dot;
	size_t nl, i;

	if (path == NULL || path[0] != '/' || len < 65)
		return -1;
	n = strcmp(path, "/") == 0 ? "index.html" : path + 1;
	nl = strlen(n);
	if (nl < 1 || nl > 64 || !(islower((unsigned char)n[0]) ||
	    isdigit((unsigned char)n[0])) ||
	    strspn(n, "abcdefghijklmnopqrstuvwxyz0123456789._-") != nl ||
	    strstr(n, "..") != NULL || (dot = strrchr(n, '.')) == NULL)
		return -1;
	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strcmp(dot, types[i].ext) == 0) {
			memcpy(name, n, nl + 1);
			*ctype = types[i].type;
			return 0;
		}
	return -1;
}
