/*
 * tests/unit/audit_index.c: the index of airlock audit serve (audit/audit_index.c)
 * on logs written by the real writer.  Filters give what audit query's would
 * (counted by the test from what it wrote), a record comes back as its exact line;
 * an append is read incrementally (no rereading), a line still being written waits
 * for its newline; an edit in place, a truncation, a rotation and a file that goes
 * missing are each seen (read again), with the chain's verdict the verifier's: the
 * first bad line named, a keyed log only with its key.  The summary has the counts
 * of audit summary, the top hosts and the exfil records.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "audit.h"
#include "audit_test.h"

#define NREC	300	/* records of the first log */

/* What the test wrote, to compare the index's answers with. */
static int n_demo, n_deny, n_evil, n_exfil_demo, n_text;

static void
write_log(const char *path, int from, int n)
{
	struct audit_log *log;
	char err[512], dst[128], path_s[64];
	int i;

	if ((log = audit_open(path, AUDIT_FSYNC_NEVER, err, sizeof(err))) == NULL)
		bail("audit_open: %s", err);
	for (i = from; i < from + n; i++) {
		struct audit_record r = AUDIT_RECORD_INIT;
		struct audit_kv kv[2];

		r.ar_ts_ms = 1796040000000LL + (long long)i * 1000;
		r.ar_sandbox = i % 3 == 0 ? "other" : "demo";
		if (i % 3 != 0)
			n_demo++;
		snprintf(path_s, sizeof(path_s), "/p/%d", i);
		r.ar_path = path_s;
		if (i % 10 == 7) {
			r.ar_event = AUDIT_EV_DENY;
			r.ar_decision = "deny";
			r.ar_reason = "name_not_allowed";
			r.ar_dst = "Evil.Example.NET:443";
			n_deny++;
			n_evil++;
		} else if (i % 50 == 11) {
			r.ar_event = AUDIT_EV_EXFIL;
			r.ar_decision = "deny";
			r.ar_reason = "placeholder_in_body";
			r.ar_dst = "paste.example.net:443";
			kv[0] = (struct audit_kv){ "secret", "github_token", 0 };
			kv[1] = (struct audit_kv){ "where", "body", 0 };
			r.ar_extra = kv;
			r.ar_nextra = 2;
			n_deny++;
			if (i % 3 != 0)
				n_exfil_demo++;
		} else {
			snprintf(dst, sizeof(dst), "h%d.example.com:443", i % 7);
			r.ar_event = AUDIT_EV_CONNECT;
			r.ar_decision = "allow";
			r.ar_dst = dst;
		}
		if (i % 100 == 42) {
			r.ar_path = "/needle-In-the-haystack";
			n_text++;
		}
		if (audit_write(log, &r) == -1)
			bail("audit_write");
	}
	audit_close(log);
}

static size_t
find(struct audit_index *ix, const struct audit_filter *f, long long after,
    long long *first)
{
	long long *v;
	size_t n;

	if (audit_index_find(ix, f, after, &v, &n) == -1)
		bail("audit_index_find");
	if (first != NULL)
		*first = n > 0 ? v[0] : 0;
	free(v);
	return n;
}

static void
update(struct audit_index *ix, int *changed)
{
	char err[256];

	if (audit_index_update(ix, changed, err, sizeof(err)) == -1)
		bail("audit_index_update: %s", err);
}

/* The 1-based line n of the file, NUL-terminated (static buffer). */
static const char *
file_line(const char *path, long long n)
{
	static char line[4096];
	FILE *f = fopen(path, "r");
	long long i;

	if (f == NULL)
		bail("fopen %s", path);
	for (i = 0; i < n; i++)
		if (fgets(line, sizeof(line), f) == NULL)
			bail("line %lld of %s", n, path);
	fclose(f);
	line[strcspn(line, "\n")] = '\0';
	return line;
}

