/*
 * tests/unit/http_rewrite.c: building the outgoing heads (proxy/proxy_http.c):
 * hop-by-hop removal before injection ("Connection: authorization" cannot strip or
 * expose the injected credential), replacement of every client instance of an
 * injected header, framing and Connection regenerated, absolute-form to
 * origin-form, the value hook, and that every output parses again.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../../proxy/proxy_http.h"
#include "../tap.h"

static const char secret[] = "Bearer s3cr3t-CANARY-0123456789";

static int
rewrite_req(const char *in, const struct http_rewrite *rw, struct http_buf *out,
    struct http_request *rq)
{
	out->hb_len = 0;
	if (http_request_parse((const uint8_t *)in, strlen(in), rq) != HTTP_OK) {
		diag("parse: %s", rq->hq_why);
		return -1;
	}
	if (http_request_rewrite((const uint8_t *)in, rq, rw, out) == -1)
		return -1;
	/* NUL-terminate for strstr, outside hb_len */
	if (http_buf_add(out, "", 1) == -1)
		return -1;
	out->hb_len--;
	return 0;
}

static int
count(const char *hay, const char *needle)
{
	int n = 0;

	while ((hay = strstr(hay, needle)) != NULL) {
		n++;
		hay++;
	}
	return n;
}

static void
test_injection(void)
{
	struct http_hdr_set set = { "Authorization", (const uint8_t *)secret,
	    sizeof(secret) - 1 };
	struct http_rewrite rw = { .rw_set = &set, .rw_nset = 1 };
	struct http_buf out = HTTP_BUF_INIT;
	struct http_request rq, rq2;
	const char *o;

	/* Connection: authorization must neither strip ours nor make it hop-by-hop */
	if (rewrite_req("GET /x HTTP/1.1\r\nHost: a.example\r\n"
	    "Connection: authorization, x-drop\r\nAuthorization: Bearer PLACEHOLDER\r\n"
	    "X-Drop: 1\r\nX-Keep: 2\r\n\r\n", &rw, &out, &rq) == -1)
		bail("rewrite: %s", strerror(errno));
	o = (const char *)out.hb_p;
	is_int(1, count(o, secret), "injected credential present once");
	is_int(0, count(o, "PLACEHOLDER"), "client's Authorization gone");
	is_int(0, count(o, "X-Drop"), "field named by Connection dropped");
	is_int(1, count(o, "X-Keep: 2\r\n"), "other field kept");
	is_int(0, count(o, "authorization,"), "client Connection not forwarded");
	is_int(1, count(o, "\r\nConnection: keep-alive\r\n"), "our Connection");
	is_int(0, strncmp(o, "GET /x HTTP/1.1\r\nHost: a.example\r\n", 34),
	    "request line and Host first");
	is_int(HTTP_OK, http_request_parse(out.hb_p, out.hb_len, &rq2),
	    "output parses");
	is_int((long long)out.hb_len, (long long)rq2.hq_head_len, "all of it");

	/* several client instances of the injected header, any case */
	if (rewrite_req("GET / HTTP/1.1\r\nauthorization: a\r\nHost: a.example\r\n"
	    "AUTHORIZATION: b\r\n\r\n", &rw, &out, &rq) == -1)
		bail("rewrite");
	o = (const char *)out.hb_p;
	is_int(1, count(o, "uthorization") + count(o, "UTHORIZATION"),
	    "one Authorization left");
	is_int(1, count(o, secret), "and it is ours");

	/* hop-by-hop fields */
	if (rewrite_req("POST / HTTP/1.1\r\nHost: a.example\r\nKeep-Alive: 5\r\n"
	    "Proxy-Connection: x\r\nTE: trailers\r\nTrailer: X\r\nUpgrade: h2c\r\n"
	    "Proxy-Authorization: Basic eA==\r\nProxy-Authenticate: x\r\n"
	    "Content-Length: 5\r\nConnection: close\r\n\r\n", &rw, &out, &rq) == -1)
		bail("rewrite");
	o = (const char *)out.hb_p;
	ok(count(o, "Keep-Alive") + count(o, "Proxy-") + count(o, "TE:") +
	    count(o, "Trailer") + count(o, "Upgrade") == 0, "hop-by-hop removed");
	is_int(0, count(o, "Content-Length"), "framing not copied (rw_framing NONE)");

	/* framing regenerated */
	rw.rw_framing = HTTP_BODY_LENGTH;
	rw.rw_length = 12345;
	rw.rw_close = 1;
	if (rewrite_req("POST / HTTP/1.1\r\nHost: a.example\r\nContent-Length: 5\r\n\r\n",
	    &rw, &out, &rq) == -1)
		bail("rewrite");
	o = (const char *)out.hb_p;
	is_int(1, count(o, "\r\nContent-Length: 12345\r\n"), "Content-Length ours");
	is_int(1, count(o, "\r\nConnection: close\r\n"), "Connection: close");
	rw.rw_framing = HTTP_BODY_CHUNKED;
	rw.rw_close = 0;
	if (rewrite_req("POST / HTTP/1.1\r\nHost: a.example\r\nTransfer-Encoding: chunked\r\n\r\n",
	    &rw, &out, &rq) == -1)
		bail("rewrite");
	o = (const char *)out.hb_p;
	is_int(1, count(o, "Transfer-Encoding: chunked"), "chunked once");
	is_int(HTTP_OK, http_request_parse(out.hb_p, out.hb_len, &rq2),
	    "chunked output parses");
	is_int(HTTP_BODY_CHUNKED, rq2.hq_framing, "and is chunked");

	/* Connection: host does not remove Host */
	rw.rw_framing = HTTP_BODY_NONE;
	if (rewrite_req("GET / HTTP/1.1\r\nHost: a.example\r\nConnection: host\r\n\r\n",
	    &rw, &out, &rq) == -1)
		bail("rewrite");
	is_int(1, count((const char *)out.hb_p, "Host: a.example"),
	    "Host survives Connection: host");

	/* absolute-form becomes origin-form */
	if (rewrite_req("GET http://a.example?q=1 HTTP/1.1\r\nHost: a.example\r\n\r\n",
	    &rw, &out, &rq) == -1)
		bail("rewrite");
	is_int(0, strncmp((const char *)out.hb_p, "GET /?q=1 HTTP/1.1\r\n", 20),
	    "origin-form target");

	/* HTTP/1.0 without Host: rw_host added, or EINVAL */
	rw.rw_host = "a.example";
	if (rewrite_req("GET / HTTP/1.0\r\n\r\n", &rw, &out, &rq) == -1)
		bail("rewrite");
	is_int(0, strncmp((const char *)out.hb_p,
	    "GET / HTTP/1.1\r\nHost: a.example\r\n", 33), "Host added");
	rw.rw_host = NULL;
	errno = 0;
	is_int(-1, rewrite_req("GET / HTTP/1.0\r\n\r\n", &rw, &out, &rq),
	    "no Host and no rw_host");
	is_int(EINVAL, errno, "EINVAL");

	/* websocket */
	rw.rw_upgrade = 1;
	if (rewrite_req("GET /ws HTTP/1.1\r\nHost: a.example\r\nConnection: Upgrade\r\n"
	    "Upgrade: websocket\r\nSec-WebSocket-Key: k\r\n\r\n", &rw, &out, &rq) == -1)
		bail("rewrite");
	o = (const char *)out.hb_p;
	is_int(1, count(o, "Connection: upgrade\r\nUpgrade: websocket\r\n"),
	    "upgrade regenerated");
	is_int(1, count(o, "Sec-WebSocket-Key: k"), "websocket fields kept");
	is_int(HTTP_OK, http_request_parse(out.hb_p, out.hb_len, &rq2), "parses");
	ok(rq2.hq_websocket, "still a websocket request");
	rw.rw_upgrade = 0;

	/* an invalid set entry is refused */
	{
		struct http_hdr_set badset = { "Bad Name", (const uint8_t *)"x", 1 };
		struct http_hdr_set badval = { "X", (const uint8_t *)"a\r\nY: b", 7 };
		struct http_rewrite rb = { .rw_set = &badset, .rw_nset = 1 };

		errno = 0;
		is_int(-1, rewrite_req("GET / HTTP/1.1\r\nHost: a\r\n\r\n", &rb, &out,
		    &rq), "bad set name");
		is_int(EINVAL, errno, "EINVAL");
		rb.rw_set = &badval;
		is_int(-1, rewrite_req("GET / HTTP/1.1\r\nHost: a\r\n\r\n", &rb, &out,
		    &rq), "CRLF in a set value (header injection)");
	}
	http_buf_free(&out);
}

