/*
 * tests/unit/audit_verify.c: the verifier catches every tamper the chain can catch --
 * any byte changed, inserted or deleted, records deleted, swapped, duplicated or
 * appended by hand -- and the ones it cannot catch alone are shown (a forged record
 * with a recomputed SHA-256, the tail cut off) together with their remedies (the
 * HMAC key, the head anchor).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "audit.h"
#include "audit_test.h"
#include "../tap.h"

#define NREC	5

static char	 path[512];
static char	*orig;		/* the good file */
static size_t	 orig_len;
static size_t	 line_off[NREC + 1];	/* start of each line, and the end */

static void
make_log(void)
{
	struct audit_log *log;
	char err[512];
	size_t i, n;
	int k;

	tpath(path, sizeof(path), "v.jsonl");
	if ((log = audit_open(path, AUDIT_FSYNC_NEVER, err, sizeof(err))) == NULL)
		bail("%s", err);
	for (k = 0; k < NREC; k++) {
		struct audit_record r = AUDIT_RECORD_INIT;
		const char *inject[] = { "tok", NULL };

		r.ar_ts_ms = 1796040000000LL + k * 1500;
		r.ar_event = k % 2 ? AUDIT_EV_DENY : AUDIT_EV_REQUEST;
		r.ar_sandbox = "demo";
		r.ar_dst = k % 2 ? "evil.example:443" : "api.github.com:443";
		r.ar_decision = k % 2 ? "deny" : "allow";
		r.ar_reason = k % 2 ? "name_not_allowed" : NULL;
		r.ar_path = "/p\"q\\r";
		r.ar_status = 200;
		r.ar_inject = k % 2 ? NULL : inject;
		if (audit_write(log, &r) == -1)
			bail("audit_write");
	}
	audit_close(log);
	orig = slurp(path, &orig_len);
	for (i = 0, n = 0; i < orig_len; i++)
		if (orig[i] == '\n')
			line_off[++n] = i + 1;
	if (n != NREC)
		bail("expected %d lines", NREC);
}

/* Verifies buf as the file; returns 0 or the bad line (-1 unreadable). */
static long long
verify_buf(const char *buf, size_t len, char *why, size_t whylen)
{
	spit(path, buf, len);
	return verify_bad_line(path, why, whylen);
}

/* Builds a file from the original's lines in the order given (1-based, 0 ends). */
static char *
lines_file(const int *order, size_t *len)
{
	char *buf = malloc(orig_len * 2 + 1);
	size_t o = 0, l;

	for (; *order != 0; order++) {
		l = line_off[*order] - line_off[*order - 1];
		memcpy(buf + o, orig + line_off[*order - 1], l);
		o += l;
	}
	*len = o;
	return buf;
}

/*
 * A line with a correct hash for body (the record up to prev, no closing brace),
 * as someone who knows the scheme would write it.  With key: HMAC.
 */
static char *
forge(const char *body, const unsigned char *key, size_t keylen)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0, i;
	char *b2, *line;
	size_t n = strlen(body);

	b2 = malloc(n + 2);
	memcpy(b2, body, n);
	b2[n] = '}';
	if (key != NULL)
		HMAC(EVP_sha256(), key, (int)keylen, (unsigned char *)b2, n + 1, md,
		    &mdlen);
	else
		EVP_Digest(b2, n + 1, md, &mdlen, EVP_sha256(), NULL);
	free(b2);
	line = malloc(n + 80);
	memcpy(line, body, n);
	n += (size_t)snprintf(line + n, 80, ",\"hash\":\"");
	for (i = 0; i < mdlen; i++)
		n += (size_t)snprintf(line + n, 3, "%02x", md[i]);
	snprintf(line + n, 4, "\"}\n");
	return line;
}

/* The body (up to prev, no '}') of original line k, as a new string. */
static char *
body_of(int k)
{
	size_t l = line_off[k] - line_off[k - 1] - 1 - 75;

	return strndup(orig + line_off[k - 1], l);
}

