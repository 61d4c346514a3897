/*
 * include/audit.h: the tamper-evident audit log (JSON Lines; docs/AUDIT.md is the
 * reference of its records).  Implemented in audit/.
 *
 * Each line is one JSON object written by jansson (compact, ASCII only: every control
 * character, quote, backslash and non-ASCII character is escaped, so no field can
 * start a second line or forge a key).  Field order: ts, seq, sandbox, event, src, dst,
 * tls, method, path, status, decision, rule, reason, would_deny, inject, bytes_up,
 * bytes_down, ms, extra fields, prev, hash.
 *
 * The hash chain.  A line is  B + ',"hash":"' + H + '"}' + '\n'  where B is the
 * record up to and including the prev field ('{"ts":...,"prev":"<64 hex>"').  H is
 * the lowercase hex SHA-256 (or, with a key, HMAC-SHA-256) of the bytes  B + '}'  --
 * the exact bytes of the line, so a verifier never re-serialises anything and two
 * JSON libraries can never disagree about what was hashed.  prev is the previous
 * record's H; the first record of a chain has seq 1 and prev = 64 zeros.  seq and
 * prev continue across audit_close()/audit_open() and across rotation (path.1).
 *
 * What the chain proves: an edit of any byte, a deleted, inserted, duplicated or
 * reordered record is found by the verifier.  What it cannot prove on its own: that
 * records were cut off the END of the log (the remaining prefix is a valid chain) --
 * that needs an anchor kept elsewhere (the head hash/seq, `verify --head/--expect-seq`);
 * and that the whole file was not rewritten by someone who can also recompute
 * SHA-256 -- an HMAC key that this someone cannot read (audit_open_keyed, verified
 * with the same key) or shipping the lines off-host as they are written is the
 * remedy for that.
 *
 * Signed checkpoints (audit_sign.c) add what neither can: a "checkpoint" record
 * signs the chain's head with an Ed25519 key the writer does not hold (airlockd's
 * keys process does), so a rewrite of anything before the last checkpoint is found
 * with the public key alone, even by someone who can recompute the chain, and each
 * signature names the one its signer made before (the link), so a signed
 * checkpoint removed or re-made is found too.  Records after the last checkpoint
 * are covered by none: the verifier says how many.  docs/AUDIT.md says exactly
 * what each finds.
 *
 * The API takes secret *names* only: it has no field for a secret's value.
 */
#ifndef AIRLOCK_AUDIT_H
#define AIRLOCK_AUDIT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"	/* enum audit_fsync */

enum audit_event {
	AUDIT_EV_DNS = 0,
	AUDIT_EV_CONNECT,
	AUDIT_EV_REQUEST,
	AUDIT_EV_DENY,
	AUDIT_EV_EXFIL,
	AUDIT_EV_SANDBOX,
	AUDIT_EV_CONFIG,
	AUDIT_EV_ALARM,		/* the host was disturbed (airlock's rules gone) */
	AUDIT_EV_APPROVAL,	/* an operator's `airlock approve allow|deny` */
	/* The writer's own records (audit_checkpoint(), rotation): audit_write()
	   refuses them. */
	AUDIT_EV_CHECKPOINT,	/* the chain's head, signed (or why not) */
	AUDIT_EV_ROTATE,	/* the first record of a new file of the chain */
	/* Records the syslog sink (audit.syslog) dropped while its queue was full. */
	AUDIT_EV_SINK_OVERFLOW,
};

/* How audit_write() aggregates a denial. */
enum audit_agg {
	AUDIT_AGG_NONE = 0,		/* every record written */
	AUDIT_AGG_DST,			/* per (sandbox, reason, dst) and second */
	AUDIT_AGG_SANDBOX,		/* per (sandbox, reason): dst does not matter to
					   the reason (limits), and the VM picks it */
};

/* A key/value added to a record (e.g. "qname", "qtype", "policy_hash", "action"). */
struct audit_kv {
	const char	*ak_key;
	const char	*ak_str;	/* string value, or NULL to use ak_num */
	long long	 ak_num;
};

/*
 * One record.  Pointers that are NULL and numbers that are -1 are left out of the line.
 * decision is "allow" or "deny" (NULL for events without one).
 */