static void
test_filters(const char *log, struct audit_index *ix)
{
	struct audit_filter f = AUDIT_FILTER_INIT;
	struct audit_index_rec rec;
	long long first;

	is_int(NREC, (long long)find(ix, &f, 0, NULL), "no filter: every record");
	f.af_sandbox = "demo";
	is_int(n_demo, (long long)find(ix, &f, 0, NULL), "sandbox demo");
	f = (struct audit_filter)AUDIT_FILTER_INIT;
	f.af_decision = "deny";
	is_int(n_deny, (long long)find(ix, &f, 0, NULL), "decision deny");
	f.af_reason = "name_not_allowed";
	is_int(n_evil, (long long)find(ix, &f, 0, NULL), "... and a reason");
	f = (struct audit_filter)AUDIT_FILTER_INIT;
	f.af_host = "evil.example.net";
	is_int(n_evil, (long long)find(ix, &f, 0, &first), "host, exact (case and "
	    "port ignored)");
	is_int(8, first, "... the first is record 8");
	f.af_host = "evil.example";
	is_int(0, (long long)find(ix, &f, 0, NULL), "host exact: no prefix match");
	f.af_host = NULL;
	f.af_host_part = "IL.EXAMP";
	is_int(n_evil, (long long)find(ix, &f, 0, NULL), "host part, any case");
	f = (struct audit_filter)AUDIT_FILTER_INIT;
	f.af_event = "exfil";
	is_int(n_deny - n_evil, (long long)find(ix, &f, 0, NULL), "event exfil");
	f = (struct audit_filter)AUDIT_FILTER_INIT;
	f.af_text = "NEEDLE-in";
	is_int(n_text, (long long)find(ix, &f, 0, &first), "free text, any case");
	is_int(43, first, "... first at record 43");
	is_int(n_text - 1, (long long)find(ix, &f, 43, NULL), "... after record 43");
	f.af_text = "no such text anywhere";
	is_int(0, (long long)find(ix, &f, 0, NULL), "free text that is nowhere");
	f = (struct audit_filter)AUDIT_FILTER_INIT;
	f.af_since = 1796040000000LL + 10 * 1000;
	f.af_until = 1796040000000LL + 19 * 1000;
	is_int(10, (long long)find(ix, &f, 0, &first), "since/until, inclusive");
	is_int(11, first, "... from record 11");
	f = (struct audit_filter)AUDIT_FILTER_INIT;
	is_int(NREC - 290, (long long)find(ix, &f, 290, NULL), "after 290");
	is_int(0, (long long)find(ix, &f, NREC + 5, NULL), "after the end: none");

	if (audit_index_get(ix, 77, &rec) == -1)
		bail("audit_index_get");
	is_string(file_line(log, 77), rec.air_text, "record 77 is line 77 as written");
	is_int(77, rec.air_line, "... its line");
	ok(strcmp(rec.air_path, log) == 0 && rec.air_verified, "... its file, "
	    "verified");
	audit_index_rec_free(&rec);
	ok(audit_index_get(ix, 0, &rec) == -1 && errno == ENOENT &&
	    audit_index_get(ix, NREC + 1, &rec) == -1, "records 0 and N+1: none");
	ok(audit_index_get(ix, NREC, &rec) == 0, "record N");
	audit_index_rec_free(&rec);
}

