/*
 * tests/unit/http_chunked.c: the incremental chunked decoder and encoder
 * (proxy/proxy_http.c): good bodies decoded the same at every split point, every
 * refusal, and a round trip through http_buf_add_chunk().
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../proxy/proxy_http.h"
#include "../tap.h"

#define C(s)	(s), sizeof(s) - 1

/*
 * Decodes in[len] fed in pieces cut at split (0: all at once).  Returns the result;
 * the data goes to out, *used says how many input bytes the body took.
 */
static enum http_res
decode(const uint8_t *in, size_t len, size_t split, struct http_buf *out,
    size_t *used, const char **why)
{
	struct http_chunked c;
	struct http_span d;
	size_t off = 0, lim, n;
	enum http_res r = HTTP_NEED_MORE;

	http_chunked_init(&c);
	while (off < len) {
		lim = split != 0 && off < split ? split : len;
		while (off < lim) {
			r = http_chunked_feed(&c, in + off, lim - off, &n, &d);
			if (d.len > 0 && http_buf_add(out, in + off + d.off, d.len) == -1)
				bail("out of memory");
			off += n;
			if (r != HTTP_NEED_MORE)
				goto out;
		}
	}
 out:
	*used = off;
	*why = c.hc_why;
	return r;
}

struct good {
	const char	*in;
	size_t		 len;
	const char	*data;
	size_t		 used;		/* 0: all of in */
};

static const struct good good[] = {
	{ C("0\r\n\r\n"), "", 0 },
	{ C("5\r\nhello\r\n0\r\n\r\n"), "hello", 0 },
	{ C("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\nNEXT"), "hello world", 26 },
	{ C("A\r\n0123456789\r\n000\r\n\r\n"), "0123456789", 0 },
	{ C("a;ext=1;q=\"x y\"\r\n0123456789\r\n0\r\n\r\n"), "0123456789", 0 },
	{ C("3 ;ext\r\nabc\r\n0 \t; last\r\nTrailer-A: 1\r\nB:\r\n\r\n"), "abc", 0 },
	{ C("0000000000000003\r\nabc\r\n0\r\n\r\n"), "abc", 0 },
	{ C("1\r\n\0\r\n0\r\n\r\n"), "", 0 },	/* data may hold any byte */
};

struct bad {
	const char	*in;
	size_t		 len;
	const char	*why;
};

static const struct bad bad[] = {
	{ C("\r\n"), "empty" },
	{ C("x\r\n"), "not hex" },
	{ C("-1\r\n"), "not hex" },
	{ C(" 5\r\nhello\r\n"), "not hex" },
	{ C("5x\r\nhello\r\n"), "junk after" },
	{ C("5 x\r\nhello\r\n"), "junk after" },
	{ C("5\nhello\r\n"), "junk after" },
	{ C("5\r\rhello"), "CRLF" },
	{ C("0x5\r\nhello\r\n"), "junk after" },
	{ C("10000000000000000\r\n"), "16 hex digits" },
	{ C("00000000000000005\r\n"), "16 hex digits" },
	{ C("5\r\nhelloX\r\n"), "not followed by CRLF" },
	{ C("5\r\nhello\n0\r\n\r\n"), "not followed by CRLF" },
	{ C("5\r\nhello\rX"), "not followed by CRLF" },
	{ C("5;a\x01\r\nhello\r\n"), "control byte" },
	{ C("0\r\nX : y\r\n\r\n"), "trailer field name" },
	{ C("0\r\n y\r\n\r\n"), "obs-fold" },
	{ C("0\r\nX: y\n\r\n"), "trailer field" },
	{ C("0\r\nX: \x7f\r\n\r\n"), "control byte" },
	{ C("0\r\n\rX"), "CRLF" },
	{ C("0\r\n:\r\n\r\n"), "malformed trailer" },
};

static void
test_good(void)
{
	struct http_buf out = HTTP_BUF_INIT;
	const char *why;
	size_t i, s, used;
	enum http_res r;
	int allsame;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		const struct good *g = &good[i];
		size_t want_used = g->used != 0 ? g->used : g->len;
		size_t dl = strlen(g->data);

		if (i == sizeof(good) / sizeof(good[0]) - 1)
			dl = 1;
		allsame = 1;
		for (s = 0; s < g->len; s++) {
			out.hb_len = 0;
			r = decode((const uint8_t *)g->in, g->len, s, &out, &used,
			    &why);
			if (r != HTTP_OK || used != want_used || out.hb_len != dl ||
			    (dl > 0 && memcmp(out.hb_p, g->data, dl) != 0)) {
				diag("case %zu split %zu: r %d used %zu len %zu why %s",
				    i, s, r, used, out.hb_len, why ? why : "-");
				allsame = 0;
			}
		}
		ok(allsame, "good body %zu decodes the same at every split", i);
		/* one byte at a time */
		{
			struct http_chunked c;
			struct http_span d;
			size_t k, n, got = 0;

			http_chunked_init(&c);
			r = HTTP_NEED_MORE;
			for (k = 0; k < want_used && r == HTTP_NEED_MORE; k++) {
				r = http_chunked_feed(&c, (const uint8_t *)g->in + k, 1,
				    &n, &d);
				got += d.len;
			}
			ok(r == HTTP_OK && k == want_used && got == dl,
			    "good body %zu byte-wise", i);
			is_int(HTTP_OK, http_chunked_feed(&c, (const uint8_t *)"x", 1,
			    &n, &d), "done stays done");
			is_int(0, (long long)n, "and consumes nothing");
		}
		/* every proper prefix of the body needs more */
		for (s = 0; s < want_used; s++) {
			out.hb_len = 0;
			if (decode((const uint8_t *)g->in, s, 0, &out, &used, &why) !=
			    HTTP_NEED_MORE)
				break;
		}
		is_int((long long)want_used, (long long)s,
		    "good body %zu: every prefix needs more", i);
	}
	http_buf_free(&out);
}