struct audit_record {
	enum audit_event ar_event;
	const char	*ar_sandbox;
	const char	*ar_src;	/* "10.233.0.2:51234" */
	const char	*ar_dst;	/* "api.github.com:443" */
	const char	*ar_tls;	/* "splice", "inspect" */
	const char	*ar_method;
	const char	*ar_path;
	int		 ar_status;	/* HTTP status, -1 if none */
	const char	*ar_decision;
	const char	*ar_rule;
	const char	*ar_rule_file;	/* the policy file ar_rule is written in */
	const char	*ar_reason;	/* stable code, for denials */
	int		 ar_would_deny;	/* report mode: 1 adds "would_deny":true */
	const char	*const *ar_inject; /* names of injected secrets, NULL-terminated */
	long long	 ar_bytes_up;
	long long	 ar_bytes_down;
	long long	 ar_ms;
	const struct audit_kv *ar_extra; /* ar_nextra extra fields */
	size_t		 ar_nextra;
	long long	 ar_ts_ms;	/* ms since the epoch; 0 (default): now */
	enum audit_agg	 ar_aggregate;	/* a denial: aggregate (see audit_write()) */
};
#define AUDIT_RECORD_INIT { .ar_status = -1, .ar_bytes_up = -1, \
	.ar_bytes_down = -1, .ar_ms = -1 }

struct audit_log;

/* Bounds on one record (longer strings are cut and end in AUDIT_TRUNC_MARK). */
#define AUDIT_PATH_MAX		2048	/* ar_path */
#define AUDIT_STR_MAX		256	/* every other string, inject names */
#define AUDIT_EXTRA_STR_MAX	1024	/* string values of extra fields */
#define AUDIT_EXTRA_MAX		32	/* ar_nextra */
#define AUDIT_INJECT_MAX	32	/* names in ar_inject */
#define AUDIT_TRUNC_MARK	"...[truncated]"
/* Readers refuse lines longer than this (the writer stays far below it). */
#define AUDIT_LINE_MAX		(1024 * 1024)
#define AUDIT_HASH_HEX		64
#define AUDIT_ZERO_HASH	/* prev of a chain's first record */ \
	"0000000000000000000000000000000000000000000000000000000000000000"
#define AUDIT_KEY_MAX		64	/* HMAC key bytes */

/*
 * Reads an HMAC key file: 1..AUDIT_KEY_MAX raw bytes (e.g. `head -c 32 /dev/urandom`),
 * a regular file with no group or other permissions.  Returns 0 with the key in
 * key[0..*len-1] (wipe it after use), or -1 with a message in err.
 */
int	audit_key_load(const char *path, unsigned char key[AUDIT_KEY_MAX], size_t *len,
	    char *err, size_t errlen);

/*
 * Opens (creating 0600, O_APPEND) or continues the log at path: reads and checks the
 * last line to continue seq and the hash chain.  If the file is empty or missing and a
 * rotated predecessor exists (path.1), the chain continues from path.1's last record.
 * Refuses (NULL) a file whose last line is torn (no '\n') or does not verify: nothing
 * is ever appended after garbage.  Holds flock(LOCK_EX) on the file until
 * audit_close(), so a second writer (another airlockd) is refused too.  Returns the log, to be released with audit_close(),
 * or NULL with a message in err.
 */
struct audit_log *audit_open(const char *path, enum audit_fsync fs, char *err,
	    size_t errlen);
/*
 * The same with an HMAC-SHA-256 key (1..AUDIT_KEY_MAX bytes, copied; the copy is wiped
 * by audit_close()): lines are then verifiable only with that key.
 */
struct audit_log *audit_open_keyed(const char *path, enum audit_fsync fs,
	    const unsigned char *key, size_t keylen, char *err, size_t errlen);
/*
 * Appends one record with one write(2) loop and fsyncs per policy; thread-safe.
 * Returns 0, or -1 with errno set: EINVAL for a malformed record (unknown event,
 * decision other than "allow"/"deny", an extra key that is not [a-z0-9_]{1,32} or
 * names a standard field, too many extra fields or inject names), EIO if an earlier
 * failed write could not be undone (the log then refuses every write), or the errno
 * of write/fsync.  A failed write leaves the file and the chain as they were.
 * When the policy asks for an fsync, the call returns once the record is on disk:
 * it waits (outside the log's mutex) for one fdatasync() that covers every record
 * written before it (group commit).
 *
 * A denial (decision "deny", a reason) with ar_aggregate is aggregated per
 * (sandbox, reason, dst) and second of its ts (AUDIT_AGG_DST; per (sandbox, reason)
 * with AUDIT_AGG_SANDBOX, whose flush records have no dst): the first is written
 * (and synced) at once; the others are only counted, and the count goes out as
 * "suppressed":N in the key's next written record, or in a record of its own
 * (event "deny" with sandbox, dst, reason, "suppressed":N, "aggregate":"flush", no
 * src) written by audit_flush().  The written denials plus every "suppressed" are
 * exactly the denials.  An aggregated denial that cannot be written (full disk) is
 * counted the same way and the call returns 0; audit_error() says the log is failing.
 * The table is bounded (4096 keys, a keyed hash): a key that finds no room writes
 * the oldest aggregate of its set first (if even that fails, its count goes out
 * later as reason "aggregate_overflow", without sandbox and dst).
 */
