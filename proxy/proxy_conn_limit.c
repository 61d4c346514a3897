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
 * worth, charged for every byte a mode moves (spliced, relayed after a 101, and
 * inspected requests and responses, heads and bodies alike); a read that
 * overdraws the bucket pauses the connection's reads until the debt is repaid,
 * then the mode resumes (pm_resume).
 * Requests: limits.requests_per_second, per HTTP request in inspect mode and for
 * plain HTTP (proxy_inspect.c answers 429 when the bucket is empty).
 * A sandbox whose record changes gets a new entry, and so full buckets.
 */
#include <sys/time.h>

#include <pthread.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

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

/* Charges n bytes to ps; 0, or the milliseconds reads should pause. */
static long
proxy_limit_bytes_take(struct proxy_sandbox *ps, const struct policy_limits *l,
    size_t n)
{
	struct proxy_buckets *b;
	double rate = (double)l->pl_bytes_per_second;
	long ms = 0;

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

static void
proxy_limit_resume(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_conn *c = arg;

	c->pc_paused = 0;
	c->pc_mode->pm_resume(c);
}

void
proxy_limit_bytes(struct proxy_conn *c, size_t n)
{
	struct timeval tv;
	long ms;

	/*
	 * While paused, what a read already took is still charged (the debt grows and
	 * the next pause is longer); only the timer is not armed twice.
	 */
	if (c->pc_limits.pl_bytes_per_second == 0 || n == 0)
		return;
	ms = proxy_limit_bytes_take(c->pc_sandbox, &c->pc_limits, n);
	if (ms == 0 || c->pc_paused)
		return;
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	if (c->pc_pause == NULL &&
	    (c->pc_pause = evtimer_new(c->pc_worker->pw_base, proxy_limit_resume,
	    c)) == NULL)
		return;		/* out of memory: no pause, the bucket stays in debt */
	if (evtimer_add(c->pc_pause, &tv) == 0)
		c->pc_paused = 1;
}
