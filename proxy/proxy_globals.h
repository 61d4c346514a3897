/*
 * proxy/proxy_globals.h: what every file of the daemon reads and none owns: the
 * configuration and the audit log (proxy_globals.c), and a message formatter.
 */
#ifndef AIRLOCK_PROXY_GLOBALS_H
#define AIRLOCK_PROXY_GLOBALS_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include "audit.h"
#include "config.h"

/*
 * Formats into buf[len], cutting what does not fit (messages only).  Inline: every
 * file of the daemon uses it, none owns it.
 */
static inline void proxy_fmt(char *buf, size_t len, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));

static inline void
proxy_fmt(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

/*
 * proxy_globals.c: the configuration and the audit log (and the one reading of the
 * configuration every part needs: which upstream proxy a policy goes through).  The
 * variables are written by start-up only (proxy.c, proxy_core.h's files); everyone
 * else reads them through the functions, valid for the process lifetime.
 */
extern struct airlock_config proxy_cfg;	/* loaded once, before anything else */
extern struct audit_log *proxy_log;	/* NULL until opened, and after the end */
const struct airlock_config *proxy_config(void);
struct audit_log *proxy_audit(void);
struct policy;
/*
 * The upstream proxy the connections of policy p go through under this
 * configuration (p's own, none for "direct", else airlock.json's), or NULL: direct.
 */
const struct upstream_proxy *proxy_upstream_route(const struct policy *p);

#endif
