/*
 * tests/unit/audit_write.c: the audit writer -- lines that verify, field order and
 * escaping, bounds, continuity across close/open and rotation (by path, and on
 * descriptors another process opened), refusal of a torn or bad last line, the
 * record guards, thread safety and the keyed (HMAC) chain.
 */
#include <sys/resource.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
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

static void
test_fields(void)
{
	char p[512], err[512], why[256];
	const char *inject[] = { "github_token", "npm_token", NULL };
	struct audit_kv extra[] = { { "qname", "x.example.com", 0 },
	    { "qtype", NULL, 28 } };
	struct audit_record r = AUDIT_RECORD_INIT;
	struct audit_log *log;
	json_t *o, *v;
	char *buf, *nl;
	size_t len;

	tpath(p, sizeof(p), "fields.jsonl");
	log = audit_open(p, AUDIT_FSYNC_DENY, err, sizeof(err));
	if (!ok(log != NULL, "audit_open creates a new log"))
		bail("%s", err);
	full_record(&r, inject);
	r.ar_extra = extra;
	r.ar_nextra = 2;
	ok(audit_write(log, &r) == 0, "audit_write: a full request record");
	audit_close(log);

	buf = slurp(p, &len);
	nl = strchr(buf, '\n');
	ok(nl != NULL && (size_t)(nl - buf) == len - 1, "one line, ending in '\\n'");
	is_string("{\"ts\":\"2026-11-30T12:00:00.123Z\",\"seq\":1,\"sandbox\":\"demo\","
	    "\"event\":\"request\",\"src\":\"10.233.0.2:51234\","
	    "\"dst\":\"api.github.com:443\",\"tls\":\"inspect\",\"method\":\"GET\","
	    "\"path\":\"/repos/acme/app\",\"status\":200,\"decision\":\"allow\","
	    "\"rule\":\"github-api\","
	    "\"rule_file\":\"/etc/airlock/policies/coding-agent.json\","
	    "\"inject\":[\"github_token\",\"npm_token\"],"
	    "\"bytes_up\":512,\"bytes_down\":2048,\"ms\":35,"
	    "\"qname\":\"x.example.com\",\"qtype\":28,\"prev\":\"" AUDIT_ZERO_HASH
	    "\",\"hash\":\"", (buf[len - 67] = '\0', buf),
	    "field order and format as docs/AUDIT.md; first prev is 64 zeros");
	free(buf);
	is_int(0, verify_bad_line(p, why, sizeof(why)), "the line verifies");

	/* Fields left out: NULL strings, -1 numbers, would_deny 0. */
	log = audit_open(p, AUDIT_FSYNC_DENY, err, sizeof(err));
	memset(&r, 0, sizeof(r));
	r.ar_status = -1;
	r.ar_bytes_up = r.ar_bytes_down = r.ar_ms = -1;
	r.ar_event = AUDIT_EV_CONFIG;
	r.ar_ts_ms = 1796040000000LL;
	ok(log != NULL && audit_write(log, &r) == 0, "a minimal record");
	audit_close(log);
	buf = slurp(p, &len);
	nl = strchr(buf, '\n') + 1;
	ok(strncmp(nl, "{\"ts\":\"2026-11-30T12:00:00.000Z\",\"seq\":2,"
	    "\"event\":\"config\",\"prev\":\"", 62) == 0,
	    "a minimal record has ts, seq, event, prev, hash only");
	o = json_loads(nl, JSON_DISABLE_EOF_CHECK, NULL);
	v = json_object_get(o, "prev");
	ok(o != NULL && json_is_string(v) && strlen(json_string_value(v)) == 64 &&
	    strcmp(json_string_value(v), AUDIT_ZERO_HASH) != 0 &&
	    json_object_size(o) == 5, "exactly 5 keys; prev is the first hash");
	json_decref(o);
	free(buf);
	is_int(0, verify_bad_line(p, why, sizeof(why)), "both lines verify");
}