static void
test_summary(struct audit_index *ix)
{
	json_t *j, *demo = NULL, *sb, *denied;
	char *text;
	size_t i;

	if ((text = audit_index_summary(ix, NULL, 3, 2)) == NULL)
		bail("audit_index_summary");
	if ((j = json_loads(text, 0, NULL)) == NULL)
		bail("summary is not JSON: %s", text);
	free(text);
	is_int(NREC, json_integer_value(json_object_get(j, "records")),
	    "summary: every record");
	json_array_foreach(json_object_get(j, "sandboxes"), i, sb)
		if (strcmp(json_string_value(json_object_get(sb, "sandbox")),
		    "demo") == 0)
			demo = sb;
	is_int(2, (long long)json_array_size(json_object_get(j, "sandboxes")),
	    "... two sandboxes");
	if (!ok(demo != NULL, "... demo's"))
		goto out;
	is_int(n_demo, json_integer_value(json_object_get(demo, "records")),
	    "... its records");
	is_int(3, (long long)json_array_size(json_object_get(demo, "allowed")),
	    "... its allowed hosts cut to the top 3");
	is_int(7, json_integer_value(json_object_get(demo, "allowed_hosts")),
	    "... of 7");
	denied = json_array_get(json_object_get(demo, "denied"), 0);
	is_string("evil.example.net", json_string_value(json_object_get(denied,
	    "host")), "... the most denied host first");
	is_int(n_exfil_demo, json_integer_value(json_object_get(demo, "exfil")),
	    "... its exfil records counted");
	is_int(2, (long long)json_array_size(json_object_get(demo, "exfil_recent")),
	    "... the last 2 listed");
	is_string("github_token", json_string_value(json_object_get(
	    json_array_get(json_object_get(demo, "exfil_recent"), 0), "secret")),
	    "... with the secret's name");
 out:
	json_decref(j);
	if ((text = audit_index_summary(ix, "other", 3, 2)) == NULL)
		bail("audit_index_summary");
	j = json_loads(text, 0, NULL);
	free(text);
	is_int(1, (long long)json_array_size(json_object_get(j, "sandboxes")),
	    "summary of one sandbox");
	json_decref(j);
}

static void
append(const char *path, const char *bytes)
{
	int fd = open(path, O_WRONLY | O_APPEND);

	if (fd == -1 || write(fd, bytes, strlen(bytes)) != (ssize_t)strlen(bytes))
		bail("append %s", path);
	close(fd);
}

