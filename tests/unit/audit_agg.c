/*
 * tests/unit/audit_agg.c: denial aggregation in audit_write() (ar_aggregate) and
 * audit_flush(), and a write failure (RLIMIT_FSIZE stands in for a full disk):
 * identical denials in one second make one line, other keys and other records are
 * not aggregated, the count goes out later (next record, flush, close), a full table
 * and a failing file lose nothing.  Times are given (ar_ts_ms), so no test depends
 * on the clock.
 */
#include <sys/resource.h>
#include <sys/stat.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "audit.h"
#include "audit_test.h"
#include "../tap.h"

/* 2020-09-13T12:26:40Z: far in the past, so audit_flush(log, 0) sees it as over. */
#define T0	1600000000000LL

struct tally {
	long long	 lines;
	long long	 written;	/* deny records that are denials themselves */
	long long	 suppressed;	/* sum of "suppressed" */
	long long	 flushes;	/* "aggregate":"flush" records */
};

/* Counts the file's records with reason (any if NULL). */
static struct tally
tally(const char *path, const char *reason)
{
	struct tally t = { 0, 0, 0, 0 };
	char *buf, *line, *save = NULL;
	size_t len;

	buf = slurp(path, &len);
	for (line = strtok_r(buf, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		json_error_t je;
		json_t *o = json_loads(line, 0, &je);
		const char *rs, *agg;

		if (o == NULL)
			bail("bad line: %s", je.text);
		t.lines++;
		rs = json_string_value(json_object_get(o, "reason"));
		agg = json_string_value(json_object_get(o, "aggregate"));
		if (reason == NULL || (rs != NULL && strcmp(rs, reason) == 0)) {
			t.suppressed += json_integer_value(json_object_get(o,
			    "suppressed"));
			if (agg != NULL && strcmp(agg, "flush") == 0)
				t.flushes++;
			else if (rs != NULL)
				t.written++;
		}
		json_decref(o);
	}
	free(buf);
	return t;
}

static int
deny(struct audit_log *log, const char *sb, const char *reason, const char *dst,
    long long ts)
{
	struct audit_record r = AUDIT_RECORD_INIT;

	r.ar_event = AUDIT_EV_DENY;
	r.ar_sandbox = sb;
	r.ar_src = "10.233.0.2:40000";
	r.ar_dst = dst;
	r.ar_decision = "deny";
	r.ar_reason = reason;
	r.ar_ts_ms = ts;
	r.ar_aggregate = AUDIT_AGG_DST;
	return audit_write(log, &r);
}

static struct audit_log *
fresh(const char *name, char *p, size_t plen, enum audit_fsync fs)
{
	struct audit_log *log;
	char err[512];

	tpath(p, plen, name);
	(void)unlink(p);
	if ((log = audit_open(p, fs, err, sizeof(err))) == NULL)
		bail("audit_open: %s", err);
	return log;
}

static void
test_same_second(void)
{
	struct audit_log *log;
	struct tally t;
	char p[512], *buf;
	size_t len;
	int i, rc = 0;

	log = fresh("same.jsonl", p, sizeof(p), AUDIT_FSYNC_DENY);
	for (i = 0; i < 5; i++)
		rc |= deny(log, "a", "rate_limited", "11.0.0.2:2222", T0 + i * 199);
	ok(rc == 0, "five identical denials in one second: audit_write succeeds");
	t = tally(p, NULL);
	is_int(1, t.lines, "... one line in the file");
	is_int(1, t.written, "... the first denial");
	/* The next second's first one carries the 4 left out. */
	ok(deny(log, "a", "rate_limited", "11.0.0.2:2222", T0 + 1000) == 0,
	    "the next second: written");
	t = tally(p, NULL);
	is_int(2, t.lines, "... a second line");
	is_int(4, t.suppressed, "... with \"suppressed\":4");
	buf = slurp(p, &len);
	ok(strstr(buf, "\"reason\":\"rate_limited\",\"suppressed\":4,\"prev\"") !=
	    NULL, "... the field as documented");
	free(buf);
	audit_close(log);
	ok(verify_bad_line(p, NULL, 0) == 0, "the chain verifies");
	/* audit summary counts denials, not lines. */
	{
		char *paths[1] = { p }, err[256], *out = NULL;
		size_t olen = 0;
		FILE *f = open_memstream(&out, &olen);

		ok(f != NULL && audit_summary(paths, 1, 1, f, stderr, err,
		    sizeof(err)) == 0 && fclose(f) == 0 &&
		    strstr(out, "\"rate_limited\": 6") != NULL,
		    "audit summary: 6 rate_limited (2 lines, suppressed 4)");
		if (out != NULL && strstr(out, "\"rate_limited\": 6") == NULL)
			diag("%s", out);
		free(out);
	}
}

static void
test_other_keys(void)
{
	struct audit_record r = AUDIT_RECORD_INIT;
	struct audit_log *log;
	struct tally t;
	char p[512];
	int rc = 0;

	log = fresh("keys.jsonl", p, sizeof(p), AUDIT_FSYNC_DENY);
	rc |= deny(log, "a", "rate_limited", "11.0.0.2:2222", T0);
	rc |= deny(log, "a", "rate_limited", "11.0.0.2:2223", T0 + 1);
	rc |= deny(log, "a", "connection_limit", "11.0.0.2:2222", T0 + 2);
	rc |= deny(log, "b", "rate_limited", "11.0.0.2:2222", T0 + 3);
	rc |= deny(log, NULL, "unknown_sandbox", "10.233.0.1:15001", T0 + 4);
	ok(rc == 0, "denials of five keys in one second");
	is_int(5, tally(p, NULL).lines, "... five lines: another dst, reason or "
	    "sandbox is another key");
	/* Per sandbox: the VM varies dst, the limit's denials stay one key. */
	{
		struct audit_record q = AUDIT_RECORD_INIT;
		char dst[32];
		int i;

		q.ar_event = AUDIT_EV_DENY;
		q.ar_sandbox = "a";
		q.ar_decision = "deny";
		q.ar_reason = "connection_limit";
		q.ar_aggregate = AUDIT_AGG_SANDBOX;
		q.ar_ts_ms = T0 + 10;
		for (i = 0; i < 20; i++) {
			snprintf(dst, sizeof(dst), "11.0.0.2:%d", 3000 + i);
			q.ar_dst = dst;
			rc |= audit_write(log, &q);
		}
		q.ar_sandbox = "b";
		rc |= audit_write(log, &q);
	}
	ok(rc == 0, "AUDIT_AGG_SANDBOX: 20 denials of a to 20 ports, one of b");
	is_int(7, tally(p, NULL).lines, "... two lines (a once, b once)");
	/* Not aggregated: without the flag, and allow records even with it. */
	r.ar_event = AUDIT_EV_DENY;
	r.ar_sandbox = "a";
	r.ar_dst = "11.0.0.2:2222";
	r.ar_decision = "deny";
	r.ar_reason = "rate_limited";
	r.ar_ts_ms = T0 + 5;
	rc = audit_write(log, &r) | audit_write(log, &r);
	r.ar_aggregate = AUDIT_AGG_DST;
	r.ar_event = AUDIT_EV_CONNECT;
	r.ar_decision = "allow";
	r.ar_reason = NULL;
	rc |= audit_write(log, &r) | audit_write(log, &r);
	ok(rc == 0, "two denials without ar_aggregate, two allows with it");
	is_int(11, tally(p, NULL).lines, "... all four written");
	/* A caller may not forge the count. */
	{
		struct audit_kv kv = { .ak_key = "suppressed", .ak_num = 7 };

		r.ar_extra = &kv;
		r.ar_nextra = 1;
		errno = 0;
		ok(audit_write(log, &r) == -1 && errno == EINVAL,
		    "an extra field named suppressed: EINVAL");
	}
	audit_close(log);
	t = tally(p, NULL);
	is_int(12, t.lines, "at close: a's 19 pending in one flush record");
	is_int(19, tally(p, "connection_limit").suppressed, "... suppressed 19");
}

static void
test_flush(void)
{
	struct audit_log *log;
	struct tally t;
	char p[512];
	int i;

	log = fresh("flush.jsonl", p, sizeof(p), AUDIT_FSYNC_DENY);
	for (i = 0; i < 10; i++)
		(void)deny(log, "a", "address_not_allowed", "11.0.0.9:80", T0 + i);
	is_int(1, tally(p, NULL).lines, "ten denials: one line");
	ok(audit_flush(log, 0) == 0, "audit_flush after the second is over");
	t = tally(p, NULL);
	is_int(2, t.lines, "... writes one record");
	is_int(1, t.flushes, "... \"aggregate\":\"flush\"");
	is_int(9, t.suppressed, "... \"suppressed\":9");
	ok(audit_flush(log, 0) == 0 && tally(p, NULL).lines == 2,
	    "a second audit_flush writes nothing");
	/* The next denial of the key starts afresh. */
	(void)deny(log, "a", "address_not_allowed", "11.0.0.9:80", T0 + 1000);
	t = tally(p, NULL);
	is_int(3, t.lines, "the next second's denial is written");
	is_int(9, t.suppressed, "... with nothing more suppressed");
	/* Pending counts of the current second go out at close. */
	for (i = 0; i < 3; i++)
		(void)deny(log, "a", "address_not_allowed", "11.0.0.9:81", 0);
	audit_close(log);
	t = tally(p, NULL);
	is_int(4 + 1, t.lines, "at close: the pending count is written");
	is_int(9 + 2, t.suppressed, "... suppressed 2 more");
	is_int(10 + 1 + 3, t.written + t.suppressed,
	    "written + suppressed = every denial");
	ok(verify_bad_line(p, NULL, 0) == 0, "the chain verifies");
}

static void
test_table_full(void)
{
	struct audit_log *log;
	struct tally t;
	char p[512], dst[64];
	int i, k, n = 12000, rc = 0;

	/* No fsync: some 30,000 lines. */
	log = fresh("full.jsonl", p, sizeof(p), AUDIT_FSYNC_NEVER);
	/* Three times the table's keys, three denials each, in one second. */
	for (k = 0; k < 3; k++)
		for (i = 0; i < n; i++) {
			snprintf(dst, sizeof(dst), "11.0.%d.%d:443", i / 250, i % 250);
			rc |= deny(log, "a", "address_not_allowed", dst, T0 + 500);
		}
	ok(rc == 0, "%d keys x 3 denials in one second", n);
	t = tally(p, NULL);
	ok(t.lines >= n, "... every key written at least once (%lld lines)",
	    t.lines);
	audit_close(log);
	t = tally(p, NULL);
	is_int(3LL * n, t.written + t.suppressed,
	    "... written + suppressed = every denial (evictions flush their count)");
	ok(verify_bad_line(p, NULL, 0) == 0, "the chain verifies");
}

static void
test_write_failure(void)
{
	struct audit_record r = AUDIT_RECORD_INIT;
	struct audit_log *log;
	struct rlimit old, rl;
	struct stat st;
	struct tally t;
	char p[512];
	off_t size;
	int i, rc = 0, wrc, werr, aerr, frc;

	log = fresh("fail.jsonl", p, sizeof(p), AUDIT_FSYNC_DENY);
	ok(audit_error(log) == 0, "a new log: audit_error 0");
	(void)deny(log, "a", "rate_limited", "11.0.0.2:2222", T0);
	if (stat(p, &st) == -1)
		bail("stat %s", p);
	size = st.st_size;
	/* The file may not grow: each write fails with EFBIG, as a full disk would. */
	signal(SIGXFSZ, SIG_IGN);
	if (getrlimit(RLIMIT_FSIZE, &old) == -1)
		bail("getrlimit");
	rl = old;
	rl.rlim_cur = (rlim_t)size;
	if (setrlimit(RLIMIT_FSIZE, &rl) == -1)
		bail("setrlimit");
	/* Results printed after: the limit holds for a stdout file too. */
	fflush(stdout);
	r.ar_event = AUDIT_EV_CONNECT;
	r.ar_sandbox = "a";
	r.ar_decision = "allow";
	errno = 0;
	wrc = audit_write(log, &r);
	werr = errno;
	aerr = audit_error(log);
	for (i = 1; i <= 3; i++)
		rc |= deny(log, "a", "rate_limited", "11.0.0.2:2222", T0 + i * 1000);
	frc = audit_flush(log, 1);
	if (setrlimit(RLIMIT_FSIZE, &old) == -1)
		bail("setrlimit");
	ok(wrc == -1 && werr == EFBIG,
	    "a record that cannot be written: -1, errno of write");
	is_int(EFBIG, aerr, "... audit_error says why");
	ok(rc == 0, "aggregated denials while the file cannot grow: counted (0)");
	ok(frc == -1, "audit_flush fails too");
	is_int(1, tally(p, NULL).lines, "... nothing was written");
	ok(deny(log, "a", "rate_limited", "11.0.0.2:2222", T0 + 9000) == 0,
	    "room again: the next denial is written");
	is_int(0, audit_error(log), "... audit_error back to 0");
	audit_close(log);
	t = tally(p, NULL);
	is_int(5, t.written + t.suppressed, "written + suppressed = the 5 denials");
	ok(verify_bad_line(p, NULL, 0) == 0, "the chain verifies");
}

static void *
writer(void *arg)
{
	struct audit_log *log = arg;
	char dst[64];
	long rc = 0;
	int i;

	for (i = 0; i < 200; i++) {
		struct audit_record r = AUDIT_RECORD_INIT;

		snprintf(dst, sizeof(dst), "h%d.test:443", i);
		r.ar_event = AUDIT_EV_DENY;
		r.ar_sandbox = "a";
		r.ar_dst = dst;
		r.ar_decision = "deny";
		r.ar_reason = "name_not_allowed";
		rc |= audit_write(log, &r);
		/* And an aggregated one, the same key for every thread. */
		rc |= deny(log, "a", "rate_limited", "11.0.0.2:2222", 0);
	}
	return (void *)rc;
}

/* Four threads, every denial synced (group commit): all returned, all there. */
static void
test_threads(void)
{
	struct audit_log *log;
	pthread_t th[4];
	struct tally t;
	char p[512];
	void *res;
	long rc = 0;
	int i;

	log = fresh("threads.jsonl", p, sizeof(p), AUDIT_FSYNC_DENY);
	for (i = 0; i < 4; i++)
		if (pthread_create(&th[i], NULL, writer, log) != 0)
			bail("pthread_create");
	for (i = 0; i < 4; i++) {
		pthread_join(th[i], &res);
		rc |= (long)res;
	}
	ok(rc == 0, "4 threads x 400 denials with fsync deny: every write returns 0");
	audit_close(log);
	t = tally(p, "name_not_allowed");
	is_int(800, t.written, "... every plain denial written");
	t = tally(p, "rate_limited");
	is_int(800, t.written + t.suppressed, "... aggregated ones all counted");
	ok(verify_bad_line(p, NULL, 0) == 0, "... the chain verifies");
}

static pthread_mutex_t nmtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ncv = PTHREAD_COND_INITIALIZER;
static int notified;

static void
on_synced(void *arg)
{
	pthread_mutex_lock(&nmtx);
	notified++;
	pthread_cond_broadcast(&ncv);
	pthread_mutex_unlock(&nmtx);
}

/* The sync thread: a writer that does not wait is told when its record is on disk. */
static void
test_sync_thread(void)
{
	struct audit_record r = AUDIT_RECORD_INIT;
	struct audit_log *log;
	long long seq = -1, seq2 = -1;
	char p[512];
	int rc;

	log = fresh("async.jsonl", p, sizeof(p), AUDIT_FSYNC_DENY);
	ok(audit_sync_start(log, on_synced, NULL) == 0, "audit_sync_start");
	r.ar_event = AUDIT_EV_CONNECT;
	r.ar_sandbox = "a";
	r.ar_decision = "allow";
	ok(audit_write_nowait(log, &r, &seq) == 0 && seq == 0,
	    "an allow with fsync deny: nothing to wait for (seq 0)");
	rc = deny(log, "a", "rate_limited", "11.0.0.2:2222", T0);
	r.ar_event = AUDIT_EV_DENY;
	r.ar_decision = "deny";
	r.ar_reason = "name_not_allowed";
	ok(rc == 0 && audit_write_nowait(log, &r, &seq) == 0 && seq == 3,
	    "a denial: written, seq 3 to wait for (%lld)", seq);
	(void)deny(log, "a", "rate_limited", "11.0.0.2:2222", T0 + 1);
	r.ar_aggregate = AUDIT_AGG_DST;
	r.ar_reason = "rate_limited";
	r.ar_dst = "11.0.0.2:2222";
	r.ar_ts_ms = T0 + 2;
	ok(audit_write_nowait(log, &r, &seq2) == 0 && seq2 == 0,
	    "a suppressed denial: nothing to wait for");
	audit_sync_request(log, seq);
	pthread_mutex_lock(&nmtx);
	while (audit_synced(log) < seq)
		pthread_cond_wait(&ncv, &nmtx);
	pthread_mutex_unlock(&nmtx);
	ok(notified >= 1 && audit_synced(log) >= seq,
	    "the sync thread synced it and said so");
	audit_close(log);
	ok(verify_bad_line(p, NULL, 0) == 0, "the chain verifies");
}

int
main(void)
{
	plan_lazy();
	test_same_second();
	test_other_keys();
	test_flush();
	test_table_full();
	test_write_failure();
	test_threads();
	test_sync_thread();
	return tap_failures() > 0;
}
