/*
 * proxy/proxy_netwatch.h: the netwatch root child (proxy_netwatch.c).
 */
#ifndef AIRLOCK_PROXY_NETWATCH_H
#define AIRLOCK_PROXY_NETWATCH_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

/*
 * proxy_netwatch.c: the root child that keeps airlock's nftables tables in place.
 * proxy_netwatch_start() forks it (as root, before the drop; the child closes every
 * descriptor but its socket and the standard three); 0 or -1 with err.
 * proxy_netwatch_listen() turns its reports into "alarm" audit records on base; 0
 * or -1.  proxy_netwatch_stop() ends it (before base is freed).
 * proxy_netwatch_count(1): reinstalls so far, (0): alarms.
 */
struct event_base;
int	proxy_netwatch_start(const struct airlock_config *cfg, char *err,
	    size_t errlen);
int	proxy_netwatch_listen(struct event_base *base);
void	proxy_netwatch_stop(void);
/* 1 once netwatch has ended on its own (reaped), else 0 (also without one). */
int	proxy_netwatch_gone(void);
uint64_t proxy_netwatch_count(int reinstalled);

#endif
