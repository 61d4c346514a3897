/*
 * tests/fuzz/fuzz_chunked.c: the incremental chunked decoder (proxy/proxy_http.c).
 * Decodes the input whole and again cut into pieces chosen from the input itself:
 * the result, the bytes used and the data must agree.  A decoded body re-encoded
 * with http_buf_add_chunk() must decode to the same data.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../proxy/proxy_http.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static enum http_res
decode(const uint8_t *in, size_t len, uint32_t seed, struct http_buf *out,
    size_t *used)
{
	struct http_chunked c;
	struct http_span d;
	enum http_res r = HTTP_NEED_MORE;
	size_t off = 0, piece, n;

	http_chunked_init(&c);
	while (off < len) {
		if (seed == 0)
			piece = len - off;
		else {
			seed = seed * 1103515245 + 12345;
			piece = 1 + (seed >> 16) % 7;
			if (piece > len - off)
				piece = len - off;
		}
		while (piece > 0) {
			r = http_chunked_feed(&c, in + off, piece, &n, &d);
			if (n > piece || d.off + d.len > n)
				abort();
			if (r == HTTP_E_BAD && (c.hc_why == NULL || n != 0))
				abort();
			if (d.len > 0 && http_buf_add(out, in + off + d.off, d.len) == -1)
				abort();
			off += n;
			piece -= n;
			if (r != HTTP_NEED_MORE)
				goto out;
		}
	}
 out:
	*used = off;
	return r;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http_buf a = HTTP_BUF_INIT, b = HTTP_BUF_INIT, enc = HTTP_BUF_INIT;
	struct http_buf c = HTTP_BUF_INIT;
	enum http_res ra, rb;
	size_t ua, ub, i;
	uint32_t seed = 1;

	for (i = 0; i < size && i < 8; i++)
		seed = seed * 31 + data[i];
	ra = decode(data, size, 0, &a, &ua);
	rb = decode(data, size, seed | 1, &b, &ub);
	if (ra != rb || a.hb_len != b.hb_len ||
	    (a.hb_len > 0 && memcmp(a.hb_p, b.hb_p, a.hb_len) != 0))
		abort();
	if (ra == HTTP_OK && ua != ub)
		abort();
	if (ra == HTTP_OK) {
		for (i = 0; i < a.hb_len; i += 1 + i % 5)
			if (http_buf_add_chunk(&enc, a.hb_p + i,
			    a.hb_len - i < 1 + i % 5 ? a.hb_len - i : 1 + i % 5) == -1)
				abort();
		if (http_buf_add_last_chunk(&enc) == -1)
			abort();
		if (decode(enc.hb_p, enc.hb_len, seed, &c, &ub) != HTTP_OK ||
		    ub != enc.hb_len || c.hb_len != a.hb_len ||
		    (a.hb_len > 0 && memcmp(c.hb_p, a.hb_p, a.hb_len) != 0))
			abort();
	}
	http_buf_free(&a);
	http_buf_free(&b);
	http_buf_free(&c);
	http_buf_free(&enc);
	return 0;
}