static int
upper_fn(void *arg, const uint8_t *name, size_t nl, const uint8_t *v, size_t vl,
    struct http_buf *out)
{
	size_t i;
	uint8_t c;

	(*(int *)arg)++;
	if (nl != 1 || name[0] != 'X')
		return 0;
	for (i = 0; i < vl; i++) {
		c = v[i] >= 'a' && v[i] <= 'z' ? v[i] - 32 : v[i];
		if (http_buf_add(out, &c, 1) == -1)
			return -1;
	}
	return 1;
}

static void
test_value_fn(void)
{
	struct http_rewrite rw = { 0 };
	struct http_buf out = HTTP_BUF_INIT;
	struct http_request rq;
	int calls = 0;

	rw.rw_value_fn = upper_fn;
	rw.rw_value_arg = &calls;
	if (rewrite_req("GET / HTTP/1.1\r\nHost: a.example\r\nX: abc\r\nY: abc\r\n"
	    "Connection: z\r\nZ: q\r\n\r\n", &rw, &out, &rq) == -1)
		bail("rewrite");
	is_int(3, calls, "called for kept fields only");
	ok(strstr((const char *)out.hb_p, "\r\nX: ABC\r\nY: abc\r\n") != NULL,
	    "value replaced");
	http_buf_free(&out);
}

