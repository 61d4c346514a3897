/*
 * proxy/proxy_audit.c: the daemon's side of the audit log's aggregates and health.
 * A one-second timer on the main loop writes the counts of denials whose second is
 * over (audit_flush(); the rest go out at audit_close()), and the connection path
 * asks proxy_audit_is_writable() before it lets a new connection in: while the log
 * cannot be written (a full disk, an I/O error) new connections are refused with
 * audit_unavailable, and their denials are counted until it can.  Each change of
 * state is said once in airlockd's log.
 */
#include <string.h>

#include <event2/event.h>

#include "audit.h"
#include "config.h"
#include "log.h"
#include "proxy.h"

static int proxy_audit_down;	/* atomic: the state last reported */

int
proxy_audit_is_writable(void)
{
	struct audit_log *log = proxy_audit();
	int err, was;

	if (log == NULL)
		return 1;
	err = audit_error(log);
	was = __atomic_exchange_n(&proxy_audit_down, err != 0, __ATOMIC_RELAXED);
	if (err != 0 && !was)
		log_warnx("audit log %s: %s: refusing new connections "
		    "(audit_unavailable) while it fails", proxy_config()->audit_path,
		    strerror(err));
	else if (err == 0 && was)
		log_warnx("audit log %s: writable again: accepting new connections",
		    proxy_config()->audit_path);
	return err == 0;
}

static void
proxy_audit_tick(evutil_socket_t fd, short what, void *arg)
{
	if (proxy_audit() != NULL)
		(void)audit_flush(proxy_audit(), 0);
	(void)proxy_audit_is_writable();
}

struct event *
proxy_audit_timer_new(struct event_base *base)
{
	struct timeval tv = { 1, 0 };
	struct event *ev;

	if ((ev = event_new(base, -1, EV_PERSIST, proxy_audit_tick, NULL)) == NULL)
		return NULL;
	if (event_add(ev, &tv) == -1) {
		event_free(ev);
		return NULL;
	}
	return ev;
}

enum audit_agg
proxy_audit_agg(const char *reason)
{
	static const char *const by_sandbox[] = {
		"connection_limit", "rate_limited", "audit_unavailable",
		"unknown_sandbox",
	};
	size_t i;

	for (i = 0; i < sizeof(by_sandbox) / sizeof(by_sandbox[0]); i++)
		if (reason != NULL && strcmp(reason, by_sandbox[i]) == 0)
			return AUDIT_AGG_SANDBOX;
	return AUDIT_AGG_DST;
}
