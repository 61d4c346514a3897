/*
 * tests/unit/http_strict.c: the strict-HTTP holes of issue 11 and the fuzz finding
 * of issue 22 in proxy/proxy_http.c, each refusal with a positive control beside it:
 *  - request targets a server could read as an authority ("//h", "/\h", "/%2F%2Fh",
 *    "/.//h", "/a/..//h", the path of an absolute-form target): HTTP_E_TARGET,
 *    audited invalid_path; ordinary paths (also "/a//b", "/%2Fa" inside) pass;
 *  - request lines refused as soon as the line is in (HTTP/0.9, HTTP/2.0, the h2
 *    preface), not when a whole head arrives (never, for HTTP/0.9);
 *  - the method registry: common, registered, echo (TRACE/TRACK), refused, unknown;
 *  - the client's identity fields dropped upstream, airlock's own Forwarded value;
 *  - a head with HTTP_FIELDS_MAX fields is not rewritten into one with more (the
 *    parser would refuse it), for requests and responses, nor past HTTP_HEAD_MAX.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "../../proxy/proxy_http.h"
#include "../tap.h"

#define H	"Host: a.example\r\n"

static struct http_request rq, rq2;
static struct http_response rs, rs2;

static enum http_res
req(const char *s)
{
	return http_request_parse((const uint8_t *)s, strlen(s), &rq);
}

static void
test_targets(void)
{
	static const char *const bad[] = {
		"GET //evil.example/x HTTP/1.1\r\n" H "\r\n",
		"GET // HTTP/1.1\r\n" H "\r\n",
		"GET /\\evil.example/x HTTP/1.1\r\n" H "\r\n",
		"GET /a\\b HTTP/1.1\r\n" H "\r\n",
		"GET /%2F%2Fevil.example HTTP/1.1\r\n" H "\r\n",
		"GET /%2fevil.example HTTP/1.1\r\n" H "\r\n",
		"GET /%5Cevil.example HTTP/1.1\r\n" H "\r\n",
		"GET /%5c%5cevil.example HTTP/1.1\r\n" H "\r\n",
		"GET /.//evil.example HTTP/1.1\r\n" H "\r\n",
		"GET /%2e//evil.example HTTP/1.1\r\n" H "\r\n",
		"GET /a/..//evil.example HTTP/1.1\r\n" H "\r\n",
		"GET /a/b/../..//evil.example?q HTTP/1.1\r\n" H "\r\n",
		"GET /..//evil.example HTTP/1.1\r\n" H "\r\n",
		"GET /./%2F HTTP/1.1\r\n" H "\r\n",
		"GET http://a.example//evil.example/ HTTP/1.1\r\n" H "\r\n",
		"GET https://a.example/%2F/x HTTP/1.1\r\n" H "\r\n",
	};
	static const char *const good[] = {
		"GET / HTTP/1.1\r\n" H "\r\n",
		"GET /a//b HTTP/1.1\r\n" H "\r\n",
		"GET /a/%2Fb HTTP/1.1\r\n" H "\r\n",
		"GET /a/../b HTTP/1.1\r\n" H "\r\n",
		"GET /./a HTTP/1.1\r\n" H "\r\n",
		"GET /.. HTTP/1.1\r\n" H "\r\n",
		"GET /a/.. HTTP/1.1\r\n" H "\r\n",
		"GET /..a//b HTTP/1.1\r\n" H "\r\n",
		"GET /%2 HTTP/1.1\r\n" H "\r\n",
		"GET /x?next=//evil.example HTTP/1.1\r\n" H "\r\n",
		"GET /x?a=\\b HTTP/1.1\r\n" H "\r\n",
		"GET http://a.example HTTP/1.1\r\n" H "\r\n",
		"GET http://a.example/a//b HTTP/1.1\r\n" H "\r\n",
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		enum http_res r = req(bad[i]);

		ok(r == HTTP_E_TARGET && rq.hq_why != NULL &&
		    strstr(rq.hq_why, "authority") != NULL,
		    "target refused as an authority: %.*s", (int)strcspn(bad[i], "\r"),
		    bad[i]);
	}
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		is_int(HTTP_OK, req(good[i]), "target accepted: %.*s",
		    (int)strcspn(good[i], "\r"), good[i]);
	ok(req("GET \\\\evil.example HTTP/1.1\r\n" H "\r\n") == HTTP_E_BAD,
	    "a target starting with a backslash: neither form, 400");
	is_int(400, http_res_status(HTTP_E_TARGET), "HTTP_E_TARGET is a 400");
	is_string("invalid_path", http_res_reason(HTTP_E_TARGET),
	    "... audited invalid_path");
	is_string("http_version_not_supported", http_res_reason(HTTP_E_VERSION),
	    "a version refusal is audited http_version_not_supported");
	is_string("http_head_too_large", http_res_reason(HTTP_E_TOO_LARGE), "431");
	is_string("http_malformed", http_res_reason(HTTP_E_BAD), "400");
}

static void
test_request_line(void)
{
	static const struct {
		const char	*in;
		enum http_res	 want;
	} cases[] = {
		{ "GET /\r\n", HTTP_E_VERSION },		/* HTTP/0.9 */
		{ "GET / HTTP/2.0\r\n", HTTP_E_VERSION },
		{ "PRI * HTTP/2.0\r\n", HTTP_E_VERSION },	/* h2 preface */
		{ "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", HTTP_E_VERSION },
		{ "GET / HTTP/1.2\r\nHost: a", HTTP_E_VERSION },
		{ "GET / HTTP/3\r\n", HTTP_E_BAD },
		{ "GET / http/1.1\r\n", HTTP_E_BAD },
		{ "\r\nGET / HTTP/1.1\r\n", HTTP_E_BAD },
		{ "G(T / HTTP/1.1\r\n", HTTP_E_BAD },
		{ "GET / HTTP/1.1\r\n", HTTP_OK },		/* controls */
		{ "GET / HTTP/1.0\r\nHost: a", HTTP_OK },
		{ "GET / HTTP/1.1", HTTP_NEED_MORE },
		{ "GET /", HTTP_NEED_MORE },
		{ "GET / HTTP/1.1\r", HTTP_NEED_MORE },
	};
	const char *why;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		why = NULL;
		is_int(cases[i].want, http_request_line_check(
		    (const uint8_t *)cases[i].in, strlen(cases[i].in), &why),
		    "request line %.*s", (int)strcspn(cases[i].in, "\r"),
		    cases[i].in);
		if (cases[i].want < 0)
			ok(why != NULL, "... with a reason (%s)", why ? why : "-");
	}
	/* The full parser agrees: HTTP/0.9 is a version refusal (505), too. */
	is_int(HTTP_E_VERSION, req("GET /\r\n\r\n"), "HTTP/0.9 head: 505");
	is_int(HTTP_E_VERSION, req("PRI * HTTP/2.0\r\n\r\n"), "h2 preface head: 505");
	is_int(HTTP_OK, req("GET / HTTP/1.0\r\n" H "\r\n"), "HTTP/1.0 with Host: ok");
}