static void
test_response(void)
{
	static const char in[] = "HTTP/1.1 200 Fine\r\nConnection: x-a\r\nX-A: 1\r\n"
	    "Keep-Alive: 3\r\nContent-Length: 10\r\nSet-Cookie: a=b\r\n\r\n";
	struct http_rewrite rw = { 0 };
	struct http_buf out = HTTP_BUF_INIT;
	struct http_response rs, rs2;
	const char *want = "HTTP/1.1 200 Fine\r\nSet-Cookie: a=b\r\n"
	    "Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n";

	if (http_response_parse((const uint8_t *)in, sizeof(in) - 1, HTTP_M_GET,
	    &rs) != HTTP_OK)
		bail("parse");
	rw.rw_framing = HTTP_BODY_CHUNKED;
	is_int(0, http_response_rewrite((const uint8_t *)in, &rs, &rw, &out),
	    "response rewrite");
	ok(out.hb_len == strlen(want) && memcmp(out.hb_p, want, out.hb_len) == 0,
	    "response head as wanted");
	is_int(HTTP_OK, http_response_parse(out.hb_p, out.hb_len, HTTP_M_GET, &rs2),
	    "parses");
	is_int(HTTP_BODY_CHUNKED, rs2.hs_framing, "chunked");
	http_buf_free(&out);
}

/* rw_drop: every client instance of the named fields goes, nothing is added. */
static void
test_drop(void)
{
	static const char *const drop[] = { "range", "if-range" };
	struct http_rewrite rw = { .rw_drop = drop, .rw_ndrop = 2 };
	struct http_buf out = HTTP_BUF_INIT;
	struct http_request rq;
	const char *o;

	if (rewrite_req("GET /echo HTTP/1.1\r\nHost: a.example\r\n"
	    "Range: bytes=0-3\r\nRANGE: bytes=4-7\r\nIf-Range: \"x\"\r\n"
	    "X-Ranged: 1\r\n\r\n", &rw, &out, &rq) == -1)
		bail("rewrite: %s", strerror(errno));
	o = (const char *)out.hb_p;
	is_int(0, count(o, "bytes="), "every Range instance dropped, any case");
	is_int(0, count(o, "If-Range"), "If-Range dropped");
	is_int(1, count(o, "\r\nX-Ranged: 1\r\n"), "a longer name is kept");
	rw.rw_ndrop = 0;
	if (rewrite_req("GET / HTTP/1.1\r\nHost: a.example\r\nRange: bytes=0-3\r\n"
	    "\r\n", &rw, &out, &rq) == -1)
		bail("rewrite");
	is_int(1, count((const char *)out.hb_p, "Range: bytes=0-3"),
	    "without rw_drop, Range goes through");
	http_buf_free(&out);
}

int
main(void)
{
	plan_lazy();
	test_injection();
	test_value_fn();
	test_response();
	test_drop();
	return tap_failures() != 0;
}