static void
test_escaping(void)
{
	char p[512], err[512], why[256], path[8192];
	struct audit_record r = AUDIT_RECORD_INIT;
	struct audit_log *log;
	json_t *o;
	char *buf;
	size_t len, i;
	int c, nonascii = 0;

	tpath(p, sizeof(p), "escape.jsonl");
	if ((log = audit_open(p, AUDIT_FSYNC_NEVER, err, sizeof(err))) == NULL)
		bail("%s", err);
	/* Every byte 1..255 in a path: controls, quote, backslash, invalid UTF-8. */
	for (c = 1; c < 256; c++)
		path[c - 1] = (char)c;
	path[255] = '\0';
	r.ar_event = AUDIT_EV_REQUEST;
	r.ar_sandbox = "demo\n{\"seq\":99,";
	r.ar_path = path;
	r.ar_method = "GET\r\n";
	r.ar_rule = "\"},{\"hash\":\"";
	r.ar_rule_file = "/etc/p/org base.json\n\"x\":1";
	ok(audit_write(log, &r) == 0, "a record full of hostile bytes is written");
	audit_close(log);
	buf = slurp(p, &len);
	is_int(1, count_lines(buf, len), "still exactly one line");
	for (i = 0; i < len; i++)
		if ((unsigned char)buf[i] >= 0x80 || ((unsigned char)buf[i] < 0x20 &&
		    buf[i] != '\n'))
			nonascii++;
	is_int(0, nonascii, "the line is printable ASCII (controls and "
	    "non-ASCII escaped)");
	o = json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL);
	ok(o != NULL, "the line is valid JSON without duplicate keys");
	is_string("demo\n{\"seq\":99,",
	    json_string_value(json_object_get(o, "sandbox")),
	    "the sandbox string round-trips");
	is_int(1, json_integer_value(json_object_get(o, "seq")),
	    "seq is not forged by a field");
	is_string("GET\r\n", json_string_value(json_object_get(o, "method")),
	    "CR LF round-trip as escapes");
	is_string("/etc/p/org base.json\n\"x\":1",
	    json_string_value(json_object_get(o, "rule_file")),
	    "rule_file round-trips");
	ok(strstr(buf, "\"rule\":\"\\\"},{\\\"hash\\\":\\\"\",\"rule_file\":") != NULL,
	    "rule_file follows rule");
	ok(json_object_get(o, "path") != NULL &&
	    strncmp(json_string_value(json_object_get(o, "path")), path, 127) == 0,
	    "the ASCII part of the path round-trips");
	ok(strstr(json_string_value(json_object_get(o, "path")), "\xef\xbf\xbd") !=
	    NULL, "invalid UTF-8 became U+FFFD");
	json_decref(o);
	free(buf);
	is_int(0, verify_bad_line(p, why, sizeof(why)), "the record verifies");
}

