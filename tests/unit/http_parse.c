/*
 * tests/unit/http_parse.c: the strict HTTP/1.1 request and response head parsers
 * (proxy/proxy_http.c): accepted heads and what they give, one refusal per rule,
 * every prefix of an accepted head, and incremental end-of-head search.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../../proxy/proxy_http.h"
#include "../tap.h"

struct rq_case {
	const char	*in;
	size_t		 len;
	enum http_res	 want;
	const char	*why;		/* refusals: substring of hq_why */
};

#define C(s)	(s), sizeof(s) - 1
#define H	"Host: a.example\r\n"
static const struct rq_case rq_bad[] = {
	/* versions */
	{ C("GET /\r\n\r\n"), HTTP_E_VERSION, "HTTP/0.9" },
	{ C("GET / HTTP/2.0\r\n" H "\r\n"), HTTP_E_VERSION, "version" },
	{ C("GET / HTTP/1.2\r\n" H "\r\n"), HTTP_E_VERSION, "version" },
	{ C("GET / HTTP/0.9\r\n" H "\r\n"), HTTP_E_VERSION, "version" },
	{ C("GET / http/1.1\r\n" H "\r\n"), HTTP_E_BAD, "version" },
	{ C("GET / HTTP/1.1 \r\n" H "\r\n"), HTTP_E_BAD, "version" },
	{ C("GET / HTTP/11\r\n" H "\r\n"), HTTP_E_BAD, "version" },
	/* line ends, NUL, controls */
	{ C("GET / HTTP/1.1\n" H "\r\n"), HTTP_E_BAD, "bare" },
	{ C("GET / HTTP/1.1\r\n" H "\n"), HTTP_E_BAD, "bare" },
	{ C("GET / HTTP/1.1\r\nHost: a.example\rX: y\r\n\r\n"), HTTP_E_BAD, "bare" },
	{ C("GET / HTTP/1.1\r\n" H "X: a\0b\r\n\r\n"), HTTP_E_BAD, "NUL" },
	{ C("GET / HTTP/1.1\r\n" H "X: a\x01" "b\r\n\r\n"), HTTP_E_BAD, "control" },
	{ C("GET / HTTP/1.1\r\n" H "X: a\x7f\r\n\r\n"), HTTP_E_BAD, "control" },
	{ C("\r\nGET / HTTP/1.1\r\n" H "\r\n"), HTTP_E_BAD, "empty line" },
	/* fields */
	{ C("GET / HTTP/1.1\r\n" H "X: 1\r\n 2\r\n\r\n"), HTTP_E_BAD, "obs-fold" },
	{ C("GET / HTTP/1.1\r\n" H "X: 1\r\n\t2\r\n\r\n"), HTTP_E_BAD, "obs-fold" },
	{ C("GET / HTTP/1.1\r\nHost : a.example\r\n\r\n"), HTTP_E_BAD,
	    "whitespace between" },
	{ C("GET / HTTP/1.1\r\n" H "X\t: y\r\n\r\n"), HTTP_E_BAD, "whitespace between" },
	{ C("GET / HTTP/1.1\r\n" H "X(y): z\r\n\r\n"), HTTP_E_BAD, "token" },
	{ C("GET / HTTP/1.1\r\n" H ": z\r\n\r\n"), HTTP_E_BAD, "token" },
	{ C("GET / HTTP/1.1\r\n" H "novalue\r\n\r\n"), HTTP_E_BAD, "colon" },
	/* methods and targets */
	{ C("G(T / HTTP/1.1\r\n" H "\r\n"), HTTP_E_BAD, "method" },
	{ C(" GET / HTTP/1.1\r\n" H "\r\n"), HTTP_E_BAD, "method" },
	{ C("GET  / HTTP/1.1\r\n" H "\r\n"), HTTP_E_BAD, "empty request-target" },
	{ C("GET /a b HTTP/1.1\r\n" H "\r\n"), HTTP_E_BAD, "version" },
	{ C("GET /\x80 HTTP/1.1\r\n" H "\r\n"), HTTP_E_BAD, "invalid byte" },
	{ C("GET /a#frag HTTP/1.1\r\n" H "\r\n"), HTTP_E_BAD, "fragment" },
	{ C("CONNECT a.example:443 HTTP/1.1\r\n" H "\r\n"), HTTP_E_METHOD, "CONNECT" },
	{ C("OPTIONS * HTTP/1.1\r\n" H "\r\n"), HTTP_E_BAD, "asterisk" },
	{ C("GET a.example:443 HTTP/1.1\r\n" H "\r\n"), HTTP_E_BAD, "neither" },
	{ C("GET ftp://a.example/ HTTP/1.1\r\n" H "\r\n"), HTTP_E_BAD, "neither" },
	{ C("GET http://u:p@a.example/ HTTP/1.1\r\n" H "\r\n"), HTTP_E_BAD, "userinfo" },
	{ C("GET http://b.example/ HTTP/1.1\r\n" H "\r\n"), HTTP_E_BAD, "differs" },
	{ C("GET http://a.example:81/ HTTP/1.1\r\n" H "\r\n"), HTTP_E_BAD, "differs" },
	{ C("GET http://a.example/ HTTP/1.0\r\n\r\n"), HTTP_E_BAD, "differs" },
	{ C("GET http:/// HTTP/1.1\r\n" H "\r\n"), HTTP_E_BAD, "authority" },
	/* Host */
	{ C("GET / HTTP/1.1\r\n\r\n"), HTTP_E_BAD, "no Host" },
	{ C("GET / HTTP/1.1\r\n" H H "\r\n"), HTTP_E_BAD, "duplicate Host" },
	{ C("GET / HTTP/1.1\r\n" H "HOST: b.example\r\n\r\n"), HTTP_E_BAD,
	    "duplicate Host" },
	{ C("GET / HTTP/1.1\r\nHost:\r\n\r\n"), HTTP_E_BAD, "invalid Host" },
	{ C("GET / HTTP/1.1\r\nHost: a b\r\n\r\n"), HTTP_E_BAD, "invalid Host" },
	{ C("GET / HTTP/1.1\r\nHost: a.example:99999\r\n\r\n"), HTTP_E_BAD,
	    "invalid Host" },
	{ C("GET / HTTP/1.1\r\nHost: a.example:\r\n\r\n"), HTTP_E_BAD, "invalid Host" },
	{ C("GET / HTTP/1.1\r\nHost: u@a.example\r\n\r\n"), HTTP_E_BAD, "invalid Host" },
	/* framing */
	{ C("POST / HTTP/1.1\r\n" H "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"),
	    HTTP_E_BAD, "both" },
	{ C("POST / HTTP/1.1\r\n" H "Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n"),
	    HTTP_E_BAD, "both" },
	{ C("POST / HTTP/1.1\r\n" H "Content-Length: 3\r\nContent-Length: 3\r\n\r\n"),
	    HTTP_E_BAD, "several Content-Length" },
	{ C("POST / HTTP/1.1\r\n" H "Content-Length: 3, 3\r\n\r\n"), HTTP_E_BAD,
	    "invalid Content-Length" },
	{ C("POST / HTTP/1.1\r\n" H "Content-Length: +3\r\n\r\n"), HTTP_E_BAD,
	    "invalid Content-Length" },
	{ C("POST / HTTP/1.1\r\n" H "Content-Length: 0x10\r\n\r\n"), HTTP_E_BAD,
	    "invalid Content-Length" },
	{ C("POST / HTTP/1.1\r\n" H "Content-Length: \r\n\r\n"), HTTP_E_BAD,
	    "invalid Content-Length" },
	{ C("POST / HTTP/1.1\r\n" H "Content-Length: 99999999999999999999\r\n\r\n"),
	    HTTP_E_BAD, "invalid Content-Length" },
	{ C("POST / HTTP/1.1\r\n" H "Content-Length: 9223372036854775808\r\n\r\n"),
	    HTTP_E_BAD, "invalid Content-Length" },
	{ C("POST / HTTP/1.1\r\n" H "Transfer-Encoding: gzip\r\n\r\n"), HTTP_E_TE,
	    "other than chunked" },
	{ C("POST / HTTP/1.1\r\n" H "Transfer-Encoding: gzip, chunked\r\n\r\n"),
	    HTTP_E_TE, "other than chunked" },
	{ C("POST / HTTP/1.1\r\n" H "Transfer-Encoding: identity\r\n\r\n"), HTTP_E_TE,
	    "other than chunked" },
	{ C("POST / HTTP/1.1\r\n" H "Transfer-Encoding: chunked, chunked\r\n\r\n"),
	    HTTP_E_BAD, "more than once" },
	{ C("POST / HTTP/1.1\r\n" H "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n"),
	    HTTP_E_BAD, "several Transfer-Encoding" },
	{ C("POST / HTTP/1.1\r\n" H "Transfer-Encoding: chunked;x=1\r\n\r\n"),
	    HTTP_E_BAD, "malformed Transfer-Encoding" },
	{ C("POST / HTTP/1.1\r\n" H "Transfer-Encoding: \"chunked\"\r\n\r\n"),
	    HTTP_E_BAD, "malformed Transfer-Encoding" },
	{ C("POST / HTTP/1.1\r\n" H "Transfer-Encoding:\r\n\r\n"), HTTP_E_BAD,
	    "empty Transfer-Encoding" },
	{ C("POST / HTTP/1.0\r\n" H "Transfer-Encoding: chunked\r\n\r\n"), HTTP_E_BAD,
	    "HTTP/1.0" },
	{ C("GET / HTTP/1.1\r\n" H "Connection: close;x\r\n\r\n"), HTTP_E_BAD,
	    "malformed Connection" },
	{ C("PUT / HTTP/1.1\r\n" H "Expect: 200-ok\r\n\r\n"), HTTP_E_EXPECT, "Expect" },
};

