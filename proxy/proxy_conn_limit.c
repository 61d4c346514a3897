/*
 * proxy/proxy_conn_limit.c: per-sandbox token buckets for the policy's limits.
 * Each sandbox owns its buckets and their lock (struct proxy_sandbox): nothing
 * process-wide, no lookup by name, taken once per new connection, once per request
 * and once per relay read of a rate-limited sandbox.
 *
 * New connections: limits.connections_per_second (falling back to
 * limits.requests_per_second when only that is set, since in splice mode every
 * connection is at least one request), burst of one second's worth.
 * Bytes: limits.bytes_per_second over both directions, burst of one second's
 * worth; a read that overdraws the bucket pauses the connection's reads until the
 * debt is repaid (proxy_conn_relay.c).
 * Requests: limits.requests_per_second, per HTTP request in inspect mode and for
 * plain HTTP (proxy_inspect.c answers 429 when the bucket is empty).
 * A sandbox whose record changes gets a new entry, and so full buckets.
 */
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "policy.h"
#include "proxy_registry.h"
#include "proxy_path.h"

/* The longest a single read can make a connection wait (ms). */
#define PROXY_LIMIT_PAUSE_MAX	2000

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

static double
proxy_limit_fill(double tokens, double dt, double rate)
{
	tokens += dt * rate;
	return tokens > rate ? rate : tokens;
}

/* ps's buckets, refilled up to now, locked: unlock ps_limit_mtx after use. */
static struct proxy_buckets *
proxy_limit_get(struct proxy_sandbox *ps, const struct policy_limits *l)
{
	struct proxy_buckets *b = &ps->ps_buckets;
	double now = proxy_limit_now(), dt;
	double crate = (double)proxy_limit_conn_rate(l);
	double brate = (double)l->pl_bytes_per_second;
	double rrate = (double)l->pl_requests_per_second;

	pthread_mutex_lock(&ps->ps_limit_mtx);
	if (!b->pb_init) {
		b->pb_init = 1;
		b->pb_conn = crate;
		b->pb_bytes = brate;
		b->pb_req = rrate;
		b->pb_last = now;
	}
	if ((dt = now - b->pb_last) > 0) {
		b->pb_conn = proxy_limit_fill(b->pb_conn, dt, crate);
		b->pb_bytes = proxy_limit_fill(b->pb_bytes, dt, brate);
		b->pb_req = proxy_limit_fill(b->pb_req, dt, rrate);
		b->pb_last = now;
	}
	return b;
}

/* One token of *tokens, if there is one: 0, else -1. */
static int
proxy_limit_take_one(struct proxy_sandbox *ps, double *tokens)
{
	int rc = 0;

	if (*tokens >= 1.0)
		*tokens -= 1.0;
	else
		rc = -1;
	pthread_mutex_unlock(&ps->ps_limit_mtx);
	return rc;
}

int
proxy_limit_conn_take(struct proxy_sandbox *ps, const struct policy_limits *l)
{
	if (proxy_limit_conn_rate(l) == 0)
		return 0;
	return proxy_limit_take_one(ps, &proxy_limit_get(ps, l)->pb_conn);
}

int
proxy_limit_request_take(struct proxy_sandbox *ps, const struct policy_limits *l)
{
	if (l->pl_requests_per_second == 0)
		return 0;
	return proxy_limit_take_one(ps, &proxy_limit_get(ps, l)->pb_req);
}

long
proxy_limit_bytes_take(struct proxy_sandbox *ps, const struct policy_limits *l,
    size_t n)
{
	struct proxy_buckets *b;
	double rate = (double)l->pl_bytes_per_second;
	long ms = 0;

	if (l->pl_bytes_per_second == 0)
		return 0;
	b = proxy_limit_get(ps, l);
	b->pb_bytes -= (double)n;
	if (b->pb_bytes < 0) {
		ms = (long)(-b->pb_bytes / rate * 1000.0) + 1;
		if (ms > PROXY_LIMIT_PAUSE_MAX)
			ms = PROXY_LIMIT_PAUSE_MAX;
	}
	pthread_mutex_unlock(&ps->ps_limit_mtx);
	return ms;
}