static void
test_bounds(void)
{
	char p[512], err[512], why[256], *path, *buf, name[32];
	const char *inject[AUDIT_INJECT_MAX + 2];
	struct audit_kv extra[AUDIT_EXTRA_MAX + 1], kv;
	struct audit_record r = AUDIT_RECORD_INIT;
	struct audit_log *log;
	const char *s;
	json_t *o;
	size_t len, i;

	tpath(p, sizeof(p), "bounds.jsonl");
	if ((log = audit_open(p, AUDIT_FSYNC_NEVER, err, sizeof(err))) == NULL)
		bail("%s", err);
	path = malloc(100000);
	memset(path, 'a', 99999);
	path[0] = '/';
	path[99999] = '\0';
	r.ar_event = AUDIT_EV_REQUEST;
	r.ar_path = path;
	r.ar_dst = path;
	ok(audit_write(log, &r) == 0, "a 100 kB path is written");
	buf = slurp(p, &len);
	o = json_loadb(buf, len, 0, NULL);
	s = json_string_value(json_object_get(o, "path"));
	ok(s != NULL && strlen(s) == AUDIT_PATH_MAX &&
	    strcmp(s + strlen(s) - strlen(AUDIT_TRUNC_MARK), AUDIT_TRUNC_MARK) == 0,
	    "path cut to %d bytes, ending in the marker", AUDIT_PATH_MAX);
	s = json_string_value(json_object_get(o, "dst"));
	ok(s != NULL && strlen(s) == AUDIT_STR_MAX, "dst cut to %d bytes",
	    AUDIT_STR_MAX);
	json_decref(o);
	free(buf);
	ok(len < 4096, "the record stays small (%zu bytes)", len);

	/* A multi-byte character is never split by the cut. */
	for (i = 0; i + 3 < 99999; i += 3)
		memcpy(path + i, "\xe2\x82\xac", 3);	/* U+20AC */
	path[i] = '\0';
	r.ar_dst = NULL;
	ok(audit_write(log, &r) == 0, "a long path of 3-byte characters");
	audit_close(log);
	is_int(0, verify_bad_line(p, why, sizeof(why)),
	    "cut records verify (valid UTF-8 after the cut)");
	free(path);

	/* The guards: each refused with EINVAL, nothing written. */
	if ((log = audit_open(p, AUDIT_FSYNC_NEVER, err, sizeof(err))) == NULL)
		bail("%s", err);
	r = (struct audit_record)AUDIT_RECORD_INIT;
	r.ar_event = (enum audit_event)99;
	errno = 0;
	ok(audit_write(log, &r) == -1 && errno == EINVAL, "unknown event refused");
	r.ar_event = AUDIT_EV_REQUEST;
	r.ar_decision = "maybe";
	errno = 0;
	ok(audit_write(log, &r) == -1 && errno == EINVAL,
	    "decision other than allow/deny refused");
	r.ar_decision = "deny";
	kv.ak_str = "x";
	kv.ak_num = 0;
	r.ar_extra = &kv;
	r.ar_nextra = 1;
	for (i = 0; i < 6; i++) {
		static const char *const badkeys[] = { "hash", "prev", "seq", "",
		    "Qname", "rule_file" };

		kv.ak_key = badkeys[i];
		errno = 0;
		ok(audit_write(log, &r) == -1 && errno == EINVAL,
		    "extra key '%s' refused", badkeys[i]);
	}
	kv.ak_key = "a_key_that_is_much_longer_than_32";
	ok(audit_write(log, &r) == -1 && errno == EINVAL, "extra key > 32 refused");
	extra[0] = (struct audit_kv){ "qname", "a", 0 };
	extra[1] = (struct audit_kv){ "qname", "b", 0 };
	r.ar_extra = extra;
	r.ar_nextra = 2;
	errno = 0;
	ok(audit_write(log, &r) == -1 && errno == EINVAL,
	    "duplicate extra key refused");
	for (i = 0; i < AUDIT_EXTRA_MAX + 1; i++) {
		snprintf(name, sizeof(name), "k%zu", i);
		extra[i].ak_key = strdup(name);
		extra[i].ak_str = NULL;
		extra[i].ak_num = (long long)i;
	}
	r.ar_nextra = AUDIT_EXTRA_MAX + 1;
	errno = 0;
	ok(audit_write(log, &r) == -1 && errno == EINVAL,
	    "more than %d extra fields refused", AUDIT_EXTRA_MAX);
	r.ar_nextra = AUDIT_EXTRA_MAX;
	ok(audit_write(log, &r) == 0, "%d extra fields accepted",
	    AUDIT_EXTRA_MAX);
	for (i = 0; i < AUDIT_EXTRA_MAX + 1; i++)
		free((char *)(uintptr_t)extra[i].ak_key);
	r.ar_nextra = 0;
	r.ar_extra = NULL;
	for (i = 0; i < AUDIT_INJECT_MAX + 1; i++)
		inject[i] = "s";
	inject[AUDIT_INJECT_MAX + 1] = NULL;
	r.ar_inject = inject;
	errno = 0;
	ok(audit_write(log, &r) == -1 && errno == EINVAL,
	    "more than %d inject names refused", AUDIT_INJECT_MAX);
	inject[AUDIT_INJECT_MAX] = NULL;
	ok(audit_write(log, &r) == 0, "%d inject names accepted",
	    AUDIT_INJECT_MAX);
	audit_close(log);
	buf = slurp(p, &len);
	is_int(4, count_lines(buf, len), "refused records wrote nothing");
	free(buf);
	is_int(0, verify_bad_line(p, why, sizeof(why)),
	    "the chain has no gap after refusals");
}