struct rq_good {
	const char	*in;
	size_t		 len;
	enum http_method meth;
	const char	*path;
	const char	*query;		/* NULL: no '?' */
	const char	*host;
	enum http_framing framing;
	uint64_t	 length;
	int		 keepalive;
	int		 websocket;
	int		 expect;
	size_t		 nfields;
};

static const struct rq_good rq_good[] = {
	{ C("GET / HTTP/1.1\r\n" H "\r\n"), HTTP_M_GET, "/", NULL, "a.example",
	    HTTP_BODY_NONE, 0, 1, 0, 0, 1 },
	{ C("GET /a/b?x=1&y HTTP/1.1\r\nhOsT:   A.example:8443 \t\r\nX:\r\n\r\nBODY"),
	    HTTP_M_GET, "/a/b", "x=1&y", "A.example:8443", HTTP_BODY_NONE, 0, 1, 0, 0,
	    2 },
	{ C("GET /? HTTP/1.0\r\n\r\n"), HTTP_M_GET, "/", "", "", HTTP_BODY_NONE, 0, 0, 0,
	    0, 0 },
	{ C("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n" H "\r\n"), HTTP_M_GET, "/",
	    NULL, "a.example", HTTP_BODY_NONE, 0, 1, 0, 0, 2 },
	{ C("GET / HTTP/1.1\r\nConnection: foo, close\r\n" H "\r\n"), HTTP_M_GET, "/",
	    NULL, "a.example", HTTP_BODY_NONE, 0, 0, 0, 0, 2 },
	{ C("POST /u HTTP/1.1\r\n" H "Content-Length: 42\r\nExpect: 100-Continue\r\n\r\n"),
	    HTTP_M_POST, "/u", NULL, "a.example", HTTP_BODY_LENGTH, 42, 1, 0, 1, 3 },
	{ C("POST /u HTTP/1.1\r\n" H "Transfer-Encoding: CHUNKED\r\n\r\n"),
	    HTTP_M_POST, "/u", NULL, "a.example", HTTP_BODY_CHUNKED, 0, 1, 0, 0, 2 },
	{ C("POST /u HTTP/1.1\r\n" H "Transfer-Encoding: ,chunked\r\n\r\n"),
	    HTTP_M_POST, "/u", NULL, "a.example", HTTP_BODY_CHUNKED, 0, 1, 0, 0, 2 },
	{ C("GET HTTP://A.EXAMPLE?q HTTP/1.1\r\n" H "\r\n"), HTTP_M_GET, "", "q",
	    "a.example", HTTP_BODY_NONE, 0, 1, 0, 0, 1 },
	{ C("GET https://a.example/p HTTP/1.1\r\n" H "\r\n"), HTTP_M_GET, "/p", NULL,
	    "a.example", HTTP_BODY_NONE, 0, 1, 0, 0, 1 },
	{ C("GET /ws HTTP/1.1\r\n" H "Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n"),
	    HTTP_M_GET, "/ws", NULL, "a.example", HTTP_BODY_NONE, 0, 1, 1, 0, 3 },
	{ C("POST /ws HTTP/1.1\r\n" H "Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n"),
	    HTTP_M_POST, "/ws", NULL, "a.example", HTTP_BODY_NONE, 0, 1, 0, 0, 3 },
	{ C("GET /ws HTTP/1.1\r\n" H "Upgrade: websocket\r\n\r\n"),
	    HTTP_M_GET, "/ws", NULL, "a.example", HTTP_BODY_NONE, 0, 1, 0, 0, 2 },
	{ C("TRACE / HTTP/1.1\r\n" H "\r\n"), HTTP_M_TRACE, "/", NULL, "a.example",
	    HTTP_BODY_NONE, 0, 1, 0, 0, 1 },
	{ C("PROPFIND / HTTP/1.1\r\nHost: [::1]:80\r\nX: caf\xc3\xa9\r\n\r\n"),
	    HTTP_M_OTHER, "/", NULL, "[::1]:80", HTTP_BODY_NONE, 0, 1, 0, 0, 2 },
	{ C("DELETE /x HTTP/1.1\r\n" H "Content-Length: 0\r\n\r\n"), HTTP_M_DELETE,
	    "/x", NULL, "a.example", HTTP_BODY_LENGTH, 0, 1, 0, 0, 2 },
};

