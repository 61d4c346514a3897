/*
 * proxy/proxy_map.h: per-sandbox mapped addresses (proxy_map.c).
 */
#ifndef AIRLOCK_PROXY_MAP_H
#define AIRLOCK_PROXY_MAP_H

#include <stddef.h>

#include "netaddr.h"

struct proxy_map;

/* proxy_map.c: per-sandbox mapped addresses (thread-safe, bounded LRU) */
/*
 * A table handing out addresses from pool for names; at most max entries, the least
 * recently used one recycled when full.  Returned table freed with proxy_map_free().
 */
struct proxy_map *proxy_map_new(const struct netaddr_cidr *pool, size_t max);
void	proxy_map_free(struct proxy_map *m);
/* The (stable) mapped address for a normalised name, allocated if new.  0 or -1. */
int	proxy_map_name_to_addr(struct proxy_map *m, const char *name,
	    struct netaddr *out);
/* The name mapped to a, copied to out[outlen].  0 if mapped, -1 if not. */
int	proxy_map_addr_to_name(struct proxy_map *m, const struct netaddr *a,
	    char *out, size_t outlen);
/* Live mappings (for stats and tests). */
size_t	proxy_map_count(struct proxy_map *m);

#endif
