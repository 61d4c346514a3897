/*
 * proxy/proxy_map.c: per-sandbox table of names and the mapped addresses that policy
 * DNS hands out for them (see proxy_map.h).
 *
 * Every sandbox has its own table over the same pool (the sandbox is known from the
 * connection's source address, so two sandboxes may hold the same address for
 * different names).  The table is bounded: at most m_max entries; when it is full the
 * least recently used mapping (a DNS answer or a connection lookup counts as a use)
 * is evicted and its address released.
 *
 * XXX Recycling hazard: once an address is released and handed to another name, a
 * VM that kept the old answer (or a connection opened later from a cached answer)
 * reaches the new name's address and is mapped to the new name.  The connection path
 * then checks the SNI/Host against the *new* name, so this is a confused destination
 * for the VM, never a policy bypass (the new name is also allowed).  To make it rare,
 * addresses are handed out never-used first (a cursor over the whole pool), then in
 * FIFO order of release: with the default /15 pool (131070 usable addresses) and
 * 4096 entries, an address is reused only after ~127000 other allocations.  The
 * release FIFO grows with use up to one uint32_t per pool address (512 KiB for a
 * /15, reached only after a VM asked for ~131000 distinct names).
 *
 * Lookups are O(1) both ways through two chained hash tables keyed with SipHash-2-4
 * and a per-table random key, so a VM choosing names cannot engineer collisions.
 * One mutex guards the table: DNS and every proxy worker use it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "hostname.h"
#include "proxy_map.h"
#include "siphash.h"

#define MAP_NIL		UINT32_MAX
#define MAP_POOL_MAX	(1U << 24)	/* refuse pools larger than a /8 */

struct map_entry {
	char		*me_name;	/* NULL: free slot */
	uint32_t	 me_addr;	/* host byte order */
	uint32_t	 me_name_next;	/* chain in m_name_bkt */
	uint32_t	 me_addr_next;	/* chain in m_addr_bkt */
	uint32_t	 me_lru_prev;	/* towards most recently used */
	uint32_t	 me_lru_next;	/* towards least recently used */
};

struct proxy_map {
	pthread_mutex_t	 m_lock;
	uint8_t		 m_key[16];	/* SipHash key */
	uint32_t	 m_first;	/* first usable address (network + 1), host order */
	uint32_t	 m_usable;	/* usable addresses (network, broadcast skipped) */
	uint32_t	 m_fresh;	/* addresses [0, m_fresh) handed out at least once */
	size_t		 m_max;
	/* entries: grown by doubling up to m_max; indices stay valid */
	struct map_entry *m_ent;
	uint32_t	 m_nent;	/* allocated slots */
	uint32_t	 m_used;	/* live mappings */
	uint32_t	 m_free;	/* free slot list through me_lru_next */
	uint32_t	 m_lru_head;	/* most recently used */
	uint32_t	 m_lru_tail;	/* least recently used */
	uint32_t	*m_name_bkt;
	uint32_t	*m_addr_bkt;
	uint32_t	 m_bmask;	/* buckets - 1 */
	/* released addresses, FIFO ring (grown as needed, at most m_usable) */
	uint32_t	*m_rel;
	uint32_t	 m_rel_cap;
	uint32_t	 m_rel_head;
	uint32_t	 m_rel_len;
};

static uint32_t
map_name_hash(const struct proxy_map *m, const char *name)
{
	return (uint32_t)siphash24(m->m_key, name, strlen(name)) & m->m_bmask;
}

static uint32_t
map_addr_hash(const struct proxy_map *m, uint32_t addr)
{
	uint8_t b[4];

	b[0] = addr >> 24;
	b[1] = addr >> 16;
	b[2] = addr >> 8;
	b[3] = addr;
	return (uint32_t)siphash24(m->m_key, b, sizeof(b)) & m->m_bmask;
}

struct proxy_map *
proxy_map_new(const struct netaddr_cidr *pool, size_t max)
{
	struct proxy_map *m = NULL;
	uint32_t net, size, nb;

	if (pool == NULL || pool->nc_addr.na_family != AF_INET ||
	    pool->nc_prefix < 8 || pool->nc_prefix > 30 || max == 0 ||
	    max > MAP_POOL_MAX) {
		errno = EINVAL;
		goto error;
	}
	size = 1U << (32 - pool->nc_prefix);
	/*
	 * A small pool (a /24 configured as mapped_pool) caps the table at its usable
	 * addresses rather than failing every sandbox; recycling is then just quicker.
	 */
	if (max > size - 2)
		max = size - 2;
	net = ntohl(pool->nc_addr.na_u.v4.s_addr);
	if ((m = calloc(1, sizeof(*m))) == NULL)
		goto error;
	if (getrandom(m->m_key, sizeof(m->m_key), 0) != sizeof(m->m_key))
		goto error;
	m->m_first = net + 1;
	m->m_usable = size - 2;
	m->m_max = max;
	m->m_free = MAP_NIL;
	m->m_lru_head = m->m_lru_tail = MAP_NIL;
	for (nb = 16; nb < 2 * max; nb <<= 1)
		;
	m->m_bmask = nb - 1;
	if ((m->m_name_bkt = malloc(nb * sizeof(uint32_t))) == NULL ||
	    (m->m_addr_bkt = malloc(nb * sizeof(uint32_t))) == NULL)
		goto error;
	memset(m->m_name_bkt, 0xff, nb * sizeof(uint32_t));
	memset(m->m_addr_bkt, 0xff, nb * sizeof(uint32_t));
	if ((errno = pthread_mutex_init(&m->m_lock, NULL)) != 0)
		goto error;
	return m;
 error:
	if (m != NULL) {
		free(m->m_name_bkt);
		free(m->m_addr_bkt);
		free(m);
	}
	return NULL;
}