static void
test_continuity(void)
{
	char p[512], p1[512], err[512], why[256], head[AUDIT_HASH_HEX + 1];
	char head2[AUDIT_HASH_HEX + 1];
	struct audit_log *log;
	struct audit_chain c;
	struct audit_file_result res;
	struct stat st;
	char *buf;
	size_t len;
	long long bad;

	tpath(p, sizeof(p), "cont.jsonl");
	gen_records(p, "demo", 3);
	gen_records(p, "demo", 2);
	gen_records(p, "other", 1);
	ok(stat(p, &st) == 0 && (st.st_mode & 0777) == 0600, "the log is mode 0600");
	audit_chain_init(&c, NULL, 0);
	ok(audit_verify_file(p, &c, &res, &bad, why, sizeof(why)) == 0,
	    "three open/close sessions make one chain");
	is_int(6, res.afr_records, "6 records");
	is_int(6, res.afr_last_seq, "seq 1..6");

	/* Rotation: the file renamed to .1, a new one continues the chain. */
	tpath(p1, sizeof(p1), "cont.jsonl.1");
	if (rename(p, p1) == -1)
		bail("rename");
	if ((log = audit_open(p, AUDIT_FSYNC_NEVER, err, sizeof(err))) == NULL)
		bail("%s", err);
	is_int(6, audit_head(log, head), "after rotation the chain continues "
	    "from path.1 (seq 6)");
	is_string(res.afr_head, head, "... with path.1's head");
	audit_close(log);
	gen_records(p, "demo", 2);
	audit_chain_init(&c, NULL, 0);
	ok(audit_verify_file(p1, &c, &res, &bad, why, sizeof(why)) == 0 &&
	    audit_verify_file(p, &c, &res, &bad, why, sizeof(why)) == 0,
	    "path.1 then path verify as one chain");
	is_int(7, res.afr_first_seq, "the new file starts at seq 7");
	is_int(8, res.afr_last_seq, "... and ends at 8");

	/* The same two files in the wrong order break the chain. */
	audit_chain_init(&c, NULL, 0);
	ok(audit_verify_file(p, &c, &res, &bad, why, sizeof(why)) == 0 &&
	    audit_verify_file(p1, &c, &res, &bad, why, sizeof(why)) == -1,
	    "files in the wrong order fail (%s)", why);

	/* audit_reopen after a rename (logrotate without copytruncate). */
	if ((log = audit_open(p, AUDIT_FSYNC_NEVER, err, sizeof(err))) == NULL)
		bail("%s", err);
	ok(audit_reopen(log, err, sizeof(err)) == 0,
	    "audit_reopen without a rotation keeps the file");
	if (unlink(p1) == -1 || rename(p, p1) == -1)
		bail("rename");
	{
		struct audit_record r = AUDIT_RECORD_INIT;

		r.ar_event = AUDIT_EV_SANDBOX;
		ok(audit_write(log, &r) == 0, "a write after the rename goes to "
		    "the old file");
		ok(audit_reopen(log, err, sizeof(err)) == 0, "audit_reopen: %s",
		    "opens the new path");
		ok(audit_write(log, &r) == 0, "a write after reopen");
	}
	audit_head(log, head);
	audit_close(log);
	audit_chain_init(&c, NULL, 0);
	ok(audit_verify_file(p1, &c, &res, &bad, why, sizeof(why)) == 0 &&
	    res.afr_last_seq == 9 &&
	    audit_verify_file(p, &c, &res, &bad, why, sizeof(why)) == 0 &&
	    res.afr_first_seq == 10 && res.afr_records == 2,
	    "reopen continued the chain in the new file (seq 10, its rotate "
	    "record, then the write)");
	buf = slurp(p, &len);
	ok(strstr(buf, "\"seq\":10,\"event\":\"rotate\",\"source\":\"sighup\","
	    "\"last_seq\":9,\"head\":\"") != NULL, "the new file starts with a "
	    "rotate record naming the old file's last seq and hash");
	free(buf);
	is_string(head, c.ac_head, "audit_head() is the last record's hash");

	/* reopen refuses a file whose chain does not end where ours does. */
	if ((log = audit_open(p, AUDIT_FSYNC_NEVER, err, sizeof(err))) == NULL)
		bail("%s", err);
	if (unlink(p) == -1 || unlink(p1) == -1)
		bail("unlink");
	gen_records(p, "x", 1);
	ok(audit_reopen(log, err, sizeof(err)) == -1,
	    "reopen refuses a file with another chain: %s", err);
	audit_head(log, head2);
	is_string(head, head2, "... and keeps its own chain");
	audit_close(log);
	unlink(p);
}