/* The hash of original line k. */
static void
hash_of(int k, char out[AUDIT_HASH_HEX + 1])
{
	memcpy(out, orig + line_off[k] - 67, AUDIT_HASH_HEX);
	out[AUDIT_HASH_HEX] = '\0';
}

/* Replaces the first "from" in s by "to", in place (same length). */
static void
patch(char *s, const char *from, const char *to)
{
	char *p = strstr(s, from);

	if (p == NULL || strlen(from) != strlen(to))
		bail("patch %s", from);
	memcpy(p, to, strlen(to));
}

static void
test_every_byte(void)
{
	static const unsigned char deltas[] = { 0x01, 0x20, 0x80 };
	char why[256], *buf;
	size_t i, d, survived = 0, first = 0, tried = 0;

	buf = malloc(orig_len + 1);
	for (i = 0; i < orig_len; i++) {
		for (d = 0; d < sizeof(deltas); d++) {
			memcpy(buf, orig, orig_len);
			buf[i] ^= (char)deltas[d];
			tried++;
			if (verify_buf(buf, orig_len, why, sizeof(why)) == 0 &&
			    survived++ == 0)
				first = i;
		}
	}
	ok(survived == 0, "each of %zu one-byte changes (every byte of %zu, "
	    "3 ways) is caught%s", tried, orig_len, survived ? "" : "");
	if (survived)
		diag("%zu survived, first at byte %zu", survived, first);

	survived = 0;
	for (i = 0; i < orig_len; i++) {
		memcpy(buf, orig, i);
		memcpy(buf + i, orig + i + 1, orig_len - i - 1);
		if (verify_buf(buf, orig_len - 1, why, sizeof(why)) == 0)
			survived++;
	}
	ok(survived == 0, "deleting any one byte is caught (%zu survived)",
	    survived);
	free(buf);
	buf = malloc(orig_len + 2);
	survived = 0;
	for (i = 0; i < orig_len; i++) {
		memcpy(buf, orig, i);
		buf[i] = ' ';
		memcpy(buf + i + 1, orig + i, orig_len - i);
		if (verify_buf(buf, orig_len + 1, why, sizeof(why)) == 0)
			survived++;
	}
	ok(survived == 0, "inserting a space anywhere is caught (%zu survived)",
	    survived);
	free(buf);

	/* A change in line 3 is reported at line 3, as a hash mismatch. */
	buf = malloc(orig_len);
	memcpy(buf, orig, orig_len);
	buf[line_off[2] + 20] ^= 1;
	is_int(3, verify_buf(buf, orig_len, why, sizeof(why)),
	    "the changed line is named: %s", why);
	ok(strstr(why, "hash mismatch") != NULL, "... as a hash mismatch");
	free(buf);
}