int	audit_write(struct audit_log *log, const struct audit_record *r);
/*
 * audit_write() without the wait: *seq is the seq to have on disk before the
 * record's decision takes effect (0: none), for audit_sync_wait() or
 * audit_sync_request().
 */
int	audit_write_nowait(struct audit_log *log, const struct audit_record *r,
	    long long *seq);
/* Waits until records up to seq are on disk (0: at once).  Returns 0 or -1 (errno). */
int	audit_sync_wait(struct audit_log *log, long long seq);
/*
 * Starts the log's sync thread (once; after any fork, e.g. daemon()): it runs the
 * fdatasync() that audit_sync_request() asks for, then calls notify(arg) from its
 * own thread.  audit_close() stops it.  Returns 0, or -1 with errno.
 */
int	audit_sync_start(struct audit_log *log, void (*notify)(void *), void *arg);
/* Asks the sync thread for records up to seq on disk; returns at once. */
void	audit_sync_request(struct audit_log *log, long long seq);
/* Records up to this seq are on disk. */
long long audit_synced(struct audit_log *log);
/*
 * Writes the counts of aggregates whose second is over (all of them with all != 0;
 * audit_close() does that) and fsyncs them per policy.  Call it about once a second.
 * Returns 0, or -1 with errno when a record could not be written (it stays counted).
 */
int	audit_flush(struct audit_log *log, int all);
/*
 * 0 while the log writes, else the errno of the last failed write (ENOSPC, EIO,
 * ...) until a write succeeds again; a failed fdatasync() stays for good.
 */
int	audit_error(struct audit_log *log);
/* What the log has done since it was opened, for metrics. */
struct audit_counts {
	long long	ac_seq;		/* the chain's last seq (records written) */
	long long	ac_errors;	/* writes or syncs that failed */
	long long	ac_suppressed;	/* denials counted into an aggregate */
};
void	audit_counts(struct audit_log *log, struct audit_counts *out);
/*
 * After the file was renamed away (logrotate), opens path anew and continues the
 * chain there.  Refuses (-1, err) if what is on disk does not end where this log's
 * chain ends; the old file then stays in use.
 */
int	audit_reopen(struct audit_log *log, char *err, size_t errlen);
/*
 * The files audit_reopen() needs, for a writer that may not open files itself (a
 * confined process, given them by one that may): path opened as the log is
 * (O_RDWR | O_APPEND | O_CREAT, 0600, plus oflags, e.g. O_NOFOLLOW) into *fd and,
 * when that file is empty, its rotated predecessor path.1 read-only into *rfd (-1
 * if there is none).  Returns 0, or -1 with err (both -1).
 */
int	audit_path_open(const char *path, int oflags, int *fd, int *rfd, char *err,
	    size_t errlen);
/*
 * audit_reopen() on those files: fd (and rfd, or -1) are taken over, used or
 * closed.  Nothing is looked up by path.  Returns 0, or -1 with err (the old file
 * then stays in use).
 */
int	audit_reopen_fd(struct audit_log *log, int fd, int rfd, char *err,
	    size_t errlen);
/*
 * Signed checkpoints.  A checkpoint record (event "checkpoint") signs the chain's
 * head: the seq and hash of the record just before it.  The signed bytes are built
 * by audit_checkpoint_canon() (docs/AUDIT.md, "Signed checkpoints"), from the key
 * id, that seq and hash, the checkpoint's ts and the link: the seq and hash the
 * signer signed before (0 and zeros for its first, or the chain's head when it
 * started).  The key is Ed25519; its id is the first 16 bytes of the SHA-256 of its
 * public key (SubjectPublicKeyInfo DER), in hex.
 */
#define AUDIT_KEYID_HEX		32
#define AUDIT_SIG_HEX		128	/* an Ed25519 signature: 64 bytes */
#define AUDIT_SIGN_KEY_MAX	8192	/* PKCS#8 DER of a signing key, at most */
#define AUDIT_CANON_MAX		512	/* audit_checkpoint_canon()'s bytes, at most */
#define AUDIT_TS_MAX_MS		253402300799999LL	/* 9999-12-31T23:59:59.999Z */

/* What a signer made of one checkpoint, for the record. */
struct audit_signature {
	char		 as_key[AUDIT_KEYID_HEX + 1];	/* the key id */
	char		 as_sig[AUDIT_SIG_HEX + 1];	/* hex */
	long long	 as_link_seq;			/* the previous signature's */
	char		 as_link_head[AUDIT_HASH_HEX + 1];
	char		 as_unsigned[200];	/* not signed: why (a short text) */
};
/*
 * Signs a checkpoint of the head (seq, head) at ts_ms into *out: 0, or -1 with
 * out->as_unsigned saying why not (the record is then written unsigned).  Called
 * with the log's lock held (the checkpoint must follow the head it signs): it must
 * be quick and must not write to the log.
 */
