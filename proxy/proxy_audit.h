/*
 * proxy/proxy_audit.h: the daemon's side of the audit log (proxy_audit.c).
 */
#ifndef AIRLOCK_PROXY_AUDIT_H
#define AIRLOCK_PROXY_AUDIT_H

#include "audit.h"

struct event;
struct event_base;

/* proxy_audit.c: aggregates flushed each second, fail closed on a failing log */
/*
 * 1 while the audit log writes (or there is none), 0 when it cannot: new
 * connections are then refused (audit_unavailable).  Logs each change once.
 */
int	proxy_audit_is_writable(void);
/*
 * How a denial with reason is aggregated: per sandbox for the limits (and
 * audit_unavailable, unknown_sandbox), whose destination the VM may vary at will;
 * per destination for the rest.
 */
enum audit_agg proxy_audit_agg(const char *reason);
/*
 * Starts the audit log's sync thread (after daemon()), which lets denials wait
 * for the disk without blocking a worker: proxy_audit_park().  Returns 0 or -1.
 */
int	proxy_audit_sync_start(void);
/*
 * Keeps a dup of fd (a denied client's socket, SO_LINGER 0 set) open until the
 * audit record seq is on disk, then closes it in base's thread: the VM's reset
 * waits, the worker does not.  Returns 0, or -1 when it cannot (the caller then
 * waits with audit_sync_wait()).
 */
int	proxy_audit_park(struct event_base *base, int fd, long long seq);
/* Closes base's parked fds at once (worker shutdown). */
void	proxy_audit_park_free(struct event_base *base);
/* The one-second flush timer on base, added; event_free() it.  NULL on failure. */
struct event *proxy_audit_timer_new(struct event_base *base);

#endif