static void
test_records(void)
{
	struct audit_chain c;
	struct audit_file_result res;
	char why[256], h5[AUDIT_HASH_HEX + 1], h4[AUDIT_HASH_HEX + 1], *buf;
	char *body, *line;
	size_t len;
	long long bad;

	is_int(0, verify_buf(orig, orig_len, why, sizeof(why)),
	    "the untouched log verifies");

	/* Deleted records. */
	buf = lines_file((const int[]){ 1, 2, 4, 5, 0 }, &len);
	is_int(3, verify_buf(buf, len, why, sizeof(why)),
	    "a middle record deleted: line 3: %s", why);
	ok(strstr(why, "gap") != NULL, "... a seq gap");
	free(buf);

	buf = lines_file((const int[]){ 2, 3, 4, 5, 0 }, &len);
	spit(path, buf, len);
	audit_chain_init(&c, NULL, 0);
	ok(audit_verify_file(path, &c, &res, &bad, why, sizeof(why)) == 0 &&
	    strcmp(res.afr_first_prev, AUDIT_ZERO_HASH) != 0 &&
	    res.afr_first_seq == 2,
	    "the first record deleted: the file reads as a continued chain "
	    "(seq 2, non-zero prev), which --strict refuses");
	free(buf);

	/* The last record deleted: invisible without an anchor. */
	buf = lines_file((const int[]){ 1, 2, 3, 4, 0 }, &len);
	spit(path, buf, len);
	hash_of(5, h5);
	hash_of(4, h4);
	audit_chain_init(&c, NULL, 0);
	ok(audit_verify_file(path, &c, &res, &bad, why, sizeof(why)) == 0,
	    "the last record deleted: the rest is a valid chain");
	audit_chain_init(&c, NULL, 0);
	c.ac_want_hash = h5;
	ok(audit_verify_file(path, &c, &res, &bad, why, sizeof(why)) == 0 &&
	    !c.ac_anchor_found, "... with the head anchor, the head is not found");
	audit_chain_init(&c, NULL, 0);
	c.ac_want_seq = 5;
	ok(audit_verify_file(path, &c, &res, &bad, why, sizeof(why)) == 0,
	    "(the chain itself verifies)");
	ok(c.ac_seq < c.ac_want_seq, "... with --expect-seq 5 the log ends at "
	    "%lld", c.ac_seq);
	audit_chain_init(&c, NULL, 0);
	c.ac_want_hash = h4;
	c.ac_want_seq = 4;
	ok(audit_verify_file(path, &c, &res, &bad, why, sizeof(why)) == 0 &&
	    c.ac_anchor_found && c.ac_anchor_seq == 4, "an anchor that is there is "
	    "found");
	audit_chain_init(&c, NULL, 0);
	c.ac_want_hash = h5;
	c.ac_want_seq = 4;
	ok(audit_verify_file(path, &c, &res, &bad, why, sizeof(why)) == -1 &&
	    bad == 4, "an anchor seq whose record has another hash fails: %s", why);
	free(buf);

	/* Reordered and duplicated. */
	buf = lines_file((const int[]){ 1, 3, 2, 4, 5, 0 }, &len);
	is_int(2, verify_buf(buf, len, why, sizeof(why)),
	    "two records swapped: line 2: %s", why);
	free(buf);
	buf = lines_file((const int[]){ 1, 2, 3, 4, 5, 3, 0 }, &len);
	is_int(6, verify_buf(buf, len, why, sizeof(why)),
	    "a copy of a line appended: line 6: %s", why);
	ok(strstr(why, "repeated") != NULL, "... a repeated seq");
	free(buf);
	buf = lines_file((const int[]){ 1, 2, 2, 3, 4, 5, 0 }, &len);
	is_int(3, verify_buf(buf, len, why, sizeof(why)),
	    "a line duplicated in place: line 3");
	free(buf);

	/* The last line edited to seq + 1 and appended, hash not recomputed. */
	buf = lines_file((const int[]){ 1, 2, 3, 4, 5, 5, 0 }, &len);
	patch(buf + line_off[5], "\"seq\":5", "\"seq\":6");
	is_int(6, verify_buf(buf, len, why, sizeof(why)),
	    "the last line copied with seq+1: line 6: %s", why);
	free(buf);

	/* Forged with a recomputed hash but the old prev. */
	body = body_of(5);
	patch(body, "\"seq\":5", "\"seq\":6");
	line = forge(body, NULL, 0);
	buf = malloc(orig_len + strlen(line));
	memcpy(buf, orig, orig_len);
	memcpy(buf + orig_len, line, strlen(line));
	is_int(6, verify_buf(buf, orig_len + strlen(line), why, sizeof(why)),
	    "a forged record with a good hash but the wrong prev: %s", why);
	ok(strstr(why, "prev") != NULL, "... prev mismatch");
	free(line);
	free(buf);
	free(body);

	/* An inserted record with a good hash breaks the next one. */
	body = body_of(3);
	line = forge(body, NULL, 0);
	buf = lines_file((const int[]){ 1, 2, 0 }, &len);
	buf = realloc(buf, orig_len * 2);
	memcpy(buf + len, line, strlen(line));
	len += strlen(line);
	memcpy(buf + len, orig + line_off[2], orig_len - line_off[2]);
	len += orig_len - line_off[2];
	is_int(4, verify_buf(buf, len, why, sizeof(why)),
	    "an inserted copy of record 3 (hash recomputed): line 4: %s", why);
	free(line);
	free(body);
	free(buf);
}

