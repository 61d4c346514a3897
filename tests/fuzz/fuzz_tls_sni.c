/*
 * tests/fuzz/fuzz_tls_sni.c: the ClientHello parser (proxy/proxy_peek.c) over
 * arbitrary bytes.  Besides memory safety it checks the parser's promises: the
 * reported SNI fits, pt_consumed lies within the input, and every prefix of an
 * accepted input is "need more" (what the proxy relies on while reading).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../proxy/proxy_peek.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct peek_tls t, t2;
	enum peek_status st;

	(void)peek_classify(data, size);
	st = peek_tls_client_hello(data, size, &t);
	if (st == PEEK_OK || st == PEEK_NO_SNI) {
		if (t.pt_sni_len > PEEK_SNI_MAX || t.pt_consumed > size ||
		    t.pt_nalpn > PEEK_ALPN_MAX)
			abort();
		if (st == PEEK_OK && t.pt_sni_len == 0)
			abort();
		/* The bytes that made the answer give the same answer. */
		if (peek_tls_client_hello(data, t.pt_consumed, &t2) != st ||
		    t2.pt_sni_len != t.pt_sni_len ||
		    memcmp(t2.pt_sni, t.pt_sni, t.pt_sni_len) != 0)
			abort();
		if (t.pt_consumed > 0 && peek_tls_client_hello(data,
		    t.pt_consumed - 1, &t2) != PEEK_NEED_MORE)
			abort();
	} else if (st == PEEK_BAD && t.pt_why == NULL)
		abort();
	return 0;
}