typedef int (*audit_sign_fn)(void *arg, long long seq, const char *head,
	    long long ts_ms, struct audit_signature *out);

/*
 * The bytes a checkpoint's signature covers, into buf (AUDIT_CANON_MAX): returns
 * their length, or 0 when a value is out of range (seq < 1, link_seq < 0, a hash or
 * key id that is not lower-case hex of its length, ts over 31 bytes or with a
 * control character).
 */
size_t	audit_checkpoint_canon(char *buf, size_t len, const char *key, long long seq,
	    const char *head, const char *ts, long long link_seq,
	    const char *link_head);
/*
 * Makes a new Ed25519 key: path (0600, PEM PKCS#8) and path.pub (0644, PEM
 * SubjectPublicKeyInfo); refuses (-1, err) when either exists.  keyid gets its id.
 */
int	audit_sign_keygen(const char *path, char keyid[AUDIT_KEYID_HEX + 1], char *err,
	    size_t errlen);
/*
 * Reads a signing key file: regular (not a symlink), owned by root or this user, no
 * group or other permission bits, an Ed25519 private key in PEM (PKCS#8).  0 with
 * its PKCS#8 DER in *der (*derlen bytes; OPENSSL_clear_free() it) and its id, or -1
 * with err.
 */
int	audit_sign_key_load(const char *path, unsigned char **der, size_t *derlen,
	    char keyid[AUDIT_KEYID_HEX + 1], char *err, size_t errlen);
/*
 * A signer holding the key (PKCS#8 DER of an Ed25519 key) that starts at the
 * chain's head (seq, head: 0 and NULL for an empty chain).  It signs a head only
 * after the last one it signed (seq greater; the first may be the head it started
 * at), and links each signature to the one before.  NULL with err.
 */
struct audit_signer;
struct audit_signer *audit_signer_new(const unsigned char *der, size_t derlen,
	    long long seq, const char *head, char *err, size_t errlen);
void	audit_signer_free(struct audit_signer *s);
const char *audit_signer_key_id(const struct audit_signer *s);
/* Signs (seq, head) at ts_ms: 0 with *out, or -1 with err (refused or failed). */
int	audit_signer_sign(struct audit_signer *s, long long seq, const char *head,
	    long long ts_ms, struct audit_signature *out, char *err, size_t errlen);
/* The signer's state: the last seq and head it signed, or the ones it began at. */
long long audit_signer_last(const struct audit_signer *s,
	    char head[AUDIT_HASH_HEX + 1]);
/* A public key to verify checkpoints with (PEM SubjectPublicKeyInfo, Ed25519). */
struct audit_pubkey;
struct audit_pubkey *audit_pubkey_load(const char *path, char *err, size_t errlen);
/* The same from PEM text in memory (tests). */
struct audit_pubkey *audit_pubkey_from_pem(const char *pem, size_t len, char *err,
	    size_t errlen);
void	audit_pubkey_free(struct audit_pubkey *pk);
const char *audit_pubkey_id(const struct audit_pubkey *pk);
/* 1 if sighex (AUDIT_SIG_HEX hex digits) signs msg[0..len-1] under pk, else 0. */
int	audit_pubkey_verify(const struct audit_pubkey *pk, const char *msg, size_t len,
	    const char *sighex);

/*
 * The writer's checkpoints.  audit_set_signer(): checkpoints are signed by fn (NULL:
 * none are written, but on audit_checkpoint()'s explicit request, unsigned).
 * audit_checkpoint() writes one now, at: "start", "count", "max_bytes", "sighup"
 * or "shutdown" (why it is written); nothing for an empty chain.  0, or -1 with
 * errno (a failed write, as audit_write()).  With a signer, audit_reopen_fd() and
 * audit_rotate_fd() write one ("sighup", "max_bytes") as the old file's last record.
 */
void	audit_set_signer(struct audit_log *log, audit_sign_fn fn, void *arg);
int	audit_checkpoint(struct audit_log *log, const char *at);
/*
 * Asks to be told when a checkpoint or a rotation is due: cb(arg) is called (with
 * the log's lock held: it must only wake someone) once records since the last
 * checkpoint reach every (0: never), or the file reaches max_bytes (0: never), and
 * again only after audit_checkpoint(), a rotation or a new audit_watch().  cb NULL:
 * no more calls.  If one is due already, cb is called before this returns.
 */
void	audit_watch(struct audit_log *log, long long every, long long max_bytes,
	    void (*cb)(void *), void *arg);
/* Whether a checkpoint is due (every), and the file is at max_bytes (audit_watch()). */
void	audit_due(struct audit_log *log, int *checkpoint, int *rotate);
/*
 * Rotation done by the log's owner: the file was renamed to path.1 and fd is a new,
 * empty file at path (opened for appending).  With a signer, the old file gets its
 * closing checkpoint ("max_bytes"); the new one starts with a "rotate" record
 * (source "max_bytes") naming the old file's last seq and hash.  fd is taken over.
 * 0, or -1 with err (the old file then stays in use).
 */
