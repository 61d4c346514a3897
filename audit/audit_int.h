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
struct audit_line {
	long long	 al_seq;
	char		 al_prev[AUDIT_HASH_HEX + 1];
	char		 al_hash[AUDIT_HASH_HEX + 1];
};

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

#endif