/*
 * What the plain chain cannot catch: someone who can rewrite the file and knows the
 * scheme appends a record with the right seq, prev and hash.  An HMAC key the
 * forger cannot read catches it.
 */
static void
test_forgery_and_key(void)
{
	static const unsigned char key[] = "an audit key the forger lacks";
	char why[256], h[AUDIT_HASH_HEX + 1], body[1024], *line, *buf, kp[512];
	struct audit_log *log;
	struct audit_chain c;
	struct audit_file_result res;
	long long bad;
	size_t len;
	char err[512];
	int k;

	hash_of(5, h);
	snprintf(body, sizeof(body), "{\"ts\":\"2026-11-30T12:00:09.000Z\","
	    "\"seq\":6,\"event\":\"config\",\"prev\":\"%s\"", h);
	line = forge(body, NULL, 0);
	buf = malloc(orig_len + strlen(line));
	memcpy(buf, orig, orig_len);
	memcpy(buf + orig_len, line, strlen(line));
	is_int(0, verify_buf(buf, orig_len + strlen(line), why, sizeof(why)),
	    "KNOWN LIMIT: a record forged with SHA-256 and the right prev passes "
	    "the unkeyed chain");
	free(buf);
	free(line);

	tpath(kp, sizeof(kp), "k.jsonl");
	if ((log = audit_open_keyed(kp, AUDIT_FSYNC_NEVER, key, sizeof(key) - 1,
	    err, sizeof(err))) == NULL)
		bail("%s", err);
	for (k = 0; k < 3; k++) {
		struct audit_record r = AUDIT_RECORD_INIT;

		r.ar_event = AUDIT_EV_SANDBOX;
		r.ar_sandbox = "demo";
		audit_write(log, &r);
	}
	audit_head(log, h);
	audit_close(log);
	buf = slurp(kp, &len);
	snprintf(body, sizeof(body), "{\"ts\":\"2026-11-30T12:00:09.000Z\","
	    "\"seq\":4,\"event\":\"config\",\"prev\":\"%s\"", h);
	line = forge(body, NULL, 0);
	buf = realloc(buf, len + strlen(line));
	memcpy(buf + len, line, strlen(line));
	spit(kp, buf, len + strlen(line));
	audit_chain_init(&c, key, sizeof(key) - 1);
	ok(audit_verify_file(kp, &c, &res, &bad, why, sizeof(why)) == -1 &&
	    bad == 4, "with an HMAC key the forged record is caught: %s", why);
	free(line);
	line = forge(body, key, sizeof(key) - 1);
	memcpy(buf + len, line, strlen(line));
	spit(kp, buf, len + strlen(line));
	audit_chain_init(&c, key, sizeof(key) - 1);
	ok(audit_verify_file(kp, &c, &res, &bad, why, sizeof(why)) == 0 &&
	    res.afr_records == 4, "(the same record made with the key passes: "
	    "the test's HMAC is the writer's)");
	free(line);
	free(buf);
}