/*
 * audit_reopen_fd: the files opened elsewhere (the root reader, for the confined
 * worker), the chain continued from path.1 through rfd; nothing opened here.
 */
static void
test_reopen_fd(void)
{
	char p[512], p1[512], err[512], why[256];
	struct audit_record r = AUDIT_RECORD_INIT;
	struct audit_file_result res;
	struct audit_chain c;
	struct audit_log *log;
	long long bad;
	int fd, rfd;

	tpath(p, sizeof(p), "fd.jsonl");
	tpath(p1, sizeof(p1), "fd.jsonl.1");
	r.ar_event = AUDIT_EV_SANDBOX;
	if ((log = audit_open(p, AUDIT_FSYNC_NEVER, err, sizeof(err))) == NULL)
		bail("%s", err);
	ok(audit_write(log, &r) == 0 && audit_write(log, &r) == 0, "two records");
	ok(audit_path_open(p, O_NOFOLLOW, &fd, &rfd, err, sizeof(err)) == 0 &&
	    rfd == -1, "audit_path_open: the same file, not empty: no path.1");
	ok(audit_reopen_fd(log, fd, rfd, err, sizeof(err)) == 0,
	    "audit_reopen_fd without a rotation keeps the file");
	if (rename(p, p1) == -1)
		bail("rename");
	ok(audit_path_open(p, O_NOFOLLOW, &fd, &rfd, err, sizeof(err)) == 0 &&
	    rfd != -1, "after a rename: a new empty file and path.1");
	ok(audit_reopen_fd(log, fd, rfd, err, sizeof(err)) == 0,
	    "audit_reopen_fd continues in the new file: %s", err);
	ok(audit_write(log, &r) == 0, "a write after it");
	audit_close(log);
	audit_chain_init(&c, NULL, 0);
	ok(audit_verify_file(p1, &c, &res, &bad, why, sizeof(why)) == 0 &&
	    res.afr_last_seq == 2 &&
	    audit_verify_file(p, &c, &res, &bad, why, sizeof(why)) == 0 &&
	    res.afr_first_seq == 3 && res.afr_records == 2,
	    "the chain goes on across both files (seq 3, a rotate record, in the "
	    "new one)");

	/* O_NOFOLLOW: a symlink at the path is refused, not followed. */
	unlink(p);
	if (symlink(p1, p) == -1)
		bail("symlink");
	ok(audit_path_open(p, O_NOFOLLOW, &fd, &rfd, err, sizeof(err)) == -1 &&
	    fd == -1 && rfd == -1, "O_NOFOLLOW refuses a symlink: %s", err);
	unlink(p);
	unlink(p1);
}

