/*
 * proxy/proxy_globals.c: the daemon's configuration and its audit log, set once at
 * start-up (proxy.c) and read by every part: at the bottom of proxy/, so nothing
 * reaches up into start-up for them.
 */
#include "policy.h"
#include "proxy_globals.h"

struct airlock_config proxy_cfg;
struct audit_log *proxy_log;

const struct airlock_config *
proxy_config(void)
{
	return &proxy_cfg;
}

struct audit_log *
proxy_audit(void)
{
	return proxy_log;
}

const struct upstream_proxy *
proxy_upstream_route(const struct policy *p)
{
	return policy_upstream_route(p, proxy_cfg.upstream_proxy_on ?
	    &proxy_cfg.upstream_proxy : NULL);
}