int	audit_rotate_fd(struct audit_log *log, int fd, char *err, size_t errlen);
/*
 * The chain's head as a file at path holds it (read-only; path.1's when path is
 * empty): its last record's seq and hash, checked (with key, if keylen > 0).  An
 * empty chain is seq 0 and the zero hash.  0, or -1 with err.
 */
int	audit_path_head(const char *path, const unsigned char *key, size_t keylen,
	    long long *seq, char head[AUDIT_HASH_HEX + 1], char *err, size_t errlen);
/* Last record's seq (0 if none) and hash (hex, 65 bytes with NUL) of the chain. */
long long audit_head(struct audit_log *log, char hash[AUDIT_HASH_HEX + 1]);
void	audit_close(struct audit_log *log);
/*
 * A tap: fn(arg, ev, seq, ts_ms, line, len) is called for every record once its
 * line is in the file (len bytes, without the newline; ts_ms the record's ts),
 * with the log's lock held, in the order of the chain: it must be quick (copy
 * the line and wake someone) and must not write to the log.  NULL: none.
 */
typedef void (*audit_tap_fn)(void *arg, enum audit_event ev, long long seq,
	    long long ts_ms, const char *line, size_t len);
void	audit_set_tap(struct audit_log *log, audit_tap_fn fn, void *arg);

/*
 * Syslog framing of audit lines (audit_syslog.c; airlockd's sink is
 * proxy/proxy_syslog.c).  One RFC 5424 message per record:
 *	<PRI>1 TIMESTAMP HOSTNAME APP-NAME PROCID MSGID - MSG
 * PRI = facility * 8 + severity (audit_syslog_severity()), TIMESTAMP the record's
 * ts (UTC, milliseconds), MSGID the record's event, no structured data, and MSG
 * the line exactly as the file holds it, without the newline.  Over a stream
 * (TCP, TLS) each message is preceded by its length and a space (RFC 6587
 * octet counting); over a datagram socket it is one datagram as it is.
 */
#define AUDIT_SYSLOG_HDR_MAX	512	/* a header, "LEN " included, at most */
#define AUDIT_SYSLOG_APP_MAX	48	/* APP-NAME: 1..48 printable ASCII */
/* The severity of a record of event ev: alarm 4, deny, exfil, sink_overflow 5,
   others 6. */
int	audit_syslog_severity(enum audit_event ev);
/* 1 if s is a valid APP-NAME (or HOSTNAME with max 255): max printable ASCII
   bytes, no space. */
int	audit_syslog_name_is_valid(const char *s, size_t max);
/*
 * The header of the message that carries msglen bytes of line (a record of ev at
 * ts_ms) into buf: "LEN " first when octet_count (LEN counting the header after
 * it and the line), then the RFC 5424 header up to MSG.  host and app must be
 * valid names (else "-" is written for them), procid > 0 (else "-").  Returns the
 * header's length, or 0 when it does not fit or ts_ms is out of range.
 */
size_t	audit_syslog_header(char *buf, size_t len, int facility, enum audit_event ev,
	    long long ts_ms, const char *host, const char *app, long procid,
	    size_t msglen, int octet_count);
/* "dns", "connect", ...; NULL for a value outside the enum. */
const char *audit_event_str(enum audit_event ev);
/* The event named s into *ev.  Returns 0, or -1 for an unknown name. */
int	audit_event_parse(const char *s, enum audit_event *ev);

/*
 * Checks the chain of the file at path on its own (a chain continuing from an earlier
 * file is accepted).  Returns 0 when intact; otherwise -1 and *bad_line (1-based, 0 if
 * the file could not be read) and why (a message in why[whylen]) name the first bad line.
 */
int	audit_verify(const char *path, long long *bad_line, char *why, size_t whylen);
/*
 * The chain of several files, oldest first, one chain (HMAC with key when keylen >
 * 0).  Returns 0 when every line is good; otherwise -1 with *bad_file (an index of
 * paths), *bad_line (0: that file could not be read) and why for the first bad one.
 */
int	audit_verify_files(char *const *paths, int n, const unsigned char *key,
	    size_t keylen, int *bad_file, long long *bad_line, char *why,
	    size_t whylen);

/*
 * The verifier, one line at a time, carrying the chain across files (rotation order,
 * oldest first).  Initialise with audit_chain_init(); the key is borrowed.
 */