static void
test_refusals(void)
{
	char p[512], p1[512], err[512];
	struct audit_log *log;
	char *buf;
	size_t len;

	/* A torn last line: refuse, never append after it. */
	tpath(p, sizeof(p), "torn.jsonl");
	gen_records(p, "demo", 2);
	buf = slurp(p, &len);
	spit(p, buf, len - 10);
	log = audit_open(p, AUDIT_FSYNC_NEVER, err, sizeof(err));
	ok(log == NULL && strstr(err, "torn") != NULL,
	    "a torn last line is refused: %s", err);
	audit_close(log);
	spit(p, buf, len - 1);
	log = audit_open(p, AUDIT_FSYNC_NEVER, err, sizeof(err));
	ok(log == NULL, "a last line missing only its newline is refused");
	audit_close(log);

	/* A last line that does not verify (changed by hand). */
	buf[len - 10] = buf[len - 10] == 'a' ? 'b' : 'a';
	spit(p, buf, len);
	log = audit_open(p, AUDIT_FSYNC_NEVER, err, sizeof(err));
	ok(log == NULL && strstr(err, "does not verify") != NULL,
	    "a bad last record is refused: %s", err);
	audit_close(log);
	spit(p, "garbage\n", 8);
	log = audit_open(p, AUDIT_FSYNC_NEVER, err, sizeof(err));
	ok(log == NULL, "a file of garbage is refused");
	audit_close(log);
	free(buf);

	/* A torn path.1 under an empty path. */
	tpath(p1, sizeof(p1), "torn.jsonl.1");
	spit(p, "", 0);
	spit(p1, "{\"ts\":", 6);
	log = audit_open(p, AUDIT_FSYNC_NEVER, err, sizeof(err));
	ok(log == NULL && strstr(err, ".1") != NULL,
	    "a torn path.1 is refused too: %s", err);
	audit_close(log);
	unlink(p1);
	log = audit_open(p, AUDIT_FSYNC_NEVER, err, sizeof(err));
	ok(log != NULL, "an empty file without path.1 starts a new chain");
	audit_close(log);

	/* A second writer on the same file. */
	log = audit_open(p, AUDIT_FSYNC_NEVER, err, sizeof(err));
	{
		struct audit_log *log2;

		log2 = audit_open(p, AUDIT_FSYNC_NEVER, err, sizeof(err));
		ok(log != NULL && log2 == NULL && strstr(err, "another process") !=
		    NULL, "a second writer is refused: %s", err);
		audit_close(log2);
		audit_close(log);
		log2 = audit_open(p, AUDIT_FSYNC_NEVER, err, sizeof(err));
		ok(log2 != NULL, "... until the first closes");
		audit_close(log2);
	}

	/* Not a regular file. */
	log = audit_open(tap_tmpdir(), AUDIT_FSYNC_NEVER, err, sizeof(err));
	ok(log == NULL, "a directory is refused: %s", err);
	audit_close(log);
}

/*
 * A write cut short (here by RLIMIT_FSIZE, as a full disk would) is undone: the
 * file and the chain stay as they were and the next record continues them.
 */
static void
test_partial_write(void)
{
	char p[512], err[512], why[256];
	struct audit_record r = AUDIT_RECORD_INIT;
	struct rlimit old, lim;
	struct audit_log *log;
	struct stat st;
	off_t before;
	int rc, saved;

	tpath(p, sizeof(p), "partial.jsonl");
	gen_records(p, "demo", 2);
	if ((log = audit_open(p, AUDIT_FSYNC_NEVER, err, sizeof(err))) == NULL)
		bail("%s", err);
	if (stat(p, &st) == -1 || getrlimit(RLIMIT_FSIZE, &old) == -1)
		bail("stat/getrlimit");
	before = st.st_size;
	signal(SIGXFSZ, SIG_IGN);
	lim = old;
	lim.rlim_cur = (rlim_t)before + 50;
	if (setrlimit(RLIMIT_FSIZE, &lim) == -1)
		bail("setrlimit");
	r.ar_event = AUDIT_EV_REQUEST;
	r.ar_dst = "partial.example:443";
	rc = audit_write(log, &r);
	saved = errno;
	if (setrlimit(RLIMIT_FSIZE, &old) == -1)
		bail("setrlimit");
	ok(rc == -1 && saved == EFBIG, "a write cut short fails (EFBIG)");
	if (stat(p, &st) == -1)
		bail("stat");
	ok(st.st_size == before, "the partial line was truncated away (%lld bytes, want %lld)",
	    (long long)st.st_size, (long long)before);
	is_int(0, verify_bad_line(p, why, sizeof(why)), "the file still verifies");
	ok(audit_write(log, &r) == 0, "the next write succeeds");
	audit_close(log);
	is_int(0, verify_bad_line(p, why, sizeof(why)),
	    "and continues the chain without a gap");
}

struct thr_arg {
	struct audit_log *log;
	int		  id;
	int		  failed;
};

static void *
thr_main(void *v)
{
	struct thr_arg *a = v;
	char dst[64];
	int i;

	for (i = 0; i < 500; i++) {
		struct audit_record r = AUDIT_RECORD_INIT;

		snprintf(dst, sizeof(dst), "t%d-%d.example.com:443", a->id, i);
		r.ar_event = AUDIT_EV_REQUEST;
		r.ar_sandbox = "threads";
		r.ar_dst = dst;
		r.ar_decision = i % 7 == 0 ? "deny" : "allow";
		if (audit_write(a->log, &r) == -1)
			a->failed++;
	}
	return NULL;
}