static int
span_is(const char *buf, struct http_span sp, const char *want, const char *what)
{
	char got[256];

	snprintf(got, sizeof(got), "%.*s", (int)sp.len, buf + sp.off);
	return is_string(want, got, "%s", what);
}

static void
test_requests(void)
{
	struct http_request rq;
	enum http_res r;
	size_t i, k;

	for (i = 0; i < sizeof(rq_bad) / sizeof(rq_bad[0]); i++) {
		r = http_request_parse((const uint8_t *)rq_bad[i].in, rq_bad[i].len,
		    &rq);
		if (!is_int(rq_bad[i].want, r, "refused %zu: %s", i,
		    rq_bad[i].why) || !ok(rq.hq_why != NULL &&
		    strstr(rq.hq_why, rq_bad[i].why) != NULL, "why %zu: %s", i,
		    rq.hq_why ? rq.hq_why : "(null)"))
			diag("input: %.*s", (int)rq_bad[i].len, rq_bad[i].in);
	}
	for (i = 0; i < sizeof(rq_good) / sizeof(rq_good[0]); i++) {
		const struct rq_good *g = &rq_good[i];
		const char *end = strstr(g->in, "\r\n\r\n");

		r = http_request_parse((const uint8_t *)g->in, g->len, &rq);
		if (!is_int(HTTP_OK, r, "accepted %zu", i)) {
			diag("why: %s", rq.hq_why);
			continue;
		}
		is_int((long long)(end - g->in + 4), (long long)rq.hq_head_len,
		    "head length %zu", i);
		is_int(g->meth, rq.hq_meth, "method %zu", i);
		span_is(g->in, rq.hq_path, g->path, "path");
		is_int(g->query != NULL, rq.hq_has_query, "has query %zu", i);
		if (g->query != NULL)
			span_is(g->in, rq.hq_query, g->query, "query");
		span_is(g->in, rq.hq_host, g->host, "host");
		is_int(g->framing, rq.hq_framing, "framing %zu", i);
		is_int((long long)g->length, (long long)rq.hq_length, "length %zu", i);
		is_int(g->keepalive, rq.hq_keepalive, "keep-alive %zu", i);
		is_int(g->websocket, rq.hq_websocket, "websocket %zu", i);
		is_int(g->expect, rq.hq_expect_continue, "100-continue %zu", i);
		is_int((long long)g->nfields, (long long)rq.hq_nfields, "fields %zu", i);
		/* Every shorter prefix: NEED_MORE, never OK. */
		for (k = 0; k < rq.hq_head_len; k++) {
			struct http_request r2;

			if (http_request_parse((const uint8_t *)g->in, k, &r2) !=
			    HTTP_NEED_MORE)
				break;
		}
		is_int((long long)rq.hq_head_len, (long long)k,
		    "every prefix of %zu needs more", i);
	}
}