struct audit_chain {
	const unsigned char *ac_key;		/* HMAC key or NULL */
	size_t		 ac_keylen;
	int		 ac_started;		/* a record was seen */
	long long	 ac_seq;		/* last record's seq */
	char		 ac_head[AUDIT_HASH_HEX + 1];	/* last record's hash */
	char		 ac_prev[AUDIT_HASH_HEX + 1];	/* last record's prev */
	long long	 ac_first_seq;		/* first record of the chain */
	char		 ac_first_prev[AUDIT_HASH_HEX + 1];
	const char	*ac_want_hash;		/* anchor (--head), or NULL */
	long long	 ac_want_seq;		/* anchor seq (--expect-seq), or 0 */
	int		 ac_anchor_found;	/* a record had ac_want_hash */
	long long	 ac_anchor_seq;
	/*
	 * Checkpoints.  Their fields are checked always; their signatures with
	 * ac_pubkey (borrowed; NULL: not checked).  ac_note(ac_note_arg, text) is
	 * told what is not an error but worth saying (an unsigned checkpoint, a
	 * restart); ac_lineno, ac_fileno are the caller's position, kept for it.
	 */
	const struct audit_pubkey *ac_pubkey;
	void		(*ac_note)(void *, const char *);
	void		*ac_note_arg;
	long long	 ac_lineno;		/* set by audit_verify_file() */
	int		 ac_fileno;		/* set by the caller, per file */
	int		 ac_file_first;		/* the next record is a file's first */
	long long	 ac_cp;			/* checkpoints seen */
	long long	 ac_cp_unsigned;	/* ... of them not signed */
	long long	 ac_signed;		/* ... signed (and verified, with a key) */
	long long	 ac_restarts;		/* "start" checkpoints */
	long long	 ac_signed_cp_seq;	/* the last signed checkpoint's own seq */
	long long	 ac_signed_last;	/* ... the seq it signs (0: none) */
	char		 ac_signed_head[AUDIT_HASH_HEX + 1];
	long long	 ac_signed_lineno;	/* where it is */
	int		 ac_signed_fileno;
	long long	 ac_start_last;		/* an unsigned "start" after it: its head */
	char		 ac_start_head[AUDIT_HASH_HEX + 1];
	int		 ac_last_is_cp;		/* the last record is a checkpoint */
	long long	 ac_last_cp_seq;	/* the last checkpoint's own seq */
};
void	audit_chain_init(struct audit_chain *c, const unsigned char *key,
	    size_t keylen);
/*
 * Checks one line (without its '\n'; any bytes) against the chain and advances it.
 * Returns 0, or -1 with the reason in why.
 */
int	audit_chain_add(struct audit_chain *c, const char *line, size_t len,
	    char *why, size_t whylen);

/* What audit_verify_file() saw in one file. */
struct audit_file_result {
	long long	 afr_records;
	long long	 afr_first_seq;
	long long	 afr_last_seq;
	char		 afr_first_prev[AUDIT_HASH_HEX + 1];
	char		 afr_head[AUDIT_HASH_HEX + 1];
};
/*
 * Feeds every line of the file at path to c.  Returns 0 if every line is good and the
 * file ends in '\n' (or is empty); otherwise -1 with *bad_line (0: unreadable) and why.
 */
int	audit_verify_file(const char *path, struct audit_chain *c,
	    struct audit_file_result *res, long long *bad_line, char *why,
	    size_t whylen);

/*
 * Streaming line reader for files of any size: audit_reader_next() returns 1 with a
 * line (without '\n', *complete = 0 for a last line with no '\n'; valid until the
 * next call), 0 at the end, -1 on error (errno; E2BIG: line over AUDIT_LINE_MAX).
 * path "-" reads stdin.  Release with audit_reader_close().
 */
struct audit_reader;
struct audit_reader *audit_reader_open(const char *path);
/* The same on fd from where it stands; fd is borrowed (not closed by the reader). */
struct audit_reader *audit_reader_fdopen(int fd);
int	audit_reader_next(struct audit_reader *r, const char **line, size_t *len,
	    int *complete);
void	audit_reader_close(struct audit_reader *r);

/*
 * "2026-11-30T12:00:00.123Z", "2026-11-30T12:00:00Z", "2026-11-30T12:00:00+02:00"
 * (no zone: UTC) or "2026-11-30" to ms since the epoch.  With end != 0 the result is
 * the last ms of the precision given (end of the second or of the day), for an
 * inclusive --until.  Returns 0 or -1.
 */
int	audit_time_parse(const char *s, int end, long long *ms);
/* Formats ms since the epoch as "2026-11-30T12:00:00.123Z" (buf >= 25 bytes). */
void	audit_time_format(long long ms, char *buf, size_t len);