static void
test_threads(void)
{
	char p[512], err[512], why[256];
	struct thr_arg args[4];
	pthread_t t[4];
	struct audit_log *log;
	struct audit_chain c;
	struct audit_file_result res;
	long long bad;
	int i, failed = 0;

	tpath(p, sizeof(p), "threads.jsonl");
	if ((log = audit_open(p, AUDIT_FSYNC_DENY, err, sizeof(err))) == NULL)
		bail("%s", err);
	for (i = 0; i < 4; i++) {
		args[i] = (struct thr_arg){ log, i, 0 };
		if (pthread_create(&t[i], NULL, thr_main, &args[i]) != 0)
			bail("pthread_create");
	}
	for (i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		failed += args[i].failed;
	}
	audit_close(log);
	is_int(0, failed, "4 threads x 500 records: no write failed");
	audit_chain_init(&c, NULL, 0);
	bad = 0;	/* the message reads them whatever the result */
	why[0] = '\0';
	ok(audit_verify_file(p, &c, &res, &bad, why, sizeof(why)) == 0,
	    "the 2000 records verify as one chain%s%s", bad ? ": " : "",
	    bad ? why : "");
	is_int(2000, res.afr_records, "2000 records");
	is_int(2000, res.afr_last_seq, "seq 1..2000");
}

static void
test_keyed(void)
{
	static const unsigned char key[32] = "0123456789abcdef0123456789abcdef";
	static const unsigned char key2[32] = "0123456789abcdef0123456789abcdeX";
	char p[512], kp[512], err[512], why[256];
	unsigned char k[AUDIT_KEY_MAX];
	struct audit_log *log;
	struct audit_chain c;
	struct audit_file_result res;
	long long bad;
	size_t klen;
	int i;

	tpath(p, sizeof(p), "keyed.jsonl");
	for (i = 0; i < 2; i++) {
		struct audit_record r = AUDIT_RECORD_INIT;

		log = audit_open_keyed(p, AUDIT_FSYNC_NEVER, key, sizeof(key), err,
		    sizeof(err));
		if (!ok(log != NULL, "keyed open %d", i))
			bail("%s", err);
		r.ar_event = AUDIT_EV_DNS;
		ok(audit_write(log, &r) == 0 && audit_write(log, &r) == 0,
		    "keyed writes");
		audit_close(log);
	}
	audit_chain_init(&c, key, sizeof(key));
	ok(audit_verify_file(p, &c, &res, &bad, why, sizeof(why)) == 0 &&
	    res.afr_records == 4, "a keyed log verifies with its key");
	audit_chain_init(&c, NULL, 0);
	ok(audit_verify_file(p, &c, &res, &bad, why, sizeof(why)) == -1 &&
	    bad == 1 && strstr(why, "key") != NULL,
	    "... not without it: %s", why);
	audit_chain_init(&c, key2, sizeof(key2));
	ok(audit_verify_file(p, &c, &res, &bad, why, sizeof(why)) == -1,
	    "... nor with another key");
	log = audit_open(p, AUDIT_FSYNC_NEVER, err, sizeof(err));
	ok(log == NULL, "an unkeyed writer refuses to continue a keyed log");
	audit_close(log);
	log = audit_open_keyed(p, AUDIT_FSYNC_NEVER, key, 0, err, sizeof(err));
	ok(log == NULL, "an empty key is refused");

	/* Key files. */
	tpath(kp, sizeof(kp), "audit.key");
	spit(kp, (const char *)key, sizeof(key));
	chmod(kp, 0600);
	ok(audit_key_load(kp, k, &klen, err, sizeof(err)) == 0 &&
	    klen == sizeof(key) && memcmp(k, key, klen) == 0, "a 0600 key file "
	    "loads");
	chmod(kp, 0640);
	ok(audit_key_load(kp, k, &klen, err, sizeof(err)) == -1 &&
	    strstr(err, "permissions") != NULL, "a group-readable key file is "
	    "refused: %s", err);
	spit(kp, "", 0);
	chmod(kp, 0600);
	ok(audit_key_load(kp, k, &klen, err, sizeof(err)) == -1,
	    "an empty key file is refused");
	{
		char big[AUDIT_KEY_MAX + 1];

		memset(big, 'k', sizeof(big));
		spit(kp, big, sizeof(big));
	}
	ok(audit_key_load(kp, k, &klen, err, sizeof(err)) == -1,
	    "a key file over %d bytes is refused", AUDIT_KEY_MAX);
}

