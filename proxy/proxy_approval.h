/*
 * proxy/proxy_approval.h: one sandbox's approvals in airlockd's memory
 * (proxy_approval.c): the pending table (names a policy with "unknown": "ask"
 * refused, one entry per name and port, bounded: the oldest dropped and counted)
 * and the in-memory grants of `airlock approve allow --once | --for`.  Every
 * function takes the table's own lock; times are CLOCK_MONOTONIC milliseconds
 * given by the caller, so the logic is testable (tests/unit/approvals.c).
 */
#ifndef AIRLOCK_PROXY_APPROVAL_H
#define AIRLOCK_PROXY_APPROVAL_H

#include <stddef.h>
#include <stdint.h>

#include "hostname.h"
#include "sandbox.h"

#define APPROVAL_PENDING_MAX	64	/* pending entries per sandbox */
#define APPROVAL_GRANTS_MAX	64	/* live --once/--for grants per sandbox */
#define APPROVAL_ID_LEN		SANDBOX_APPROVAL_ID_LEN
#define APPROVAL_METHOD_MAX	32
#define APPROVAL_PATH_MAX	256	/* longer paths are cut (marked "...") */

struct proxy_approvals;

struct proxy_approvals *proxy_approvals_new(void);
void	proxy_approvals_free(struct proxy_approvals *a);

/*
 * Records a refusal of name (normalised) on port (0: unknown) with the request's
 * method and path when known (NULL otherwise), at wall-clock wall_ms: a new entry
 * (the oldest dropped when the table is full) or one more count of its entry.  Its id goes to id.
 * Returns 1 for a new entry, 0 for a counted one.  The id: sandbox_approval_id().
 */
int	proxy_approvals_note(struct proxy_approvals *a, const char *sandbox,
	    const char *name, uint16_t port, const char *method, const char *path,
	    uint64_t wall_ms, char id[APPROVAL_ID_LEN + 1]);

/*
 * A grant for name on port: once (one connection, then gone) or until until_ms
 * (a --for).  Replaces a grant for the same name and port.  Drops expired grants
 * first; -1 when APPROVAL_GRANTS_MAX live grants are there.
 */
int	proxy_approvals_grant(struct proxy_approvals *a, const char *name,
	    uint16_t port, int once, uint64_t until_ms, uint64_t now_ms);

/*
 * 1 if a live grant covers name on port; with consume, a --once grant is used up
 * (the connection it lets through is its one).  0 otherwise.
 */
int	proxy_approvals_take(struct proxy_approvals *a, const char *name,
	    uint16_t port, uint64_t now_ms, int consume);

/* 1 if a live grant names name (any port): DNS answers it. */
int	proxy_approvals_has_name(struct proxy_approvals *a, const char *name,
	    uint64_t now_ms);

/*
 * Forgets the pending entries of name on port and on port 0 (a DNS query), and
 * with grants_too its grants on port.  Returns how many pending entries went.
 */
size_t	proxy_approvals_forget(struct proxy_approvals *a, const char *name,
	    uint16_t port, int grants_too);

/* Counts: pending entries, entries dropped for room since start, live grants. */
void	proxy_approvals_counts(struct proxy_approvals *a, uint64_t now_ms,
	    size_t *npending, uint64_t *dropped, size_t *ngrants);

/*
 * The table as JSON (jansson): {"pending":[{id,name,port,method,path,first_seen,
 * last_seen,count}...], "dropped":N, "grants":[{name,port,once,expires_in}]}:
 * first/last seen as UTC ISO 8601, expires_in in seconds (grants that expired by
 * monotonic now_ms left out).  NULL: out of memory.
 */
struct json_t *proxy_approvals_json(struct proxy_approvals *a, uint64_t now_ms);

#endif
