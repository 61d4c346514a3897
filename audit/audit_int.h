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

/*
 * The fields of one record the read tools look at (audit_query.c); strings borrowed
 * from av_doc (the parsed line), or, in a view the index makes (audit_index.c), from
 * its table of names.
 */
#define AUDIT_VIEW_HOST_MAX	256
struct audit_view {
	struct json_t	*av_doc;
	const char	*av_ts;
	const char	*av_sandbox;
	const char	*av_event;
	const char	*av_dst;
	const char	*av_qname;
	const char	*av_decision;
	const char	*av_rule;
	const char	*av_reason;
	const char	*av_method;
	const char	*av_path;
	long long	 av_status;	/* -1 if none */
	long long	 av_ts_ms;	/* ts in ms since the epoch, -1 if none */
	long long	 av_times;	/* events it stands for: 1 + "suppressed"
					   (only "suppressed" for an aggregate flush) */
	int		 av_would_deny;
	const char	*av_host;	/* host of dst (or qname), lower case, no
					   port, no trailing dot; "" if none */
	char		 av_hostbuf[AUDIT_VIEW_HOST_MAX];
};

/* audit_query.c */
/* Parses a line into v.  Returns 0, or -1 if it is not a JSON object. */
int	audit_view_parse(struct audit_view *v, const char *line, size_t len);
void	audit_view_clear(struct audit_view *v);
/* 1 if v passes every filter of f but af_text, else 0. */
int	audit_filter_match(const struct audit_filter *f, const struct audit_view *v);
/* 1 if the line passes f's af_text (or f has none), else 0. */
int	audit_filter_text(const struct audit_filter *f, const char *line, size_t len);
/* A summary as `audit summary --json` prints it, empty; NULL on ENOMEM. */
struct json_t *audit_summary_new(void);
/* Counts v into such a summary; *oom set when memory ran out. */
void	audit_summary_add(struct json_t *root, const struct audit_view *v, int *oom);
/*
 * Such a summary for the web view: {"records", "reasons": [{"reason", "count"}],
 * "sandboxes": [{"sandbox", "records", "allowed": [{"host", "count", "first",
 * "last"}] (the top ones), "allowed_hosts" (how many), "denied", "denied_hosts",
 * "would_deny", "would_deny_hosts", "reasons"}]}, sorted as `audit summary` prints
 * them; only sandbox's when it is not NULL.  NULL on ENOMEM.
 */
struct json_t *audit_summary_view(struct json_t *root, const char *sandbox,
	    size_t top);

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
