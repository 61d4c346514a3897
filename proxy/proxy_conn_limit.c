/*
 * proxy/proxy_conn_limit.c: per-sandbox token buckets for the policy's limits,
 * shared by every worker thread (one mutex; taken once per new connection and once
 * per relay read of a rate-limited sandbox).
 *
 * New connections: limits.connections_per_second (falling back to
 * limits.requests_per_second when only that is set, since in splice mode every
 * connection is at least one request), burst of one second's worth.
 * Bytes: limits.bytes_per_second over both directions, burst of one second's
 * worth; a read that overdraws the bucket pauses the connection's reads until the
 * debt is repaid (proxy_conn_relay.c).
 * Requests: limits.requests_per_second, per HTTP request in inspect mode and for
 * plain HTTP (proxy_inspect.c answers 429 when the bucket is empty).
 *
 * The table is keyed by sandbox name and bounded: sandbox names are few (the state
 * directory's records), and PROXY_LIMIT_MAX entries cap it even so; when full, the
 * least recently used entry is reused.
 */
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "policy.h"
#include "proxy_conn.h"
#include "sandbox.h"

#define PROXY_LIMIT_MAX		1024
/* The longest a single read can make a connection wait (ms). */
#define PROXY_LIMIT_PAUSE_MAX	2000

struct proxy_limit {
	char		pl_name[SANDBOX_NAME_MAX + 1];
	double		pl_conn_tokens;
	double		pl_byte_tokens;
	double		pl_req_tokens;
	double		pl_last;	/* seconds, CLOCK_MONOTONIC */
	double		pl_used;	/* for LRU reuse */
};

static pthread_mutex_t	 proxy_limit_mtx = PTHREAD_MUTEX_INITIALIZER;
static struct proxy_limit proxy_limits[PROXY_LIMIT_MAX];
static size_t		 proxy_nlimits;

static double
proxy_limit_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint32_t
proxy_limit_conn_rate(const struct policy_limits *l)
{
	if (l->pl_connections_per_second != 0)
		return l->pl_connections_per_second;
	return l->pl_requests_per_second;
}

/* The bucket of name, refilled up to now.  Called with the mutex held. */
static struct proxy_limit *
proxy_limit_get(const char *name, const struct policy_limits *l, double now)
{
	struct proxy_limit *e = NULL;
	double dt, crate, brate, rrate;
	size_t i;

	for (i = 0; i < proxy_nlimits; i++)
		if (strcmp(proxy_limits[i].pl_name, name) == 0) {
			e = &proxy_limits[i];
			break;
		}
	crate = (double)proxy_limit_conn_rate(l);
	brate = (double)l->pl_bytes_per_second;
	rrate = (double)l->pl_requests_per_second;
	if (e == NULL) {
		if (proxy_nlimits < PROXY_LIMIT_MAX)
			e = &proxy_limits[proxy_nlimits++];
		else {
			e = &proxy_limits[0];
			for (i = 1; i < proxy_nlimits; i++)
				if (proxy_limits[i].pl_used < e->pl_used)
					e = &proxy_limits[i];
		}
		memset(e, 0, sizeof(*e));
		strncpy(e->pl_name, name, sizeof(e->pl_name) - 1);
		e->pl_conn_tokens = crate;
		e->pl_byte_tokens = brate;
		e->pl_req_tokens = rrate;
		e->pl_last = now;
	}
	dt = now - e->pl_last;
	if (dt > 0) {
		e->pl_conn_tokens += dt * crate;
		if (e->pl_conn_tokens > crate)
			e->pl_conn_tokens = crate;
		e->pl_byte_tokens += dt * brate;
		if (e->pl_byte_tokens > brate)
			e->pl_byte_tokens = brate;
		e->pl_req_tokens += dt * rrate;
		if (e->pl_req_tokens > rrate)
			e->pl_req_tokens = rrate;
		e->pl_last = now;
	}
	e->pl_used = now;
	return e;
}

int
proxy_limit_conn_take(const char *name, const struct policy_limits *l)
{
	struct proxy_limit *e;
	int rc = 0;

	if (proxy_limit_conn_rate(l) == 0)
		return 0;
	pthread_mutex_lock(&proxy_limit_mtx);
	e = proxy_limit_get(name, l, proxy_limit_now());
	if (e->pl_conn_tokens >= 1.0)
		e->pl_conn_tokens -= 1.0;
	else
		rc = -1;
	pthread_mutex_unlock(&proxy_limit_mtx);
	return rc;
}

int
proxy_limit_request_take(const char *name, const struct policy_limits *l)
{
	struct proxy_limit *e;
	int rc = 0;

	if (l->pl_requests_per_second == 0)
		return 0;
	pthread_mutex_lock(&proxy_limit_mtx);
	e = proxy_limit_get(name, l, proxy_limit_now());
	if (e->pl_req_tokens >= 1.0)
		e->pl_req_tokens -= 1.0;
	else
		rc = -1;
	pthread_mutex_unlock(&proxy_limit_mtx);
	return rc;
}

long
proxy_limit_bytes_take(const char *name, const struct policy_limits *l, size_t n)
{
	struct proxy_limit *e;
	double rate = (double)l->pl_bytes_per_second;
	long ms = 0;

	if (l->pl_bytes_per_second == 0)
		return 0;
	pthread_mutex_lock(&proxy_limit_mtx);
	e = proxy_limit_get(name, l, proxy_limit_now());
	e->pl_byte_tokens -= (double)n;
	if (e->pl_byte_tokens < 0) {
		ms = (long)(-e->pl_byte_tokens / rate * 1000.0) + 1;
		if (ms > PROXY_LIMIT_PAUSE_MAX)
			ms = PROXY_LIMIT_PAUSE_MAX;
	}
	pthread_mutex_unlock(&proxy_limit_mtx);
	return ms;
}