static void
test_limits(void)
{
	static uint8_t buf[HTTP_HEAD_MAX + 64];
	struct http_request rq;
	size_t n, i;

	/* 100 fields pass, 101 are 431 */
	for (int extra = 0; extra < 2; extra++) {
		n = (size_t)snprintf((char *)buf, sizeof(buf),
		    "GET / HTTP/1.1\r\n" H);
		for (i = 1; i < HTTP_FIELDS_MAX + (size_t)extra; i++)
			n += (size_t)snprintf((char *)buf + n, sizeof(buf) - n,
			    "X-%zu: v\r\n", i);
		n += (size_t)snprintf((char *)buf + n, sizeof(buf) - n, "\r\n");
		is_int(extra ? HTTP_E_TOO_LARGE : HTTP_OK,
		    http_request_parse(buf, n, &rq), "%d fields over the limit",
		    extra);
	}
	/* a head of exactly HTTP_HEAD_MAX passes; one byte more is 431 */
	for (int extra = 0; extra < 2; extra++) {
		const char *pre = "GET / HTTP/1.1\r\n" H "X: ";

		n = strlen(pre);
		memcpy(buf, pre, n);
		memset(buf + n, 'a', HTTP_HEAD_MAX - n - 4 + (size_t)extra);
		n = HTTP_HEAD_MAX - 4 + (size_t)extra;
		memcpy(buf + n, "\r\n\r\n", 4);
		n += 4;
		is_int(extra ? HTTP_E_TOO_LARGE : HTTP_OK,
		    http_request_parse(buf, n, &rq), "head of max%s", extra ?
		    "+1" : "");
	}
	/* no end within the limit: 431 (414 when the request line has no end) */
	memset(buf, 'a', sizeof(buf));
	memcpy(buf, "GET /", 5);
	is_int(HTTP_E_URI_TOO_LONG, http_request_parse(buf, sizeof(buf), &rq),
	    "endless request line");
	memcpy(buf, "GET / HTTP/1.1\r\nX: ", 19);
	is_int(HTTP_E_TOO_LARGE, http_request_parse(buf, sizeof(buf), &rq),
	    "endless field");
	n = (size_t)snprintf((char *)buf, sizeof(buf), "GET /");
	memset(buf + n, 'a', HTTP_LINE_MAX);
	n += HTTP_LINE_MAX;
	n += (size_t)snprintf((char *)buf + n, sizeof(buf) - n,
	    " HTTP/1.1\r\n" H "\r\n");
	is_int(HTTP_E_URI_TOO_LONG, http_request_parse(buf, n, &rq),
	    "request line over HTTP_LINE_MAX");
	/* a long method */
	n = (size_t)snprintf((char *)buf, sizeof(buf),
	    "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA / HTTP/1.1\r\n" H "\r\n");
	is_int(HTTP_E_BAD, http_request_parse(buf, n, &rq), "method too long");
}