static void
test_lines(void)
{
	char why[256], *buf, *body, *line;
	size_t n;

	is_int(5, verify_buf(orig, orig_len - 1, why, sizeof(why)),
	    "a torn last line (no newline): %s", why);
	ok(strstr(why, "torn") != NULL, "... called torn");
	is_int(5, verify_buf(orig, orig_len - 30, why, sizeof(why)),
	    "a last line cut in the middle");
	is_int(0, verify_buf("", 0, why, sizeof(why)), "an empty file is ok");

	buf = malloc(orig_len + 1);
	memcpy(buf, orig, line_off[2]);
	buf[line_off[2]] = '\n';
	memcpy(buf + line_off[2] + 1, orig + line_off[2], orig_len - line_off[2]);
	is_int(3, verify_buf(buf, orig_len + 1, why, sizeof(why)),
	    "an empty line: %s", why);
	free(buf);

	/* CRLF line ends. */
	buf = malloc(orig_len + 1);
	memcpy(buf, orig, line_off[1] - 1);
	memcpy(buf + line_off[1] - 1, "\r\n", 2);
	memcpy(buf + line_off[1] + 1, orig + line_off[1], orig_len - line_off[1]);
	is_int(1, verify_buf(buf, orig_len + 1, why, sizeof(why)), "a CR before "
	    "the newline: %s", why);
	free(buf);

	/* A line over 1 MiB. */
	n = AUDIT_LINE_MAX + 10;
	buf = malloc(orig_len + n);
	memcpy(buf, orig, orig_len);
	memset(buf + orig_len, 'x', n - 1);
	buf[orig_len + n - 1] = '\n';
	is_int(6, verify_buf(buf, orig_len + n, why, sizeof(why)),
	    "a line over 1 MiB: %s", why);
	free(buf);

	/* Lines with a good hash but a bad record. */
	line = forge("{\"ts\":\"x\",\"seq\":1,\"event\":\"dns\",\"seq\":1,"
	    "\"prev\":\"" AUDIT_ZERO_HASH "\"", NULL, 0);
	is_int(1, verify_buf(line, strlen(line), why, sizeof(why)),
	    "a duplicate key: %s", why);
	free(line);
	line = forge("{\"ts\":\"x\",\"seq\":3,\"event\":\"dns\",\"prev\":\""
	    AUDIT_ZERO_HASH "\"", NULL, 0);
	is_int(1, verify_buf(line, strlen(line), why, sizeof(why)),
	    "a zero prev with seq 3: %s", why);
	free(line);
	body = body_of(2);
	patch(body, "\"seq\":2", "\"seq\":1");
	line = forge(body, NULL, 0);
	is_int(1, verify_buf(line, strlen(line), why, sizeof(why)),
	    "seq 1 with a non-zero prev: %s", why);
	free(line);
	free(body);
	line = forge("{\"ts\":\"x\",\"seq\":0,\"event\":\"dns\",\"prev\":\""
	    AUDIT_ZERO_HASH "\"", NULL, 0);
	is_int(1, verify_buf(line, strlen(line), why, sizeof(why)), "seq 0: %s",
	    why);
	free(line);
	line = forge("{\"ts\":\"x\",\"seq\":1,\"event\":\"dns\",\"prev\":\""
	    AUDIT_ZERO_HASH "\",\"x\":[1,", NULL, 0);
	is_int(1, verify_buf(line, strlen(line), why, sizeof(why)),
	    "bad JSON: %s", why);
	free(line);
	line = forge("{\"ts\":\"x\",\"seq\":1,\"prev\":\"" AUDIT_ZERO_HASH "\"",
	    NULL, 0);
	is_int(1, verify_buf(line, strlen(line), why, sizeof(why)),
	    "no event: %s", why);
	free(line);
	line = forge("{\"ts\":\"x\",\"seq\":1,\"event\":\"dns\",\"prev\":\""
	    AUDIT_ZERO_HASH "\",\"hash\":\"00\"", NULL, 0);
	is_int(1, verify_buf(line, strlen(line), why, sizeof(why)),
	    "a second \"hash\" key inside: %s", why);
	free(line);
	line = forge("{\"ts\":\"x\",\"seq\":1,\"event\":\"dns\",\"prev\":\""
	    AUDIT_ZERO_HASH "\"", NULL, 0);
	is_int(0, verify_buf(line, strlen(line), why, sizeof(why)),
	    "(control: the minimal forged record itself verifies)");
	for (n = strlen(line) - 66; n < strlen(line) - 3; n++)
		if (line[n] >= 'a' && line[n] <= 'f')
			break;
	line[n] = (char)(line[n] - 'a' + 'A');
	is_int(1, verify_buf(line, strlen(line), why, sizeof(why)),
	    "an uppercase hex digit in the hash: %s", why);
	free(line);
}

int
main(void)
{
	plan_lazy();
	make_log();
	test_every_byte();
	test_records();
	test_forgery_and_key();
	test_lines();
	free(orig);
	return 0;
}
