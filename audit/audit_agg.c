/*
 * audit/audit_agg.c: the table behind denial aggregation (audit_write() with
 * ar_aggregate; the policy is in audit_write.c).  A fixed number of slots, one per
 * (sandbox, reason, dst), in sets of AGG_WAYS reached by a keyed hash: the VM picks
 * dst (and so the keys), so it must not be able to aim at one set.  No locking here:
 * the log's mutex covers the table.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>

#include "audit_int.h"
#include "siphash.h"

#define AGG_WAYS	8

struct audit_agg_table {
	uint8_t			 ag_key[16];
	size_t			 ag_nsets;	/* a power of two */
	struct audit_agg_slot	*ag_slots;	/* ag_nsets * AGG_WAYS */
};

struct audit_agg_table *
audit_agg_new(size_t nslots)
{
	struct audit_agg_table *ag;
	size_t sets = 1;

	while (sets * AGG_WAYS < nslots)
		sets *= 2;
	if ((ag = calloc(1, sizeof(*ag))) == NULL)
		return NULL;
	ag->ag_nsets = sets;
	if ((ag->ag_slots = calloc(sets * AGG_WAYS, sizeof(*ag->ag_slots))) == NULL ||
	    RAND_bytes(ag->ag_key, sizeof(ag->ag_key)) != 1) {
		free(ag->ag_slots);
		free(ag);
		errno = ENOMEM;
		return NULL;
	}
	return ag;
}

void
audit_agg_free(struct audit_agg_table *ag)
{
	if (ag == NULL)
		return;
	free(ag->ag_slots);
	free(ag);
}

/* s copied into dst[n] (cut if longer: keys compare on what fits). */
static void
agg_copy(char *dst, size_t n, const char *s)
{
	size_t len = strlen(s);

	if (len >= n)
		len = n - 1;
	memcpy(dst, s, len);
	dst[len] = '\0';
}

static int
agg_slot_is(const struct audit_agg_slot *s, const struct audit_agg_slot *k)
{
	return s->as_used && strcmp(s->as_sandbox, k->as_sandbox) == 0 &&
	    strcmp(s->as_reason, k->as_reason) == 0 &&
	    strcmp(s->as_dst, k->as_dst) == 0;
}

struct audit_agg_slot *
audit_agg_find(struct audit_agg_table *ag, const char *sb, const char *reason,
    const char *dst, struct audit_agg_slot **victim)
{
	struct audit_agg_slot k, *set, *free_slot = NULL, *old = NULL;
	uint64_t h;
	size_t i;

	/* The key as a slot keeps it (cut to the field sizes). */
	audit_agg_slot_take(&k, sb, reason, dst);
	h = siphash24(ag->ag_key, k.as_sandbox, offsetof(struct audit_agg_slot,
	    as_dst) + sizeof(k.as_dst) - offsetof(struct audit_agg_slot, as_sandbox));
	set = &ag->ag_slots[(h & (ag->ag_nsets - 1)) * AGG_WAYS];
	*victim = NULL;
	for (i = 0; i < AGG_WAYS; i++) {
		if (agg_slot_is(&set[i], &k))
			return &set[i];
		if (!set[i].as_used) {
			if (free_slot == NULL)
				free_slot = &set[i];
		} else if (old == NULL || set[i].as_sec < old->as_sec)
			old = &set[i];
	}
	if (free_slot == NULL) {
		*victim = old;
		return NULL;
	}
	*free_slot = k;
	return free_slot;
}

void
audit_agg_slot_take(struct audit_agg_slot *s, const char *sb, const char *reason,
    const char *dst)
{
	memset(s, 0, sizeof(*s));
	s->as_used = 1;
	agg_copy(s->as_sandbox, sizeof(s->as_sandbox), sb);
	agg_copy(s->as_reason, sizeof(s->as_reason), reason);
	agg_copy(s->as_dst, sizeof(s->as_dst), dst);
}

struct audit_agg_slot *
audit_agg_next(struct audit_agg_table *ag, size_t *i)
{
	while (*i < ag->ag_nsets * AGG_WAYS) {
		struct audit_agg_slot *s = &ag->ag_slots[(*i)++];

		if (s->as_used)
			return s;
	}
	return NULL;
}
