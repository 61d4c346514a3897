/*
 * tests/unit/peek_http.c: the HTTP/1.x request-head peek (proxy/proxy_peek.c) and
 * the first-bytes classifier: accepted heads, every refusal, and byte-wise feeding.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../../proxy/proxy_peek.h"
#include "../tap.h"

struct http_case {
	const char	*in;
	size_t		 len;
	enum peek_status want;
	const char	*host;		/* on PEEK_OK */
	unsigned int	 port;
	const char	*why;		/* on PEEK_BAD: substring of ph_why */
};

#define C(s)	(s), sizeof(s) - 1
static const struct http_case cases[] = {
	{ C("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"), PEEK_OK, "example.com", 0,
	    NULL },
	{ C("GET /a?b HTTP/1.0\r\nUser-Agent: x\r\nhOsT:   Example.COM:8080 \r\n\r\n"),
	    PEEK_OK, "Example.COM", 8080, NULL },
	{ C("GET http://example.com/x HTTP/1.1\r\nHost: example.com\r\n\r\n"), PEEK_OK,
	    "example.com", 0, NULL },
	{ C("GET HTTP://EXAMPLE.com:81 HTTP/1.1\r\nHost: example.com:81\r\n\r\n"),
	    PEEK_OK, "example.com", 81, NULL },
	{ C("OPTIONS * HTTP/1.1\r\nHost: a.b\r\n\r\n"), PEEK_OK, "a.b", 0, NULL },
	{ C("POST /x HTTP/1.1\r\nHost: a.b\r\nX: caf\xc3\xa9\r\n\r\nBODY"), PEEK_OK,
	    "a.b", 0, NULL },
	{ C("GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n"), PEEK_OK, "[::1]", 80, NULL },

	{ C("GET / HTTP/1.1\r\nHost: a.com\r\nHost: a.com\r\n\r\n"), PEEK_BAD, NULL, 0,
	    "duplicate Host" },
	{ C("GET / HTTP/1.1\r\nHost: a.com\r\nhost: b.com\r\n\r\n"), PEEK_BAD, NULL, 0,
	    "duplicate Host" },
	{ C("GET / HTTP/1.1\r\nUser-Agent: x\r\n\r\n"), PEEK_BAD, NULL, 0, "no Host" },
	{ C("GET / HTTP/1.0\r\n\r\n"), PEEK_BAD, NULL, 0, "no Host" },
	{ C("GET / HTTP/1.1\nHost: a.com\r\n\r\n"), PEEK_BAD, NULL, 0, "bare LF" },
	{ C("GET / HTTP/1.1\r\nHost: a.com\n\r\n"), PEEK_BAD, NULL, 0, "bare LF" },
	{ C("GET / HTTP/1.1\r\nHost: a.com\r\n\n"), PEEK_BAD, NULL, 0, "bare LF" },
	{ C("GET / HTTP/1.1\r\nHost: a.com\rX: y\r\n\r\n"), PEEK_BAD, NULL, 0,
	    "bare CR" },
	{ C("GET / HTTP/1.1\r\nHost: a.com\r\nX: 1\r\n 2\r\n\r\n"), PEEK_BAD, NULL, 0,
	    "obs-fold" },
	{ C("GET / HTTP/1.1\r\n Host: a.com\r\n\r\n"), PEEK_BAD, NULL, 0, "obs-fold" },
	{ C("GET / HTTP/1.1\r\nHost : a.com\r\n\r\n"), PEEK_BAD, NULL, 0,
	    "whitespace before colon" },
	{ C("GET / HTTP/1.1\r\nHost\t: a.com\r\n\r\n"), PEEK_BAD, NULL, 0,
	    "whitespace before colon" },
	{ C("GET / HTTP/1.1\r\nHost: a.c\0om\r\n\r\n"), PEEK_BAD, NULL, 0,
	    "control byte" },
	{ C("GET / HTTP/1.1\r\nX: \x01\r\nHost: a.com\r\n\r\n"), PEEK_BAD, NULL, 0,
	    "control byte" },
	{ C("GET / HTTP/1.1\r\nHost: a.com\r\nX\0: y\r\n\r\n"), PEEK_BAD, NULL, 0,
	    "bad field name" },
	{ C("GET / HTTP/1.1\r\n: y\r\nHost: a.com\r\n\r\n"), PEEK_BAD, NULL, 0,
	    "bad field name" },
	{ C("GET / HTTP/2.0\r\nHost: a.com\r\n\r\n"), PEEK_BAD, NULL, 0, "version" },
	{ C("GET / HTTP/1.1 \r\nHost: a.com\r\n\r\n"), PEEK_BAD, NULL, 0, "version" },
	{ C("GET /  HTTP/1.1\r\nHost: a.com\r\n\r\n"), PEEK_BAD, NULL, 0, "version" },
	{ C("GET /\x7f HTTP/1.1\r\nHost: a.com\r\n\r\n"), PEEK_BAD, NULL, 0,
	    "request-target" },
	{ C("GET http://b.com/ HTTP/1.1\r\nHost: a.com\r\n\r\n"), PEEK_BAD, NULL, 0,
	    "differs from Host" },
	{ C("GET http://a.com:81/ HTTP/1.1\r\nHost: a.com\r\n\r\n"), PEEK_BAD, NULL, 0,
	    "differs from Host" },
	{ C("GET http://u@a.com/ HTTP/1.1\r\nHost: a.com\r\n\r\n"), PEEK_BAD, NULL, 0,
	    "userinfo" },
	{ C("GET https://a.com/ HTTP/1.1\r\nHost: a.com\r\n\r\n"), PEEK_BAD, NULL, 0,
	    "form" },
	{ C("GET * HTTP/1.1\r\nHost: a.com\r\n\r\n"), PEEK_BAD, NULL, 0, "asterisk" },
	{ C("CONNECT a.com:443 HTTP/1.1\r\nHost: a.com:443\r\n\r\n"), PEEK_BAD, NULL, 0,
	    "CONNECT" },
	{ C("GET / HTTP/1.1\r\nHost: \r\n\r\n"), PEEK_BAD, NULL, 0, "empty Host" },
	{ C("GET / HTTP/1.1\r\nHost: a.com:\r\n\r\n"), PEEK_BAD, NULL, 0, "port" },
	{ C("GET / HTTP/1.1\r\nHost: a.com:0\r\n\r\n"), PEEK_BAD, NULL, 0, "port" },
	{ C("GET / HTTP/1.1\r\nHost: a.com:65536\r\n\r\n"), PEEK_BAD, NULL, 0, "port" },
	{ C("GET / HTTP/1.1\r\nHost: a.com:8x\r\n\r\n"), PEEK_BAD, NULL, 0, "port" },
	{ C("GET / HTTP/1.1\r\nHost: a.com:80:80\r\n\r\n"), PEEK_BAD, NULL, 0, "port" },
	{ C("GET / HTTP/1.1\r\nHost: u@a.com\r\n\r\n"), PEEK_BAD, NULL, 0, "character" },
	{ C("GET / HTTP/1.1\r\nHost: a b\r\n\r\n"), PEEK_BAD, NULL, 0, "character" },
	{ C("GET / HTTP/1.1\r\nHost: [::1\r\n\r\n"), PEEK_BAD, NULL, 0, "bad Host" },

	{ C("GET / HTTP/1.1\r\nHost: a.com\r\n"), PEEK_NEED_MORE, NULL, 0, NULL },
	{ C("GET / HTTP/1.1\r\nHost: a.com\r\n\r"), PEEK_NEED_MORE, NULL, 0, NULL },
	{ C("GET"), PEEK_NEED_MORE, NULL, 0, NULL },
	{ C(""), PEEK_NEED_MORE, NULL, 0, NULL },
	{ C("get / HTTP/1.1\r\nHost: a.com\r\n\r\n"), PEEK_NOT_MINE, NULL, 0, NULL },
	{ C("SSH-2.0-OpenSSH_9.2\r\n"), PEEK_NOT_MINE, NULL, 0, NULL },
	{ C(" GET / HTTP/1.1\r\n"), PEEK_NOT_MINE, NULL, 0, NULL },
	{ C("ABCDEFGHIJKLMNOPQ / HTTP/1.1\r\n"), PEEK_NOT_MINE, NULL, 0, NULL },
};