static void
test_bad(void)
{
	struct http_buf out = HTTP_BUF_INIT;
	const char *why;
	size_t i, s, used;
	enum http_res r;
	int all;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		all = 1;
		for (s = 0; s < bad[i].len; s++) {
			out.hb_len = 0;
			r = decode((const uint8_t *)bad[i].in, bad[i].len, s, &out,
			    &used, &why);
			if (r != HTTP_E_BAD || why == NULL ||
			    strstr(why, bad[i].why) == NULL) {
				diag("bad %zu split %zu: r %d why %s", i, s, r,
				    why ? why : "-");
				all = 0;
			}
		}
		ok(all, "bad body %zu refused at every split (%s)", i, bad[i].why);
	}
	http_buf_free(&out);
}

static void
test_limits(void)
{
	struct http_buf in = HTTP_BUF_INIT, out = HTTP_BUF_INIT;
	const char *why;
	size_t used, i;

	/* extensions: 4 KiB pass, one more byte fails */
	for (int extra = 0; extra < 2; extra++) {
		in.hb_len = 0;
		http_buf_add_str(&in, "1;");
		for (i = 1; i < HTTP_CHUNK_EXT_MAX + (size_t)extra; i++)
			http_buf_add(&in, "a", 1);
		http_buf_add_str(&in, "\r\nx\r\n0\r\n\r\n");
		out.hb_len = 0;
		is_int(extra ? HTTP_E_BAD : HTTP_OK, decode(in.hb_p, in.hb_len, 0,
		    &out, &used, &why), "extensions of %zu bytes",
		    HTTP_CHUNK_EXT_MAX - 1 + (size_t)extra + 1);
	}
	/* trailer: too many fields, too many bytes */
	in.hb_len = 0;
	http_buf_add_str(&in, "0\r\n");
	for (i = 0; i <= HTTP_TRAILER_FIELDS_MAX; i++)
		http_buf_add_str(&in, "A: b\r\n");
	http_buf_add_str(&in, "\r\n");
	is_int(HTTP_E_BAD, decode(in.hb_p, in.hb_len, 0, &out, &used, &why),
	    "too many trailer fields");
	in.hb_len = 0;
	http_buf_add_str(&in, "0\r\nA: ");
	for (i = 0; i < HTTP_TRAILER_MAX; i++)
		http_buf_add(&in, "b", 1);
	http_buf_add_str(&in, "\r\n\r\n");
	is_int(HTTP_E_BAD, decode(in.hb_p, in.hb_len, 0, &out, &used, &why),
	    "trailer over HTTP_TRAILER_MAX");
	/* a 16-digit size is fine (we only check it parses and waits) */
	{
		struct http_chunked c;
		struct http_span d;
		size_t n;

		http_chunked_init(&c);
		is_int(HTTP_NEED_MORE, http_chunked_feed(&c,
		    (const uint8_t *)"ffffffffffffffff\r\nab", 20, &n, &d),
		    "2^64-1 sized chunk");
		ok(d.len == 2 && c.hc_left == UINT64_MAX - 2, "left counts down");
	}
	http_buf_free(&in);
	http_buf_free(&out);
}

static void
test_roundtrip(void)
{
	struct http_buf enc = HTTP_BUF_INIT, dec = HTTP_BUF_INIT;
	uint8_t data[3000];
	const char *why;
	size_t i, used, piece;

	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + 3);
	for (i = 0, piece = 1; i < sizeof(data); i += piece, piece = piece * 3 % 997 + 1)
		if (http_buf_add_chunk(&enc, data + i, i + piece > sizeof(data) ?
		    sizeof(data) - i : piece) == -1)
			bail("out of memory");
	http_buf_add_chunk(&enc, data, 0);	/* adds nothing */
	http_buf_add_last_chunk(&enc);
	is_int(HTTP_OK, decode(enc.hb_p, enc.hb_len, 0, &dec, &used, &why),
	    "round trip decodes");
	is_int((long long)enc.hb_len, (long long)used, "all of it");
	ok(dec.hb_len == sizeof(data) && memcmp(dec.hb_p, data, sizeof(data)) == 0,
	    "round trip data");
	enc.hb_len = 0;
	http_buf_add_chunk(&enc, "x", 1);
	is_blob("1\r\nx\r\n", enc.hb_p, 6, "chunk bytes");
	enc.hb_len = 0;
	{
		static uint8_t big[300];

		http_buf_add_chunk(&enc, big, sizeof(big));
		is_blob("12c\r\n", enc.hb_p, 5, "hex size");
	}
	http_buf_free(&enc);
	http_buf_free(&dec);
}

static void
test_buf(void)
{
	struct http_buf b = HTTP_BUF_INIT;

	b.hb_max = 10;
	is_int(0, http_buf_add(&b, "0123456789", 10), "up to hb_max");
	is_int(-1, http_buf_add(&b, "x", 1), "past hb_max");
	is_int(10, (long long)b.hb_len, "unchanged");
	http_buf_drain(&b, 4);
	is_blob("456789", b.hb_p, 6, "drain");
	http_buf_drain(&b, 100);
	is_int(0, (long long)b.hb_len, "drain all");
	http_buf_free(&b);
	ok(b.hb_p == NULL && b.hb_max == 10, "free keeps hb_max");
	http_buf_free(NULL);
}

int
main(void)
{
	plan_lazy();
	test_good();
	test_bad();
	test_limits();
	test_roundtrip();
	test_buf();
	return tap_failures() != 0;
}