void
proxy_map_free(struct proxy_map *m)
{
	uint32_t i;

	if (m == NULL)
		return;
	for (i = 0; i < m->m_nent; i++)
		free(m->m_ent[i].me_name);
	free(m->m_ent);
	free(m->m_name_bkt);
	free(m->m_addr_bkt);
	free(m->m_rel);
	pthread_mutex_destroy(&m->m_lock);
	free(m);
}

static void
map_lru_unlink(struct proxy_map *m, uint32_t i)
{
	struct map_entry *e = &m->m_ent[i];

	if (e->me_lru_prev != MAP_NIL)
		m->m_ent[e->me_lru_prev].me_lru_next = e->me_lru_next;
	else
		m->m_lru_head = e->me_lru_next;
	if (e->me_lru_next != MAP_NIL)
		m->m_ent[e->me_lru_next].me_lru_prev = e->me_lru_prev;
	else
		m->m_lru_tail = e->me_lru_prev;
	e->me_lru_prev = e->me_lru_next = MAP_NIL;
}

static void
map_lru_push(struct proxy_map *m, uint32_t i)
{
	struct map_entry *e = &m->m_ent[i];

	e->me_lru_prev = MAP_NIL;
	e->me_lru_next = m->m_lru_head;
	if (m->m_lru_head != MAP_NIL)
		m->m_ent[m->m_lru_head].me_lru_prev = i;
	m->m_lru_head = i;
	if (m->m_lru_tail == MAP_NIL)
		m->m_lru_tail = i;
}

static void
map_touch(struct proxy_map *m, uint32_t i)
{
	if (m->m_lru_head == i)
		return;
	map_lru_unlink(m, i);
	map_lru_push(m, i);
}

static uint32_t
map_find_name(const struct proxy_map *m, const char *name)
{
	uint32_t i;

	for (i = m->m_name_bkt[map_name_hash(m, name)]; i != MAP_NIL;
	    i = m->m_ent[i].me_name_next)
		if (strcmp(m->m_ent[i].me_name, name) == 0)
			return i;
	return MAP_NIL;
}

static uint32_t
map_find_addr(const struct proxy_map *m, uint32_t addr)
{
	uint32_t i;

	for (i = m->m_addr_bkt[map_addr_hash(m, addr)]; i != MAP_NIL;
	    i = m->m_ent[i].me_addr_next)
		if (m->m_ent[i].me_addr == addr)
			return i;
	return MAP_NIL;
}

static void
map_chain_remove(struct proxy_map *m, uint32_t *head, uint32_t i, int byname)
{
	uint32_t *pp = head;

	while (*pp != MAP_NIL) {
		struct map_entry *e = &m->m_ent[*pp];

		if (*pp == i) {
			*pp = byname ? e->me_name_next : e->me_addr_next;
			return;
		}
		pp = byname ? &e->me_name_next : &e->me_addr_next;
	}
}

/* Appends a released address to the FIFO; -1 if the ring cannot grow. */
static int
map_release_push(struct proxy_map *m, uint32_t addr)
{
	uint32_t *n, cap, k;

	if (m->m_rel_len == m->m_rel_cap) {
		cap = m->m_rel_cap ? m->m_rel_cap * 2 : 64;
		if (cap > m->m_usable)
			cap = m->m_usable;
		if (cap <= m->m_rel_cap)
			return -1;	/* cannot happen: released < usable */
		if ((n = calloc(cap, sizeof(*n))) == NULL)
			return -1;
		for (k = 0; k < m->m_rel_len; k++)
			n[k] = m->m_rel[(m->m_rel_head + k) % m->m_rel_cap];
		free(m->m_rel);
		m->m_rel = n;
		m->m_rel_cap = cap;
		m->m_rel_head = 0;
	}
	m->m_rel[(m->m_rel_head + m->m_rel_len) % m->m_rel_cap] = addr;
	m->m_rel_len++;
	return 0;
}

