/*
 * tests/unit/audit_test.h: helpers shared by the audit unit tests (static, so each
 * test binary has its own copy).
 */
#ifndef AIRLOCK_AUDIT_TEST_H
#define AIRLOCK_AUDIT_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit.h"
#include "../tap.h"

/* Reads the whole file; the buffer (NUL-terminated) is to free(). */
static inline char *
slurp(const char *path, size_t *len)
{
	FILE *f;
	char *buf;
	long n;

	if ((f = fopen(path, "rb")) == NULL)
		bail("open %s", path);
	if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) != 0 || (buf = malloc((size_t)n + 1)) == NULL ||
	    fread(buf, 1, (size_t)n, f) != (size_t)n)
		bail("read %s", path);
	fclose(f);
	buf[n] = '\0';
	*len = (size_t)n;
	return buf;
}

static inline void
spit(const char *path, const char *buf, size_t len)
{
	FILE *f;

	/*
	 * A new file each time: rewriting a truncated one makes ext4
	 * (auto_da_alloc) flush it on close, 10x slower in the byte loops.
	 */
	(void)unlink(path);
	if ((f = fopen(path, "wb")) == NULL ||
	    (len > 0 && fwrite(buf, 1, len, f) != len) || fclose(f) != 0)
		bail("write %s", path);
}

/* Newlines in s[0..len-1]. */
static inline int
count_lines(const char *s, size_t len)
{
	size_t i;
	int n = 0;

	for (i = 0; i < len; i++)
		n += s[i] == '\n';
	return n;
}

/* A path in the test's temporary directory (one static buffer per call site). */
static inline const char *
tpath(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", tap_tmpdir(), name);
	return buf;
}

/*
 * A request record with every standard field set but reason and would_deny, at
 * 2026-11-30T12:00:00.123Z (tests/unit/audit_write.c checks its line byte for byte;
 * tests/unit/docs_audit.c checks its fields are documented).  inject is borrowed.
 */
static inline void
full_record(struct audit_record *r, const char *const *inject)
{
	*r = (struct audit_record)AUDIT_RECORD_INIT;
	r->ar_ts_ms = 1796040000123LL;
	r->ar_event = AUDIT_EV_REQUEST;
	r->ar_sandbox = "demo";
	r->ar_src = "10.233.0.2:51234";
	r->ar_dst = "api.github.com:443";
	r->ar_tls = "inspect";
	r->ar_method = "GET";
	r->ar_path = "/repos/acme/app";
	r->ar_status = 200;
	r->ar_decision = "allow";
	r->ar_rule = "github-api";
	r->ar_rule_file = "/etc/airlock/policies/coding-agent.json";
	r->ar_inject = inject;
	r->ar_bytes_up = 512;
	r->ar_bytes_down = 2048;
	r->ar_ms = 35;
}

/* Appends n plain records to the log at path, sandbox sb, hosts h0, h1, ... */
static inline void
gen_records(const char *path, const char *sb, int n)
{
	struct audit_log *log;
	char err[512], dst[64];
	int i;

	if ((log = audit_open(path, AUDIT_FSYNC_NEVER, err, sizeof(err))) == NULL)
		bail("audit_open: %s", err);
	for (i = 0; i < n; i++) {
		struct audit_record r = AUDIT_RECORD_INIT;

		snprintf(dst, sizeof(dst), "h%d.example.com:443", i);
		r.ar_event = AUDIT_EV_CONNECT;
		r.ar_sandbox = sb;
		r.ar_dst = dst;
		r.ar_decision = "allow";
		r.ar_rule = "r1";
		if (audit_write(log, &r) == -1)
			bail("audit_write");
	}
	audit_close(log);
}

/* audit_verify() of the file; returns 0 or the 1-based bad line (-1: unreadable). */
static inline long long
verify_bad_line(const char *path, char *why, size_t whylen)
{
	long long bad;

	if (audit_verify(path, &bad, why, whylen) == 0)
		return 0;
	return bad > 0 ? bad : -1;
}

#endif