static void
test_head_find(void)
{
	static const char head[] = "GET / HTTP/1.1\r\nHost: a\r\nX: y\r\n\r\nrest";
	size_t st = 0, hl = 0, i;
	enum http_res r = HTTP_NEED_MORE;
	int calls = 0;

	/* fed one byte at a time: found exactly at the end of the empty line */
	for (i = 0; i <= sizeof(head) - 1 && r == HTTP_NEED_MORE; i++, calls++)
		r = http_head_find((const uint8_t *)head, i, &st, &hl);
	is_int(HTTP_OK, r, "byte-wise head_find");
	is_int((long long)(strstr(head, "\r\n\r\n") - head + 4), (long long)hl,
	    "byte-wise head length");
	st = 0;
	is_int(HTTP_E_BAD, http_head_find((const uint8_t *)"GET /\rX", 7, &st, &hl),
	    "bare CR found early");
	st = 0;
	is_int(HTTP_E_BAD, http_head_find((const uint8_t *)"GET /\nX", 7, &st, &hl),
	    "bare LF found early");
	st = 0;
	is_int(HTTP_E_BAD, http_head_find((const uint8_t *)"GE\0T", 4, &st, &hl),
	    "NUL found early");
	st = 0;
	is_int(HTTP_NEED_MORE, http_head_find((const uint8_t *)"GET /\r", 6, &st,
	    &hl), "CR at the end waits");
	is_int(HTTP_E_BAD, http_head_find((const uint8_t *)"GET /\rX", 7, &st, &hl),
	    "... and is checked when its next byte comes");
}