/*
 * Query and summary (airlock audit query|summary).  Read tools: they judge no
 * integrity (that is audit verify) and only warn on stderr about lines that are not
 * JSON records.  Strings are NULL when a filter is not set.
 *	af_host: "name" exact, ".suffix" the name or any name below it, "*.suffix" only
 *	names below it; case-insensitive, trailing dot ignored; matched against the host
 *	part of dst (or the "qname" of a dns record without dst).
 *	af_host_part: a part of that host (a substring, case-insensitive).
 *	af_reason: the record's reason code, exactly.
 *	af_text: a part of the line as written (JSON-escaped), case-insensitive.
 *	af_since/af_until: inclusive bounds in ms (see audit_time_parse), -1 for none.
 */
struct audit_filter {
	const char	*af_sandbox;
	const char	*af_decision;
	const char	*af_host;
	const char	*af_event;
	const char	*af_reason;
	const char	*af_host_part;
	const char	*af_text;
	long long	 af_since;
	long long	 af_until;
};
#define AUDIT_FILTER_INIT { .af_since = -1, .af_until = -1 }
/* 1 if host (as in a record) matches the --host pattern, else 0. */
int	audit_host_match(const char *pattern, const char *host);
/*
 * Prints the matching records of the files paths[0..n-1] (in that order) to out:
 * one readable line each, or the raw lines with json.  Warnings go to errf.
 * Returns 0, or -1 with a message in err (unreadable file, line too long).
 */
int	audit_query(char *const *paths, int n, const struct audit_filter *f, int json,
	    FILE *out, FILE *errf, char *err, size_t errlen);
/*
 * Prints per sandbox the hosts allowed and denied (counts, first and last seen) and
 * the counts per reason, then totals per reason, over the files paths[0..n-1].
 * Returns 0, or -1 with a message in err.
 */
int	audit_summary(char *const *paths, int n, int json, FILE *out, FILE *errf,
	    char *err, size_t errlen);

/*
 * The index of `airlock audit serve`: the records of files (one chain in rotation
 * order, oldest first) read once, then again only as far as they grew, so that a
 * request reads no whole file.  For each record it keeps the line's place and the
 * fields filters look at (names shared in one table), the chain's state (the same
 * verifier as audit verify, carried line by line), and the summary (the same
 * counts as audit summary).  Records are numbered 1..N across the files.
 *
 * audit_index_update() looks at the files again: what was appended to the last one
 * is read (a last line without its newline waits for it); any other change (a file
 * shorter, replaced at its path (rotation), changed without growing, the last
 * indexed line no longer what it was, an earlier file grown) reads them all again
 * from the start.  An edit before the end made together with an append is seen
 * only at such a rereading: audit verify remains the check of record.
 */
struct audit_index;
enum audit_index_state {
	AUDIT_INDEX_OK = 0,		/* every record verifies */
	AUDIT_INDEX_EMPTY,		/* no record (nothing verified) */
	AUDIT_INDEX_TAMPERED,		/* the chain breaks at ais_bad_path:ais_bad_line */
	AUDIT_INDEX_UNREADABLE,		/* a file cannot be read (ais_bad_path, ais_why) */
};
struct audit_index_status {
	enum audit_index_state ais_state;
	long long	 ais_records;		/* records indexed */
	long long	 ais_generation;	/* one more at each change seen */
	long long	 ais_rereads;		/* times every file was read again */
	const char	*ais_bad_path;		/* the file of the first bad line */
	long long	 ais_bad_line;		/* its line in that file (1-based) */
	long long	 ais_bad_n;		/* its record number */
	char		 ais_why[256];
	long long	 ais_first_seq;		/* of the records that verify */
	long long	 ais_last_seq;
	char		 ais_first_prev[AUDIT_HASH_HEX + 1];
	char		 ais_head[AUDIT_HASH_HEX + 1];
	long long	 ais_pending;		/* bytes of a last line without '\n' yet */
};
/* One record as the index gives it out. */
struct audit_index_rec {
	long long	 air_n;			/* 1..records */
	const char	*air_path;		/* its file */
	long long	 air_line;		/* its line in that file */
	int		 air_verified;		/* before the first bad line */
	char		*air_text;		/* the line, NUL-terminated (malloc) */
	size_t		 air_len;
};
/*
 * An index of the files paths[0..n-1] (copied) read with the HMAC key (copied;
 * NULL for none), nothing read yet.  NULL on ENOMEM.
 */
struct audit_index *audit_index_new(char *const *paths, int n,
	    const unsigned char *key, size_t keylen);
/*
 * Reads what changed (everything the first time).  *changed is 1 when the records,
 * the chain's state or a file's readability changed.  Returns 0, or -1 with err
 * when memory ran out (the index is then empty and tries again next time); a file
 * that cannot be read is not an error here: the status says so.
 */
int	audit_index_update(struct audit_index *ix, int *changed, char *err,
	    size_t errlen);
void	audit_index_status(const struct audit_index *ix,
	    struct audit_index_status *st);