int
main(void)
{
	static uint8_t big[PEEK_HTTP_MAX + 64];
	struct peek_http h;
	enum peek_status st;
	size_t i, n, bad;
	const char *full = "GET /p HTTP/1.1\r\nHost: www.example.org\r\n\r\n";

	plan_lazy();
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct http_case *c = &cases[i];

		n = c->len;
		st = peek_http_request((const uint8_t *)c->in, n, &h);
		if (!is_int(c->want, st, "case %zu: %s", i, peek_status_str(c->want)))
			diag("why: %s", h.ph_why ? h.ph_why : "-");
		if (c->want == PEEK_OK) {
			is_string(c->host, h.ph_host, "case %zu: host", i);
			is_int(c->port, h.ph_port, "case %zu: port", i);
		}
		if (c->want == PEEK_BAD)
			ok(h.ph_why != NULL && strstr(h.ph_why, c->why) != NULL,
			    "case %zu: why \"%s\" (%s)", i, c->why,
			    h.ph_why ? h.ph_why : "-");
	}

	/* Fields of a plain request. */
	n = strlen(full);
	is_int(PEEK_OK, peek_http_request((const uint8_t *)full, n, &h), "full");
	is_string("GET", h.ph_method, "method");
	is_int(1, h.ph_minor, "HTTP/1.1");
	is_int((long long)n, (long long)h.ph_head_len, "head length");
	ok(h.ph_target_len == 2 && memcmp(full + h.ph_target_off, "/p", 2) == 0,
	    "request-target");
	bad = 0;
	for (i = 0; i < n; i++)
		if (peek_http_request((const uint8_t *)full, i, &h) != PEEK_NEED_MORE)
			bad++;
	is_int(0, (long long)bad, "every prefix needs more");

	/* The head must end within 8 KiB. */
	memcpy(big, "GET / HTTP/1.1\r\nHost: a.com\r\nX: ", 32);
	memset(big + 32, 'a', sizeof(big) - 32);
	is_int(PEEK_BAD, peek_http_request(big, sizeof(big), &h), "9 KiB head refused");
	is_int(PEEK_BAD, peek_http_request(big, PEEK_HTTP_MAX, &h),
	    "unfinished head at exactly the cap refused");
	is_int(PEEK_NEED_MORE, peek_http_request(big, PEEK_HTTP_MAX - 1, &h),
	    "unfinished head under the cap needs more");
	memcpy(big + PEEK_HTTP_MAX - 4, "\r\n\r\n", 4);
	is_int(PEEK_OK, peek_http_request(big, PEEK_HTTP_MAX, &h),
	    "head of exactly 8 KiB accepted");

	/* The classifier. */
	is_int(PEEK_PROTO_HTTP, peek_classify((const uint8_t *)"GET ", 4), "GET+SP");
	is_int(PEEK_PROTO_UNKNOWN, peek_classify((const uint8_t *)"GE", 2), "GE");
	is_int(PEEK_PROTO_TCP, peek_classify((const uint8_t *)"SSH-", 4), "SSH-");
	is_int(PEEK_PROTO_TCP, peek_classify((const uint8_t *)"\x16\x01", 2),
	    "0x16 0x01");
	is_int(PEEK_PROTO_TCP, peek_classify((const uint8_t *)" ", 1), "SP");
	is_int(PEEK_PROTO_TCP, peek_classify((const uint8_t *)"\x00", 1), "NUL");
	is_int(PEEK_PROTO_UNKNOWN, peek_classify((const uint8_t *)"", 0), "nothing");
	return 0;
}
