/*
 * tests/fuzz/fuzz_http_request.c: the strict request-head parser and the head
 * rewrite (proxy/proxy_http.c) over arbitrary bytes.  Checks: spans lie within the
 * head, no shorter prefix of an accepted head is accepted, the end-of-head search
 * agrees when fed byte by byte, and the rewritten head (with an injected
 * Authorization) parses again with the same method, path and one Authorization
 * (or was refused with EMSGSIZE: airlock never emits a head it would refuse).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../proxy/proxy_http.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static struct http_request rq, rq2;

static void
span_in(struct http_span s, size_t lim)
{
	if (s.off > lim || s.len > lim - s.off)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t cred[] = "Bearer injected-credential";
	struct http_hdr_set set = { "Authorization", cred, sizeof(cred) - 1 };
	struct http_rewrite rw = { .rw_set = &set, .rw_nset = 1,
	    .rw_host = "fallback.example" };
	struct http_buf out = HTTP_BUF_INIT;
	enum http_res r;
	size_t i, st = 0, hl = 0, n;
	int a;

	r = http_request_parse(data, size, &rq);
	if (r != HTTP_OK && r != HTTP_NEED_MORE && rq.hq_why == NULL)
		abort();
	if (r != HTTP_OK)
		return 0;
	if (rq.hq_head_len > size || rq.hq_head_len > HTTP_HEAD_MAX ||
	    rq.hq_nfields > HTTP_FIELDS_MAX || rq.hq_minor < 0 || rq.hq_minor > 1)
		abort();
	span_in(rq.hq_method, rq.hq_head_len);
	span_in(rq.hq_target, rq.hq_head_len);
	span_in(rq.hq_path, rq.hq_head_len);
	span_in(rq.hq_query, rq.hq_head_len);
	span_in(rq.hq_host, rq.hq_head_len);
	for (i = 0; i < rq.hq_nfields; i++) {
		span_in(rq.hq_fields[i].hf_name, rq.hq_head_len);
		span_in(rq.hq_fields[i].hf_value, rq.hq_head_len);
	}
	if (rq.hq_head_len > 0 &&
	    http_request_parse(data, rq.hq_head_len - 1, &rq2) == HTTP_OK)
		abort();
	for (n = 0, r = HTTP_NEED_MORE; n <= size && r == HTTP_NEED_MORE; n++)
		r = http_head_find(data, n, &st, &hl);
	if (r != HTTP_OK || hl != rq.hq_head_len)
		abort();

	rw.rw_framing = rq.hq_framing;
	rw.rw_length = rq.hq_length;
	errno = 0;
	if (http_request_rewrite(data, &rq, &rw, &out) == -1) {
		/*
		 * rw_set and rw_host are valid: ENOMEM, or EMSGSIZE when the fields
		 * added would make a head the parser refuses (issue 22's finding: 100
		 * fields + Authorization came out as 101).
		 */
		if (errno != ENOMEM && errno != EMSGSIZE)
			abort();
		goto out;
	}
	if (http_request_parse(out.hb_p, out.hb_len, &rq2) != HTTP_OK ||
	    rq2.hq_head_len != out.hb_len || rq2.hq_meth != rq.hq_meth ||
	    rq2.hq_framing != rq.hq_framing || rq2.hq_length != rq.hq_length ||
	    rq2.hq_method.len != rq.hq_method.len)
		abort();
	if (!rq.hq_absolute && (rq2.hq_target.len != rq.hq_target.len ||
	    memcmp(out.hb_p + rq2.hq_target.off, data + rq.hq_target.off,
	    rq.hq_target.len) != 0))
		abort();
	a = http_field_find(out.hb_p, rq2.hq_fields, rq2.hq_nfields,
	    "authorization", 0);
	if (a == -1 || http_field_find(out.hb_p, rq2.hq_fields, rq2.hq_nfields,
	    "authorization", (size_t)a + 1) != -1 ||
	    rq2.hq_fields[a].hf_value.len != sizeof(cred) - 1 ||
	    memcmp(out.hb_p + rq2.hq_fields[a].hf_value.off, cred,
	    sizeof(cred) - 1) != 0)
		abort();
 out:
	http_buf_free(&out);
	return 0;
}
