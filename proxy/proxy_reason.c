/*
 * proxy/proxy_reason.c: the reason table (proxy_reason.h).
 */
#include "proxy_reason.h"

const struct proxy_reason_info proxy_reasons[PR__COUNT] = {
#define PROXY_REASON_INFO(e, code, meaning)	[PR_##e] = { code, meaning },
	PROXY_REASONS(PROXY_REASON_INFO)
#undef PROXY_REASON_INFO
};
