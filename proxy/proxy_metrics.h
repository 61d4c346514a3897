/*
 * proxy/proxy_metrics.h: airlockd's Prometheus metrics (proxy_metrics.c): the text
 * exposition, served on the control socket ("metrics", `airlock metrics`) and, with
 * metrics_listen, over HTTP on a loopback address.
 */
#ifndef AIRLOCK_PROXY_METRICS_H
#define AIRLOCK_PROXY_METRICS_H

#include <stddef.h>

struct event_base;

/* The exposition (text format 0.0.4) as a string to free, or NULL. */
char	*proxy_metrics_text(void);
/*
 * Binds metrics_listen's socket when the configuration has one (as root, before
 * the drop; the worker's filter has no bind).  0, or -1 with err.
 */
int	proxy_metrics_bind(char *err, size_t errlen);
/* Serves GET /metrics on it from base.  0, or -1. */
int	proxy_metrics_serve(struct event_base *base);
/* Stops serving and closes the socket. */
void	proxy_metrics_stop(void);

#endif