/* Records indexed (audit_index_status()'s ais_records, for less). */
long long audit_index_records(const struct audit_index *ix);
/* The files: *n of them; path and records of file i (0-based) by the next call. */
int	audit_index_nfiles(const struct audit_index *ix);
const char *audit_index_file(const struct audit_index *ix, int i,
	    long long *records, int *error);
/*
 * The numbers of the records after record `after` (0: from the first) that pass f,
 * ascending, in *out (malloc; *n of them; NULL when none).  Returns 0, or -1
 * (ENOMEM, or the errno of a read for f->af_text).
 */
int	audit_index_find(struct audit_index *ix, const struct audit_filter *f,
	    long long after, long long **out, size_t *n);
/* Record n into *r (release with audit_index_rec_free).  Returns 0, or -1 (errno). */
int	audit_index_get(struct audit_index *ix, long long n,
	    struct audit_index_rec *r);
void	audit_index_rec_free(struct audit_index_rec *r);
/*
 * The summary (the counts of audit summary) of every sandbox, or of sandbox only,
 * as JSON text (malloc): each host list cut to its top entries, and per sandbox its
 * exfil records, counted, the last nexfil of them listed.  NULL on ENOMEM.
 */
char	*audit_index_summary(struct audit_index *ix, const char *sandbox,
	    size_t top, size_t nexfil);
void	audit_index_free(struct audit_index *ix);

/*
 * What the web view of `airlock audit serve` takes from a request (audit_web.c):
 * pure checks of bytes a browser sent, or a hostile page through it, before
 * anything is looked up.  docs/AUDIT.md, "The web view", is the reference.
 */
#define AUDIT_WEB_STR_MAX	256		/* a parameter's value, decoded */
#define AUDIT_WEB_QUERY_MAX	4096		/* a query string, as sent */
#define AUDIT_WEB_LIMIT_MAX	500		/* records per answer */
#define AUDIT_WEB_WAIT_MAX	25		/* seconds a tail request waits */
#define AUDIT_WEB_TOP_MAX	100		/* hosts per list of a summary */
/* The parameters a request may carry, by group. */
#define AUDIT_WEB_FILTERS	0x01	/* sandbox event decision reason host
					   host_part q since until */
#define AUDIT_WEB_PAGE		0x02	/* offset limit order */
#define AUDIT_WEB_TAIL		0x04	/* after limit wait */
#define AUDIT_WEB_RECORD	0x08	/* n */
#define AUDIT_WEB_SUMMARY	0x10	/* sandbox top */
struct audit_web_query {
	char		 awq_sandbox[AUDIT_WEB_STR_MAX + 1];	/* "": not given */
	char		 awq_event[16];
	char		 awq_decision[8];
	char		 awq_reason[AUDIT_WEB_STR_MAX + 1];
	char		 awq_host[AUDIT_WEB_STR_MAX + 1];
	char		 awq_host_part[AUDIT_WEB_STR_MAX + 1];
	char		 awq_text[AUDIT_WEB_STR_MAX + 1];
	long long	 awq_since;		/* ms, -1: not given */
	long long	 awq_until;
	long long	 awq_offset;		/* 0 */
	long long	 awq_limit;		/* 0: not given */
	long long	 awq_after;		/* 0 */
	long long	 awq_n;			/* 0: not given */
	long long	 awq_wait;		/* -1: not given */
	long long	 awq_top;		/* 0: not given */
	int		 awq_desc;		/* order=desc */
};
/*
 * Parses the query string (as sent, without '?'; NULL or "" for none) into *q: the
 * parameters of the groups in `which` only, each at most once, '+' and %XX decoded
 * (a bad escape, NUL or another control byte refused), values bounded; an empty
 * value is as none.  Returns 0, or -1 with a message for a 400 in err.
 */
int	audit_web_query_parse(const char *query, unsigned int which,
	    struct audit_web_query *q, char *err, size_t errlen);
/* The filter of q (pointers into q). */
void	audit_web_filter(const struct audit_web_query *q, struct audit_filter *f);
/*
 * 1 if a Host header names the listening address itself: "ADDR:PORT" (addr its text
 * form; "[ADDR]:PORT" for IPv6) or "localhost:PORT" (any case), without the port
 * when it is 80.  Any other name (one a hostile page rebound to loopback) is 0.
 */
int	audit_web_host_ok(const char *host, const char *addr, int v6,
	    unsigned int port);
/*
 * The web file a path names: "/" is index.html, "/NAME" a name of [a-z0-9._-]
 * (1-64 bytes, starting with a letter or digit, no "..") ending in .html, .css, .js
 * or .png, into name (len >= 65) with its Content-Type.  Returns 0, or -1 for any
 * other path (a folder, an escape, a dot file: 404).
 */
int	audit_web_static(const char *path, char *name, size_t len,
	    const char **ctype);

#endif
