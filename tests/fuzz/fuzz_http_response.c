/*
 * tests/fuzz/fuzz_http_response.c: the strict response-head parser and the
 * response rewrite (proxy/proxy_http.c).  The first byte picks the request method
 * (HEAD or GET).  Checks: spans within the head, no shorter prefix accepted,
 * framing consistent with the status, and the rewritten head parses again with the
 * same status.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../proxy/proxy_http.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static struct http_response rs, rs2;

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http_rewrite rw = { 0 };
	struct http_buf out = HTTP_BUF_INIT;
	enum http_method m;
	enum http_res r;
	size_t i;

	if (size < 1)
		return 0;
	m = data[0] & 1 ? HTTP_M_HEAD : HTTP_M_GET;
	data++;
	size--;
	r = http_response_parse(data, size, m, &rs);
	if (r != HTTP_OK && r != HTTP_NEED_MORE && rs.hs_why == NULL)
		abort();
	if (r != HTTP_OK)
		return 0;
	if (rs.hs_head_len > size || rs.hs_status < 100 || rs.hs_status > 599 ||
	    rs.hs_nfields > HTTP_FIELDS_MAX)
		abort();
	if (rs.hs_reason.off + rs.hs_reason.len > rs.hs_head_len)
		abort();
	for (i = 0; i < rs.hs_nfields; i++)
		if (rs.hs_fields[i].hf_value.off + rs.hs_fields[i].hf_value.len >
		    rs.hs_head_len)
			abort();
	if ((rs.hs_status < 200 || rs.hs_status == 204 || rs.hs_status == 304 ||
	    m == HTTP_M_HEAD) && rs.hs_framing != HTTP_BODY_NONE)
		abort();
	if (rs.hs_framing == HTTP_BODY_CLOSE && rs.hs_keepalive)
		abort();
	if (http_response_parse(data, rs.hs_head_len - 1, m, &rs2) == HTTP_OK)
		abort();
	rw.rw_framing = rs.hs_framing == HTTP_BODY_CLOSE ? HTTP_BODY_CHUNKED :
	    rs.hs_framing;
	rw.rw_length = rs.hs_length;
	rw.rw_upgrade = rs.hs_switching;
	errno = 0;
	if (http_response_rewrite(data, &rs, &rw, &out) == -1) {
		/* ENOMEM, or EMSGSIZE: the head would exceed the parser's limits. */
		if (errno != ENOMEM && errno != EMSGSIZE)
			abort();
		goto out;
	}
	if (http_response_parse(out.hb_p, out.hb_len, m, &rs2) != HTTP_OK ||
	    rs2.hs_status != rs.hs_status || rs2.hs_head_len != out.hb_len)
		abort();
	if (rs.hs_framing != HTTP_BODY_NONE && rs2.hs_framing != rw.rw_framing)
		abort();
 out:
	http_buf_free(&out);
	return 0;
}
