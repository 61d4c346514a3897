/*
 * tests/fuzz/fuzz_connect_reply.c: an upstream proxy's answer to airlock's CONNECT
 * (http_connect_reply() in proxy/proxy_http.c: interim heads skipped, the final
 * head through the strict response parser, 16 KiB at most, as
 * proxy/proxy_conn_tunnel.c calls it).  Checks: an accepted answer is a final
 * status and ends within the input and the limit; the answer cut at that end is
 * taken the same, cut one byte shorter it is not taken; a refusal says why; "need
 * more" only while the limit is not reached.
 */
#include <stdint.h>
#include <stdlib.h>

#include "../../proxy/proxy_http.h"

#define FZ_MAX	(16 * 1024)

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *why;
	size_t used, used2;
	enum http_res r;
	int status, status2;

	r = http_connect_reply(data, size, FZ_MAX, &status, &used, &why);
	switch (r) {
	case HTTP_NEED_MORE:
		if (size >= FZ_MAX)
			abort();
		return 0;
	case HTTP_OK:
		break;
	default:
		if (why == NULL)
			abort();
		return 0;
	}
	if (status < 200 || status > 599 || used == 0 || used > size ||
	    used > FZ_MAX)
		abort();
	if (http_connect_reply(data, used, FZ_MAX, &status2, &used2, &why) !=
	    HTTP_OK || status2 != status || used2 != used)
		abort();
	if (http_connect_reply(data, used - 1, FZ_MAX, &status2, &used2, &why) ==
	    HTTP_OK)
		abort();
	return 0;
}