struct rs_case {
	const char	*in;
	size_t		 len;
	enum http_method meth;
	enum http_res	 want;
	int		 status;
	enum http_framing framing;
	uint64_t	 length;
	int		 keepalive;
	int		 interim;
	int		 switching;
};

static const struct rs_case rs_cases[] = {
	{ C("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"), HTTP_M_GET, HTTP_OK,
	    200, HTTP_BODY_LENGTH, 5, 1, 0, 0 },
	{ C("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"), HTTP_M_GET, HTTP_OK,
	    200, HTTP_BODY_CHUNKED, 0, 1, 0, 0 },
	{ C("HTTP/1.1 200 OK\r\n\r\n"), HTTP_M_GET, HTTP_OK, 200, HTTP_BODY_CLOSE, 0, 0,
	    0, 0 },
	{ C("HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\n"), HTTP_M_GET, HTTP_OK, 200,
	    HTTP_BODY_LENGTH, 1, 0, 0, 0 },
	{ C("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\n"),
	    HTTP_M_GET, HTTP_OK, 200, HTTP_BODY_LENGTH, 1, 1, 0, 0 },
	{ C("HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n"), HTTP_M_HEAD, HTTP_OK, 200,
	    HTTP_BODY_NONE, 0, 1, 0, 0 },
	{ C("HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n"), HTTP_M_GET, HTTP_OK,
	    204, HTTP_BODY_NONE, 0, 1, 0, 0 },
	{ C("HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n"), HTTP_M_GET,
	    HTTP_OK, 304, HTTP_BODY_NONE, 0, 1, 0, 0 },
	{ C("HTTP/1.1 100 Continue\r\n\r\n"), HTTP_M_POST, HTTP_OK, 100, HTTP_BODY_NONE,
	    0, 1, 1, 0 },
	{ C("HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n"),
	    HTTP_M_GET, HTTP_OK, 101, HTTP_BODY_NONE, 0, 0, 0, 1 },
	{ C("HTTP/1.1 200\r\nConnection: close\r\nContent-Length: 2\r\n\r\n"),
	    HTTP_M_GET, HTTP_OK, 200, HTTP_BODY_LENGTH, 2, 0, 0, 0 },
	{ C("HTTP/1.1 404 \r\nContent-Length: 2\r\n\r\n"), HTTP_M_GET, HTTP_OK, 404,
	    HTTP_BODY_LENGTH, 2, 1, 0, 0 },
	/* refusals */
	{ C("HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: upgrade\r\n\r\n"),
	    HTTP_M_GET, HTTP_E_BAD, 0, 0, 0, 0, 0, 0 },
	{ C("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n"),
	    HTTP_M_GET, HTTP_E_BAD, 0, 0, 0, 0, 0, 0 },
	{ C("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"),
	    HTTP_M_GET, HTTP_E_BAD, 0, 0, 0, 0, 0, 0 },
	{ C("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n"), HTTP_M_GET,
	    HTTP_E_TE, 0, 0, 0, 0, 0, 0 },
	{ C("HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"), HTTP_M_GET,
	    HTTP_E_BAD, 0, 0, 0, 0, 0, 0 },
	{ C("HTTP/1.1 200 OK\r\nX: 1\r\n 2\r\n\r\n"), HTTP_M_GET, HTTP_E_BAD, 0, 0, 0,
	    0, 0, 0 },
	{ C("HTTP/1.1 200 OK\nX: 1\r\n\r\n"), HTTP_M_GET, HTTP_E_BAD, 0, 0, 0, 0, 0, 0 },
	{ C("HTTP/1.1 200 OK\r\nX : 1\r\n\r\n"), HTTP_M_GET, HTTP_E_BAD, 0, 0, 0, 0, 0,
	    0 },
	{ C("HTTP/1.1 200 O\x01K\r\n\r\n"), HTTP_M_GET, HTTP_E_BAD, 0, 0, 0, 0, 0, 0 },
	{ C("HTTP/1.1 099 X\r\n\r\n"), HTTP_M_GET, HTTP_E_BAD, 0, 0, 0, 0, 0, 0 },
	{ C("HTTP/1.1 600 X\r\n\r\n"), HTTP_M_GET, HTTP_E_BAD, 0, 0, 0, 0, 0, 0 },
	{ C("HTTP/1.1 20 X\r\n\r\n"), HTTP_M_GET, HTTP_E_BAD, 0, 0, 0, 0, 0, 0 },
	{ C("HTTP/1.1 2000 X\r\n\r\n"), HTTP_M_GET, HTTP_E_BAD, 0, 0, 0, 0, 0, 0 },
	{ C("HTTP/2.0 200 X\r\n\r\n"), HTTP_M_GET, HTTP_E_VERSION, 0, 0, 0, 0, 0, 0 },
	{ C("ICY 200 OK\r\n\r\n"), HTTP_M_GET, HTTP_E_BAD, 0, 0, 0, 0, 0, 0 },
	{ C("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n"), HTTP_M_GET, HTTP_E_BAD,
	    0, 0, 0, 0, 0, 0 },
};

