/*
 * tests/fuzz/fuzz_http_host.c: the HTTP/1.x request-head peek (proxy/proxy_peek.c)
 * over arbitrary bytes, checking its promises: the head and target lie within the
 * input, the Host fits, and a shorter prefix of an accepted head is never accepted.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../proxy/proxy_peek.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct peek_http h, h2;
	enum peek_status st;

	st = peek_http_request(data, size, &h);
	if (st == PEEK_OK) {
		if (h.ph_head_len > size || h.ph_head_len > PEEK_HTTP_MAX ||
		    h.ph_target_off + h.ph_target_len > h.ph_head_len ||
		    h.ph_host_len == 0 || h.ph_host_len > HOSTNAME_MAX + 1 ||
		    strlen(h.ph_host) != h.ph_host_len)
			abort();
		if (peek_http_request(data, h.ph_head_len, &h2) != PEEK_OK ||
		    strcmp(h2.ph_host, h.ph_host) != 0 || h2.ph_port != h.ph_port)
			abort();
		if (peek_http_request(data, h.ph_head_len - 1, &h2) == PEEK_OK)
			abort();
	} else if (st == PEEK_BAD && h.ph_why == NULL)
		abort();
	return 0;
}