/* Evicts the least recently used entry; its slot goes to the free list. */
static int
map_evict(struct proxy_map *m)
{
	uint32_t i = m->m_lru_tail;
	struct map_entry *e;

	if (i == MAP_NIL)
		return -1;
	e = &m->m_ent[i];
	if (map_release_push(m, e->me_addr) == -1)
		return -1;
	map_chain_remove(m, &m->m_name_bkt[map_name_hash(m, e->me_name)], i, 1);
	map_chain_remove(m, &m->m_addr_bkt[map_addr_hash(m, e->me_addr)], i, 0);
	map_lru_unlink(m, i);
	free(e->me_name);
	e->me_name = NULL;
	e->me_lru_next = m->m_free;
	m->m_free = i;
	m->m_used--;
	return 0;
}

/* A free slot index, growing the entry array if needed; MAP_NIL on failure. */
static uint32_t
map_slot_get(struct proxy_map *m)
{
	struct map_entry *n;
	uint32_t i, cap;

	if (m->m_free == MAP_NIL) {
		cap = m->m_nent ? m->m_nent * 2 : 16;
		if (cap > m->m_max)
			cap = m->m_max;
		if (cap <= m->m_nent)
			return MAP_NIL;
		if ((n = reallocarray(m->m_ent, cap, sizeof(*n))) == NULL)
			return MAP_NIL;
		m->m_ent = n;
		for (i = cap; i-- > m->m_nent;) {
			memset(&n[i], 0, sizeof(n[i]));
			n[i].me_lru_next = m->m_free;
			m->m_free = i;
		}
		m->m_nent = cap;
	}
	i = m->m_free;
	m->m_free = m->m_ent[i].me_lru_next;
	return i;
}

int
proxy_map_name_to_addr(struct proxy_map *m, const char *name,
    struct netaddr *out)
{
	struct map_entry *e;
	uint32_t i, addr, h;
	char *dup = NULL;
	int rv = -1;

	if (name == NULL || name[0] == '\0' ||
	    strnlen(name, HOSTNAME_MAX + 1) > HOSTNAME_MAX) {
		errno = EINVAL;
		return -1;
	}
	if ((dup = strdup(name)) == NULL)
		return -1;
	pthread_mutex_lock(&m->m_lock);
	if ((i = map_find_name(m, name)) != MAP_NIL) {
		map_touch(m, i);
		addr = m->m_ent[i].me_addr;
		goto found;
	}
	if (m->m_used >= m->m_max && map_evict(m) == -1) {
		errno = ENOMEM;
		goto out;
	}
	if ((i = map_slot_get(m)) == MAP_NIL) {
		errno = ENOMEM;
		goto out;
	}
	/*
	 * Never-used addresses first; then the one released longest ago.  There is
	 * always one: at most m_max < m_usable addresses are live.
	 */
	if (m->m_fresh < m->m_usable)
		addr = m->m_first + m->m_fresh++;
	else {
		addr = m->m_rel[m->m_rel_head];
		m->m_rel_head = (m->m_rel_head + 1) % m->m_rel_cap;
		m->m_rel_len--;
	}
	e = &m->m_ent[i];
	e->me_name = dup;
	dup = NULL;	/* transferred */
	e->me_addr = addr;
	h = map_name_hash(m, e->me_name);
	e->me_name_next = m->m_name_bkt[h];
	m->m_name_bkt[h] = i;
	h = map_addr_hash(m, addr);
	e->me_addr_next = m->m_addr_bkt[h];
	m->m_addr_bkt[h] = i;
	map_lru_push(m, i);
	m->m_used++;
 found:
	memset(out, 0, sizeof(*out));
	out->na_family = AF_INET;
	out->na_u.v4.s_addr = htonl(addr);
	rv = 0;
 out:
	pthread_mutex_unlock(&m->m_lock);
	free(dup);
	return rv;
}

int
proxy_map_addr_to_name(struct proxy_map *m, const struct netaddr *a,
    char *out, size_t outlen)
{
	uint32_t i, addr;
	size_t len;
	int rv = -1;

	if (a == NULL || a->na_family != AF_INET)
		return -1;
	addr = ntohl(a->na_u.v4.s_addr);
	if (addr - m->m_first >= m->m_usable)
		return -1;	/* outside the pool, or its network/broadcast */
	pthread_mutex_lock(&m->m_lock);
	if ((i = map_find_addr(m, addr)) == MAP_NIL)
		goto out;
	len = strlen(m->m_ent[i].me_name);
	if (len >= outlen)
		goto out;
	memcpy(out, m->m_ent[i].me_name, len + 1);
	map_touch(m, i);
	rv = 0;
 out:
	pthread_mutex_unlock(&m->m_lock);
	return rv;
}

size_t
proxy_map_count(struct proxy_map *m)
{
	size_t n;

	pthread_mutex_lock(&m->m_lock);
	n = m->m_used;
	pthread_mutex_unlock(&m->m_lock);
	return n;
}