static void
test_responses(void)
{
	struct http_response rs, r2;
	enum http_res r;
	size_t i, k;

	for (i = 0; i < sizeof(rs_cases) / sizeof(rs_cases[0]); i++) {
		const struct rs_case *c = &rs_cases[i];

		r = http_response_parse((const uint8_t *)c->in, c->len, c->meth, &rs);
		if (!is_int(c->want, r, "response %zu", i))
			diag("%s / %.*s", rs.hs_why, (int)c->len, c->in);
		if (r != HTTP_OK) {
			ok(rs.hs_why != NULL, "response %zu says why", i);
			continue;
		}
		is_int(c->status, rs.hs_status, "status %zu", i);
		is_int(c->framing, rs.hs_framing, "framing %zu", i);
		is_int((long long)c->length, (long long)rs.hs_length, "length %zu", i);
		is_int(c->keepalive, rs.hs_keepalive, "keep-alive %zu", i);
		is_int(c->interim, rs.hs_interim, "interim %zu", i);
		is_int(c->switching, rs.hs_switching, "switching %zu", i);
		for (k = 0; k < rs.hs_head_len; k++)
			if (http_response_parse((const uint8_t *)c->in, k, c->meth,
			    &r2) != HTTP_NEED_MORE)
				break;
		is_int((long long)rs.hs_head_len, (long long)k,
		    "every prefix of response %zu needs more", i);
	}
}

/* An upstream proxy's answer to CONNECT (http_connect_reply()). */
struct cr_case {
	const char	*in;
	size_t		 len;
	enum http_res	 want;
	int		 status;
	size_t		 used;		/* HTTP_OK: where the tunnel starts */
};

#define EST	"HTTP/1.1 200 Connection established\r\n\r\n"
static const struct cr_case cr_cases[] = {
	{ C(EST), HTTP_OK, 200, sizeof(EST) - 1 },
	/* bytes after the head are the tunnel's, whatever the fields say */
	{ C(EST "SSH-2.0-banner\r\n"), HTTP_OK, 200, sizeof(EST) - 1 },
	{ C("HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nABCDEFGH"), HTTP_OK, 200,
	    sizeof("HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\n") - 1 },
	/* interim answers are skipped */
	{ C("HTTP/1.1 100 Continue\r\n\r\n" EST "x"), HTTP_OK, 200,
	    sizeof("HTTP/1.1 100 Continue\r\n\r\n" EST) - 1 },
	{ C("HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: "
	    "Basic realm=\"x\"\r\nContent-Length: 3\r\n\r\nno!"), HTTP_OK, 407,
	    sizeof("HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: "
	    "Basic realm=\"x\"\r\nContent-Length: 3\r\n\r\n") - 1 },
	{ C("HTTP/1.1 403 Forbidden\r\n\r\n"), HTTP_OK, 403,
	    sizeof("HTTP/1.1 403 Forbidden\r\n\r\n") - 1 },
	{ C("HTTP/1.1 200 Connection established\r\n"), HTTP_NEED_MORE, 0, 0 },
	{ C("HTTP/1.1 100 Continue\r\n\r\n"), HTTP_NEED_MORE, 0, 0 },
	{ C(""), HTTP_NEED_MORE, 0, 0 },
	/* refusals */
	{ C("SSH-2.0-OpenSSH_9.2\r\n\r\n"), HTTP_E_BAD, 0, 0 },
	{ C("HTTP/1.1 200 OK\n\n"), HTTP_E_BAD, 0, 0 },
	{ C("HTTP/2 200\r\n\r\n"), HTTP_E_BAD, 0, 0 },
	{ C("HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\n"
	    "Upgrade: websocket\r\n\r\n"), HTTP_E_BAD, 0, 0 },
	{ C("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"),
	    HTTP_E_BAD, 0, 0 },
};