/*
 * The writer builds its lines by hand: they must be the very bytes jansson's
 * json_dumps (COMPACT, PRESERVE_ORDER, ENSURE_ASCII) gives for the same object, so
 * each line is parsed, its "hash" dropped, dumped again and compared with the body.
 */
static void
test_jansson_bytes(void)
{
	static const char *const inj[] = { "tok\u00e9\x01", "b", NULL };
	char p[512], err[512], path[1100], big[3000], *buf, *line, *nl, *d, *hs;
	struct audit_record r = AUDIT_RECORD_INIT;
	struct audit_kv kv[3];
	struct audit_log *log;
	json_t *o;
	size_t len, i;
	int c, n = 0, same = 0;

	tpath(p, sizeof(p), "bytes.jsonl");
	if ((log = audit_open(p, AUDIT_FSYNC_NEVER, err, sizeof(err))) == NULL)
		bail("%s", err);
	for (c = 1; c < 256; c++)
		path[c - 1] = (char)c;
	/* 2-, 3- and 4-byte UTF-8, a bidi override, DEL, a lone continuation */
	snprintf(path + 255, sizeof(path) - 255, "\xc3\xa9\xe2\x80\xae\xf0\x9f\x98\x80"
	    "\x7f\x80\xed\xa0\x80/\\\"end");
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	for (i = 0; i < 8; i++)
		memcpy(big + 250 + i * 4, "\xf0\x9f\x98\x80", 4);
	r.ar_event = AUDIT_EV_REQUEST;
	r.ar_sandbox = "demo";
	r.ar_src = "10.0.0.2:1234";
	r.ar_dst = "api.test:443";
	r.ar_tls = "inspect";
	r.ar_method = "GET";
	r.ar_path = path;
	r.ar_status = 200;
	r.ar_decision = "allow";
	r.ar_rule = big;		/* cut at AUDIT_STR_MAX, mid-emoji */
	r.ar_reason = "ok\t\x1b[0m";
	r.ar_would_deny = 1;
	r.ar_inject = inj;
	r.ar_bytes_up = 0;
	r.ar_bytes_down = 123456789012LL;
	r.ar_ms = 7;
	kv[0] = (struct audit_kv){ .ak_key = "secret", .ak_str = big };
	kv[1] = (struct audit_kv){ .ak_key = "n", .ak_num = -5 };
	kv[2] = (struct audit_kv){ .ak_key = "x_1", .ak_str = "" };
	r.ar_extra = kv;
	r.ar_nextra = 3;
	if (audit_write(log, &r) != 0)
		bail("audit_write");
	r = (struct audit_record)AUDIT_RECORD_INIT;	/* the fewest fields */
	r.ar_event = AUDIT_EV_DENY;
	r.ar_status = -1;
	if (audit_write(log, &r) != 0)
		bail("audit_write");
	audit_close(log);
	buf = slurp(p, &len);
	for (line = buf; (nl = strchr(line, '\n')) != NULL; line = nl + 1) {
		*nl = '\0';
		n++;
		o = json_loads(line, JSON_REJECT_DUPLICATES, NULL);
		hs = strstr(line, ",\"hash\":\"");
		if (o == NULL || hs == NULL || json_object_del(o, "hash") != 0) {
			json_decref(o);
			continue;
		}
		d = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER |
		    JSON_ENSURE_ASCII);
		if (d != NULL && strlen(d) == (size_t)(hs - line) + 1 &&
		    strncmp(d, line, (size_t)(hs - line)) == 0 &&
		    d[hs - line] == '}')
			same++;
		else
			diag("line %d: %s\n jansson: %s", n, line, d ? d : "-");
		free(d);
		json_decref(o);
	}
	free(buf);
	is_int(2, n, "two records written");
	is_int(2, same, "each line is byte for byte jansson's dump of it");
}

int
main(void)
{
	plan_lazy();
	test_fields();
	test_escaping();
	test_jansson_bytes();
	test_bounds();
	test_continuity();
	test_reopen_fd();
	test_refusals();
	test_partial_write();
	test_threads();
	test_keyed();
	return 0;
}
