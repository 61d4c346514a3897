/*
 * include/audit.h: the tamper-evident audit log (JSON Lines, DESIGN.md "Audit log").
 * Each line carries seq, prev (the previous line's hash) and hash (SHA-256 over the
 * record's canonical serialisation without "hash"), so an edit, deletion, insertion or
 * reordering is found by audit_verify().  Implemented in audit/.
 *
 * The API takes secret *names* only: it has no field for a secret's value.
 */
#ifndef AIRLOCK_AUDIT_H
#define AIRLOCK_AUDIT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum audit_fsync {
	AUDIT_FSYNC_NEVER = 0,		/* flush only */
	AUDIT_FSYNC_DENY,		/* fsync before a denial takes effect (default) */
	AUDIT_FSYNC_ALWAYS,		/* fsync every record */
};

enum audit_event {
	AUDIT_EV_DNS = 0,
	AUDIT_EV_CONNECT,
	AUDIT_EV_REQUEST,
	AUDIT_EV_DENY,
	AUDIT_EV_EXFIL,
	AUDIT_EV_SANDBOX,
	AUDIT_EV_CONFIG,
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
	const char	*ar_reason;	/* stable code, for denials */
	int		 ar_would_deny;	/* report mode: 1 adds "would_deny":true */
	const char	*const *ar_inject; /* names of injected secrets, NULL-terminated */
	long long	 ar_bytes_up;
	long long	 ar_bytes_down;
	long long	 ar_ms;
	const struct audit_kv *ar_extra; /* ar_nextra extra fields */
	size_t		 ar_nextra;
};
#define AUDIT_RECORD_INIT { .ar_status = -1, .ar_bytes_up = -1, \
	.ar_bytes_down = -1, .ar_ms = -1 }

struct audit_log;

/*
 * Opens (creating 0600) or continues the log at path: reads the last line to continue
 * seq and the hash chain.  If the file is empty and a rotated predecessor exists
 * (path.1), the chain continues from it.  Returns the log, to be closed with
 * audit_close(), or NULL with a message in err.
 */
struct audit_log *audit_open(const char *path, enum audit_fsync fs, char *err,
	    size_t errlen);
/* Appends one record, flushes, fsyncs per policy.  Returns 0 or -1 (errno set). */
int	audit_write(struct audit_log *log, const struct audit_record *r);
void	audit_close(struct audit_log *log);
const char *audit_event_str(enum audit_event ev);

/*
 * Checks the chain of the file at path.  Returns 0 when intact; otherwise -1 and
 * *bad_line (1-based) and why (a message in why[whylen]) name the first bad line.
 */
int	audit_verify(const char *path, long long *bad_line, char *why, size_t whylen);

#endif