int
main(void)
{
	char p1[512], p2[600], p3[512], pk[600], why[256];
	struct audit_index_status st;
	struct audit_index *ix;
	struct audit_filter f = AUDIT_FILTER_INIT;
	unsigned char key[32];
	char *paths[2], *text, *buf;
	size_t len;
	long long recs;
	int changed, err;
	FILE *fp;

	plan_lazy();
	tpath(p1, sizeof(p1), "audit.jsonl");
	write_log(p1, 0, NREC);
	paths[0] = p1;
	if ((ix = audit_index_new(paths, 1, NULL, 0)) == NULL)
		bail("audit_index_new");
	update(ix, &changed);
	audit_index_status(ix, &st);
	ok(changed && st.ais_state == AUDIT_INDEX_OK && st.ais_records == NREC,
	    "a log of %d records: indexed, chain ok", NREC);
	ok(st.ais_first_seq == 1 && st.ais_last_seq == NREC &&
	    strcmp(st.ais_first_prev, AUDIT_ZERO_HASH) == 0, "... seq 1..%d, from "
	    "the chain's start", NREC);
	is_string(audit_index_file(ix, 0, &recs, &err), p1, "... its file");
	is_int(NREC, recs, "... with its records");
	update(ix, &changed);
	is_int(0, changed, "looked at again without a change: nothing changed");
	test_filters(p1, ix);
	test_summary(ix);

	/* An append is read on its own. */
	write_log(p1, NREC, 10);
	update(ix, &changed);
	audit_index_status(ix, &st);
	ok(changed && st.ais_records == NREC + 10 && st.ais_state == AUDIT_INDEX_OK &&
	    st.ais_last_seq == NREC + 10, "10 records appended: read, chain ok");
	is_int(0, st.ais_rereads, "... without reading the file again");
	is_int(10, (long long)find(ix, &f, NREC, NULL), "... found after record %d",
	    NREC);
	/* A line being written waits for its newline; a bad one is then named. */
	append(p1, "{\"ts\":\"2026-");
	update(ix, &changed);
	audit_index_status(ix, &st);
	ok(st.ais_records == NREC + 10 && st.ais_pending == 12 &&
	    st.ais_state == AUDIT_INDEX_OK, "a last line without its newline: "
	    "pending (12 bytes), not a record, chain still ok");
	append(p1, "\n");
	update(ix, &changed);
	audit_index_status(ix, &st);
	ok(changed && st.ais_records == NREC + 11 && st.ais_pending == 0,
	    "... its newline: a record");
	ok(st.ais_state == AUDIT_INDEX_TAMPERED && st.ais_bad_line == NREC + 11 &&
	    st.ais_bad_n == NREC + 11, "... that breaks the chain at line %d (%s)",
	    NREC + 11, st.ais_why);
	is_int(0, st.ais_rereads, "... still without rereading");

	/* An edit in place (same size): read again, the first bad line named. */
	tpath(p2, sizeof(p2), "edit.jsonl");
	write_log(p2, 0, 50);
	paths[0] = p2;
	audit_index_free(ix);
	if ((ix = audit_index_new(paths, 1, NULL, 0)) == NULL)
		bail("audit_index_new");
	update(ix, &changed);
	buf = slurp(p2, &len);
	text = strstr(buf, "\"seq\":20,");
	if (text == NULL)
		bail("no seq 20");
	text[7] = '1';		/* "seq":21 on line 20 */
	if ((fp = fopen(p2, "r+")) == NULL || fwrite(buf, 1, len, fp) != len ||
	    fclose(fp) != 0)
		bail("rewrite");
	free(buf);
	/*
	 * The kernel stamps mtime from a clock of a few ms steps: an edit within the
	 * step of the look before it would keep the stamp (README says so).  Move it.
	 */
	{
		struct stat sb;
		struct timespec ts[2];

		stat(p2, &sb);
		ts[0] = sb.st_atim;
		ts[1] = sb.st_mtim;
		ts[1].tv_sec++;
		utimensat(AT_FDCWD, p2, ts, 0);
	}
	update(ix, &changed);
	audit_index_status(ix, &st);
	ok(changed && st.ais_state == AUDIT_INDEX_TAMPERED && st.ais_bad_line == 20,
	    "an edit in place of line 20: tampered at line 20 (%s)", st.ais_why);
	ok(strstr(st.ais_why, "hash mismatch") != NULL, "... a hash mismatch, as "
	    "audit verify says (%lld)", verify_bad_line(p2, why, sizeof(why)));
	is_int(1, st.ais_rereads, "... seen by reading it again");
	is_int(50, st.ais_records, "... every record still listed");
	{
		struct audit_index_rec a, b;

		ok(audit_index_get(ix, 19, &a) == 0 && audit_index_get(ix, 20, &b) == 0,
		    "records 19 and 20");
		ok(a.air_verified && !b.air_verified, "... 19 verified, 20 not");
		audit_index_rec_free(&a);
		audit_index_rec_free(&b);
	}
	/* Cut shorter: read again (the bad line went with it). */
	if (truncate(p2, 1000) == -1)
		bail("truncate");
	update(ix, &changed);
	audit_index_status(ix, &st);
	ok(changed && st.ais_rereads == 2 && st.ais_records < 10 &&
	    st.ais_pending > 0 && st.ais_state == AUDIT_INDEX_OK,
	    "truncated mid-line: read again, %lld records, the cut line pending",
	    st.ais_records);
	audit_index_free(ix);

	/* Rotation: the path names a new file that continues the chain. */
	tpath(p3, sizeof(p3), "rot.jsonl");
	write_log(p3, 0, 20);
	paths[0] = p3;
	if ((ix = audit_index_new(paths, 1, NULL, 0)) == NULL)
		bail("audit_index_new");
	update(ix, &changed);
	snprintf(p2, sizeof(p2), "%s.1", p3);
	if (rename(p3, p2) == -1)
		bail("rename");
	write_log(p3, 20, 5);
	update(ix, &changed);
	audit_index_status(ix, &st);
	ok(changed && st.ais_records == 5 && st.ais_state == AUDIT_INDEX_OK &&
	    st.ais_first_seq == 21 && strcmp(st.ais_first_prev, AUDIT_ZERO_HASH) != 0,
	    "rotated: the new file read from its start, seq 21.., continuing a chain");
	audit_index_free(ix);
	paths[0] = p2;
	paths[1] = p3;
	if ((ix = audit_index_new(paths, 2, NULL, 0)) == NULL)
		bail("audit_index_new");
	update(ix, &changed);
	audit_index_status(ix, &st);
	ok(st.ais_records == 25 && st.ais_state == AUDIT_INDEX_OK &&
	    st.ais_first_seq == 1 && st.ais_last_seq == 25, "both files in rotation "
	    "order: one chain, seq 1..25");
	{
		struct audit_index_rec r;

		audit_index_get(ix, 22, &r);
		ok(strcmp(r.air_path, p3) == 0 && r.air_line == 2, "record 22 is "
		    "line 2 of the newer file");
		audit_index_rec_free(&r);
	}
	/* The newer file goes missing, then comes back. */
	snprintf(pk, sizeof(pk), "%s.moved", p3);
	rename(p3, pk);
	update(ix, &changed);
	audit_index_status(ix, &st);
	ok(changed && st.ais_state == AUDIT_INDEX_UNREADABLE &&
	    strcmp(st.ais_bad_path, p3) == 0, "a file gone: unreadable, named (%s)",
	    st.ais_why);
	update(ix, &changed);
	is_int(0, changed, "... no change while it stays gone");
	rename(pk, p3);
	update(ix, &changed);
	audit_index_status(ix, &st);
	ok(changed && st.ais_state == AUDIT_INDEX_OK && st.ais_records == 25,
	    "... back: ok again");
	audit_index_free(ix);
	paths[0] = p3;
	paths[1] = p2;
	if ((ix = audit_index_new(paths, 2, NULL, 0)) == NULL)
		bail("audit_index_new");
	update(ix, &changed);
	audit_index_status(ix, &st);
	ok(st.ais_state == AUDIT_INDEX_TAMPERED && strcmp(st.ais_bad_path, p2) == 0 &&
	    st.ais_bad_line == 1, "the files in the wrong order: tampered at the "
	    "older one's line 1 (%s)", st.ais_why);
	audit_index_free(ix);

	/* A keyed log verifies with its key only. */
	tpath(pk, sizeof(pk), "key");
	memset(key, 7, sizeof(key));
	spit(pk, (const char *)key, sizeof(key));
	chmod(pk, 0600);
	{
		struct audit_log *log;
		struct audit_record r = AUDIT_RECORD_INIT;
		char e[256];

		tpath(p2, sizeof(p2), "keyed.jsonl");
		if ((log = audit_open_keyed(p2, AUDIT_FSYNC_NEVER, key, sizeof(key),
		    e, sizeof(e))) == NULL)
			bail("audit_open_keyed: %s", e);
		r.ar_event = AUDIT_EV_SANDBOX;
		r.ar_sandbox = "demo";
		audit_write(log, &r);
		audit_close(log);
	}
	paths[0] = p2;
	ix = audit_index_new(paths, 1, key, sizeof(key));
	update(ix, &changed);
	audit_index_status(ix, &st);
	is_int(AUDIT_INDEX_OK, st.ais_state, "a keyed log with its key: ok");
	audit_index_free(ix);
	ix = audit_index_new(paths, 1, NULL, 0);
	update(ix, &changed);
	audit_index_status(ix, &st);
	ok(st.ais_state == AUDIT_INDEX_TAMPERED && strstr(st.ais_why, "--key-file"),
	    "... without it: does not verify (%s)", st.ais_why);
	audit_index_free(ix);

	/* An empty file, a missing one, a directory. */
	tpath(p2, sizeof(p2), "empty.jsonl");
	spit(p2, "", 0);
	ix = audit_index_new(paths, 1, NULL, 0);
	update(ix, &changed);
	audit_index_status(ix, &st);
	is_int(AUDIT_INDEX_EMPTY, st.ais_state, "an empty log: empty, not ok");
	audit_index_free(ix);
	paths[0] = (char *)(uintptr_t)tap_tmpdir();
	ix = audit_index_new(paths, 1, NULL, 0);
	update(ix, &changed);
	audit_index_status(ix, &st);
	ok(st.ais_state == AUDIT_INDEX_UNREADABLE && strstr(st.ais_why, "directory"),
	    "a directory: unreadable (%s)", st.ais_why);
	audit_index_free(ix);
	return tap_failures() != 0;
}