static void
test_connect_reply(void)
{
	char big[600];
	const char *why;
	enum http_res r;
	size_t i, used;
	int status;

	for (i = 0; i < sizeof(cr_cases) / sizeof(cr_cases[0]); i++) {
		const struct cr_case *c = &cr_cases[i];

		r = http_connect_reply((const uint8_t *)c->in, c->len, 16384, &status,
		    &used, &why);
		if (!is_int(c->want, r, "CONNECT answer %zu", i))
			diag("%s / %.*s", why != NULL ? why : "-", (int)c->len, c->in);
		if (r == HTTP_OK) {
			is_int(c->status, status, "CONNECT answer %zu: status", i);
			is_int((long long)c->used, (long long)used,
			    "CONNECT answer %zu: the tunnel's first byte", i);
		} else if (r != HTTP_NEED_MORE)
			ok(why != NULL, "CONNECT answer %zu says why", i);
	}
	/* The limit: a head longer than max is refused, one within it is not. */
	memset(big, 'a', sizeof(big));
	memcpy(big, "HTTP/1.1 200 OK\r\nX: ", 20);
	memcpy(big + sizeof(big) - 4, "\r\n\r\n", 4);
	r = http_connect_reply((const uint8_t *)big, sizeof(big), 512, &status,
	    &used, &why);
	ok(r == HTTP_E_TOO_LARGE && why != NULL, "an answer over max is refused");
	r = http_connect_reply((const uint8_t *)big, 300, 512, &status, &used, &why);
	is_int(HTTP_NEED_MORE, r, "... while under max it needs more");
	r = http_connect_reply((const uint8_t *)big, sizeof(big), sizeof(big),
	    &status, &used, &why);
	ok(r == HTTP_OK && status == 200 && used == sizeof(big),
	    "the same answer within max is taken (positive control)");
}

static void
test_misc(void)
{
	struct http_span p, q;
	static const char t[] = "/a/b?c=d?e";
	const char *buf = "GET / HTTP/1.1\r\nHost: a\r\nX-A: 1\r\nx-a: 2\r\n\r\n";
	struct http_request rq;

	is_int(1, http_target_split((const uint8_t *)t, sizeof(t) - 1, &p, &q),
	    "split: has query");
	span_is(t, p, "/a/b", "split path");
	span_is(t, q, "c=d?e", "split query");
	is_int(0, http_target_split((const uint8_t *)"/x", 2, &p, &q), "no query");
	is_int(HTTP_OK, http_request_parse((const uint8_t *)buf, strlen(buf), &rq),
	    "two X-A");
	is_int(1, http_field_find((const uint8_t *)buf, rq.hq_fields, rq.hq_nfields,
	    "X-A", 0), "find first");
	is_int(2, http_field_find((const uint8_t *)buf, rq.hq_fields, rq.hq_nfields,
	    "x-a", 2), "find next");
	is_int(-1, http_field_find((const uint8_t *)buf, rq.hq_fields, rq.hq_nfields,
	    "x-b", 0), "find none");
	is_int(400, http_res_status(HTTP_E_BAD), "400");
	is_int(431, http_res_status(HTTP_E_TOO_LARGE), "431");
	is_int(501, http_res_status(HTTP_E_TE), "501");
	is_int(505, http_res_status(HTTP_E_VERSION), "505");
	is_int(414, http_res_status(HTTP_E_URI_TOO_LONG), "414");
}

int
main(void)
{
	plan_lazy();
	test_requests();
	test_limits();
	test_head_find();
	test_responses();
	test_connect_reply();
	test_misc();
	return tap_failures() != 0;
}