static void
test_methods(void)
{
	static const struct {
		const char		*m;
		enum http_method_class	 want;
	} cases[] = {
		{ "GET", HTTP_MC_COMMON }, { "HEAD", HTTP_MC_COMMON },
		{ "POST", HTTP_MC_COMMON }, { "PUT", HTTP_MC_COMMON },
		{ "DELETE", HTTP_MC_COMMON }, { "PATCH", HTTP_MC_COMMON },
		{ "OPTIONS", HTTP_MC_COMMON },
		{ "PROPFIND", HTTP_MC_REGISTERED }, { "MKCOL", HTTP_MC_REGISTERED },
		{ "REPORT", HTTP_MC_REGISTERED }, { "LOCK", HTTP_MC_REGISTERED },
		{ "VERSION-CONTROL", HTTP_MC_REGISTERED },
		{ "TRACE", HTTP_MC_ECHO }, { "TRACK", HTTP_MC_ECHO },
		{ "CONNECT", HTTP_MC_REFUSED }, { "PRI", HTTP_MC_REFUSED },
		{ "get", HTTP_MC_UNKNOWN }, { "Trace", HTTP_MC_UNKNOWN },
		{ "DEBUG", HTTP_MC_UNKNOWN }, { "FOO", HTTP_MC_UNKNOWN },
		{ "GETX", HTTP_MC_UNKNOWN }, { "GE", HTTP_MC_UNKNOWN },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		is_int(cases[i].want, http_method_classify(
		    (const uint8_t *)cases[i].m, strlen(cases[i].m)),
		    "method %s", cases[i].m);
}

static int
count(const uint8_t *p, size_t n, const char *needle)
{
	size_t i, nl = strlen(needle);
	int c = 0;

	for (i = 0; i + nl <= n; i++)
		if (strncasecmp((const char *)p + i, needle, nl) == 0)
			c++;
	return c;
}

static void
test_identity(void)
{
	static const char in[] = "GET /x HTTP/1.1\r\n" H
	    "X-Forwarded-For: 10.9.9.9\r\nForwarded: for=10.9.9.9\r\n"
	    "X-Real-IP: 10.9.9.9\r\nx-forwarded-host: evil.example\r\n"
	    "X-Forwarded-Proto: http\r\nX-Client-IP: 10.9.9.9\r\n"
	    "True-Client-IP: 10.9.9.9\r\nCF-Connecting-IP: 10.9.9.9\r\n"
	    "Via: 1.1 trusted-gateway\r\nX-Forwarded-Bonus: kept\r\n"
	    "Accept: */*\r\n\r\n";
	struct http_rewrite rw = { .rw_framing = HTTP_BODY_NONE };
	struct http_buf out = HTTP_BUF_INIT;
	struct http_hdr_set set;
	char v[64];
	size_t i;

	if (req(in) != HTTP_OK)
		bail("parse: %s", rq.hq_why);
	ok(http_request_rewrite((const uint8_t *)in, &rq, &rw, &out) == 0,
	    "rewrite a request with identity fields");
	is_int(0, count(out.hb_p, out.hb_len, "10.9.9.9"),
	    "no address the VM chose goes upstream");
	is_int(0, count(out.hb_p, out.hb_len, "evil.example"), "nor its X-Forwarded-Host");
	is_int(0, count(out.hb_p, out.hb_len, "trusted-gateway"), "nor its Via");
	is_int(0, count(out.hb_p, out.hb_len, "forwarded-proto"), "nor X-Forwarded-Proto");
	is_int(1, count(out.hb_p, out.hb_len, "X-Forwarded-Bonus: kept"),
	    "a field merely starting alike is kept");
	is_int(1, count(out.hb_p, out.hb_len, "Accept: */*"), "other fields kept");
	for (i = 0; http_identity_fields[i] != NULL; i++)
		;
	ok(i >= 10, "identity list has %zu names", i);

	/* airlock's own Forwarded, through rw_set, survives the drop */
	is_int(0, http_forwarded_value("demo", 1, v, sizeof(v)), "forwarded value");
	is_string("for=\"_airlock-demo\";proto=https", v, "... names the sandbox");
	is_int(0, http_forwarded_value("a b/\"c", 0, v, sizeof(v)), "odd name");
	is_string("for=\"_airlock-a-b--c\";proto=http", v,
	    "... bytes outside the obfnode charset become '-'");
	is_int(-1, http_forwarded_value("demo", 1, v, 8), "too small: -1");
	is_string("", v, "... and empty");
	http_forwarded_value("demo", 1, v, sizeof(v));
	set.hx_name = "Forwarded";
	set.hx_value = (const uint8_t *)v;
	set.hx_value_len = strlen(v);
	rw.rw_set = &set;
	rw.rw_nset = 1;
	out.hb_len = 0;
	ok(http_request_rewrite((const uint8_t *)in, &rq, &rw, &out) == 0 &&
	    http_request_parse(out.hb_p, out.hb_len, &rq2) == HTTP_OK,
	    "rewrite with our Forwarded parses again");
	is_int(1, count(out.hb_p, out.hb_len, "Forwarded: for=\"_airlock-demo\""),
	    "... one Forwarded, ours");
	is_int(1, count(out.hb_p, out.hb_len, "forwarded:"), "... and only ours");
	http_buf_free(&out);
}

/* A head with nfields "X-N: v" fields after the start line (and Host). */
static size_t
build_head(char *buf, size_t cap, const char *start, int nfields, size_t vlen)
{
	size_t n;
	int i;

	n = (size_t)snprintf(buf, cap, "%s", start);
	for (i = 0; i < nfields && n < cap; i++) {
		n += (size_t)snprintf(buf + n, cap - n, "X-%d: ", i);
		while (vlen > 0 && n + vlen + 3 < cap && i == 0) {
			memset(buf + n, 'v', vlen);
			n += vlen;
			break;
		}
		n += (size_t)snprintf(buf + n, cap - n, "v\r\n");
	}
	n += (size_t)snprintf(buf + n, cap - n, "\r\n");
	return n;
}

static void
test_limits(void)
{
	static char buf[HTTP_HEAD_MAX + 1024];
	static const uint8_t cred[] = "Bearer injected";
	struct http_hdr_set set = { "Authorization", cred, sizeof(cred) - 1 };
	struct http_rewrite rw = { .rw_set = &set, .rw_nset = 1 };
	struct http_buf out = HTTP_BUF_INIT;
	size_t n;
	int r;

	/* Host + 99 fields = 100: the parser's maximum. */
	n = build_head(buf, sizeof(buf), "GET / HTTP/1.1\r\n" H, HTTP_FIELDS_MAX - 1, 0);
	is_int(HTTP_OK, http_request_parse((const uint8_t *)buf, n, &rq),
	    "request with HTTP_FIELDS_MAX fields parses");
	errno = 0;
	r = http_request_rewrite((const uint8_t *)buf, &rq, &rw, &out);
	ok(r == -1 && errno == EMSGSIZE,
	    "... its rewrite with an injected field is refused (EMSGSIZE)");
	/* positive control: room for Authorization and Connection */
	n = build_head(buf, sizeof(buf), "GET / HTTP/1.1\r\n" H, HTTP_FIELDS_MAX - 3, 0);
	out.hb_len = 0;
	ok(http_request_parse((const uint8_t *)buf, n, &rq) == HTTP_OK &&
	    http_request_rewrite((const uint8_t *)buf, &rq, &rw, &out) == 0 &&
	    http_request_parse(out.hb_p, out.hb_len, &rq2) == HTTP_OK &&
	    rq2.hq_nfields == HTTP_FIELDS_MAX,
	    "98 fields + Authorization + Connection: exactly the maximum, parses");
	/* dropped fields make room: 100 in, 3 identity fields dropped */
	n = build_head(buf, sizeof(buf), "GET / HTTP/1.1\r\n" H "Via: a\r\n"
	    "X-Real-IP: b\r\nForwarded: c\r\n", HTTP_FIELDS_MAX - 4, 0);
	out.hb_len = 0;
	ok(http_request_parse((const uint8_t *)buf, n, &rq) == HTTP_OK &&
	    http_request_rewrite((const uint8_t *)buf, &rq, &rw, &out) == 0 &&
	    http_request_parse(out.hb_p, out.hb_len, &rq2) == HTTP_OK,
	    "dropped fields are not counted");
	/* bytes: a head just under HTTP_HEAD_MAX grows past it with the injection */
	n = build_head(buf, sizeof(buf), "GET / HTTP/1.1\r\n" H, 1,
	    HTTP_HEAD_MAX - 60);
	out.hb_len = 0;
	errno = 0;
	ok(http_request_parse((const uint8_t *)buf, n, &rq) == HTTP_OK &&
	    http_request_rewrite((const uint8_t *)buf, &rq, &rw, &out) == -1 &&
	    errno == EMSGSIZE, "a head pushed past HTTP_HEAD_MAX: EMSGSIZE");

	/* responses: the 204 of issue 22 (100 fields + our Connection = 101) */
	n = build_head(buf, sizeof(buf), "HTTP/1.1 204 No Content\r\n",
	    HTTP_FIELDS_MAX, 0);
	memset(&rw, 0, sizeof(rw));
	is_int(HTTP_OK, http_response_parse((const uint8_t *)buf, n, HTTP_M_GET, &rs),
	    "204 with HTTP_FIELDS_MAX fields parses");
	out.hb_len = 0;
	errno = 0;
	r = http_response_rewrite((const uint8_t *)buf, &rs, &rw, &out);
	ok(r == -1 && errno == EMSGSIZE, "... its rewrite is refused (EMSGSIZE)");
	n = build_head(buf, sizeof(buf), "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n",
	    HTTP_FIELDS_MAX - 2, 0);
	rw.rw_framing = HTTP_BODY_LENGTH;
	out.hb_len = 0;
	ok(http_response_parse((const uint8_t *)buf, n, HTTP_M_GET, &rs) == HTTP_OK &&
	    http_response_rewrite((const uint8_t *)buf, &rs, &rw, &out) == 0 &&
	    http_response_parse(out.hb_p, out.hb_len, HTTP_M_GET, &rs2) == HTTP_OK &&
	    rs2.hs_nfields == HTTP_FIELDS_MAX,
	    "positive control: 98 fields + Content-Length + Connection parses");
	http_buf_free(&out);
}

int
main(void)
{
	plan_lazy();
	test_targets();
	test_request_line();
	test_methods();
	test_identity();
	test_limits();
	return tap_failures() != 0;
}
