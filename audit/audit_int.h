/*
 * audit/audit_int.h: private to audit/.  Prototypes grouped by the file defining them.
 */
#ifndef AIRLOCK_AUDIT_INT_H
#define AIRLOCK_AUDIT_INT_H

#include <stddef.h>

#include "audit.h"

/* The bytes between the hashed part and the hash: B + HASH_SEP + hex + HASH_END. */
#define AUDIT_HASH_SEP		",\"hash\":\""
#define AUDIT_HASH_END		"\"}"

/* One line's identity, as the line parser extracts it. */
enum audit_line_kind {
	AL_RECORD = 0,		/* any record but the two below */
	AL_CHECKPOINT,
	AL_ROTATE,
};
struct audit_line {
	long long	 al_seq;
	char		 al_prev[AUDIT_HASH_HEX + 1];
	char		 al_hash[AUDIT_HASH_HEX + 1];
	enum audit_line_kind al_kind;
	/* A checkpoint's fields (checked against seq and prev already). */
	char		 al_ts[32];
	char		 al_at[16];
	long long	 al_last_seq;		/* also a rotate record's */
	long long	 al_link_seq;
	char		 al_link_head[AUDIT_HASH_HEX + 1];
	int		 al_signed;		/* key and sig, else unsigned */
	char		 al_key[AUDIT_KEYID_HEX + 1];
	char		 al_sig[AUDIT_SIG_HEX + 1];
	char		 al_unsigned[200];	/* why not signed (cut) */
};

/*
 * One aggregate of identical denials (audit_agg.c): the key, cut to these sizes
 * (the three arrays are adjacent and zero-filled: they are hashed as one block),
 * the second of the last denial written for it, and how many came since.
 */
struct audit_agg_slot {
	char		 as_sandbox[64];
	char		 as_reason[64];
	char		 as_dst[AUDIT_STR_MAX + 1];
	int		 as_used;
	long long	 as_sec;	/* second (ts / 1000) of the last written one */
	long long	 as_pending;	/* denials since, not written */
};

/* audit_agg.c */
struct audit_agg_table;
/* A table of at least nslots slots (random hash key); NULL on ENOMEM.  audit_agg_free(). */
struct audit_agg_table *audit_agg_new(size_t nslots);
void	audit_agg_free(struct audit_agg_table *ag);
/*
 * The slot of (sb, reason, dst): the one in use, or a free one taken for it (as_sec
 * and as_pending 0).  NULL when the key's set is full: *victim is then its slot
 * with the oldest as_sec, to be emptied and retaken with audit_agg_slot_take().
 */
struct audit_agg_slot *audit_agg_find(struct audit_agg_table *ag, const char *sb,
	    const char *reason, const char *dst, struct audit_agg_slot **victim);
/* Makes s the (free) slot of (sb, reason, dst). */
void	audit_agg_slot_take(struct audit_agg_slot *s, const char *sb,
	    const char *reason, const char *dst);
/* The next slot in use from *i (start at 0), or NULL at the end. */
struct audit_agg_slot *audit_agg_next(struct audit_agg_table *ag, size_t *i);

/* audit_verify.c */
/*
 * Checks one line on its own (no '\n'): the hash suffix, the recomputed hash (with
 * key, if keylen > 0) and the JSON (seq, prev, hash, ts, event).  Fills *al.
 * Returns 0, or -1 with the reason in why.
 */
int	audit_line_parse(const char *line, size_t len, const unsigned char *key,
	    size_t keylen, struct audit_line *al, char *why, size_t whylen);
/* hex = SHA-256 or HMAC-SHA-256 of b[0..blen-1] + '}'.  Returns 0 or -1. */
int	audit_hash_compute(const char *b, size_t blen, const unsigned char *key,
	    size_t keylen, char hex[AUDIT_HASH_HEX + 1]);
/* 1 if s[0..63] are lowercase hex digits. */
int	audit_hash_is_hex(const char *s);

/* audit_read.c */
/*
 * Reads a secret's file: regular (not through a symlink), no group or other
 * permission bits, owned by root or this user too with root_only; at most cap
 * bytes into buf (*got; cap read means the file may be longer).  what names it in
 * err ("key file", "signing key").  0, or -1 with err (buf wiped).
 */
int	audit_secret_read(const char *path, const char *what, int root_only,
	    void *buf, size_t cap, size_t *got, char *err, size_t errlen);

/* audit_sign.c */
/* 1 if s is exactly n lower-case hex digits. */
int	audit_is_hex(const char *s, size_t n);
/* The names a checkpoint's "at" and a rotate record's "source" may have. */
int	audit_at_is_valid(const char *at);
int	audit_source_is_valid(const char *source);

#endif
