/*
 * tests/unit/audit_query.c: timestamps, --host matching, audit_query() filters and
 * output, audit_summary() counts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "audit.h"
#include "audit_test.h"
#include "../tap.h"

static void
test_time(void)
{
	char buf[32];
	long long ms;

	ok(audit_time_parse("2026-11-30T12:00:00.123Z", 0, &ms) == 0 &&
	    ms == 1796040000123LL, "ts with millis");
	ok(audit_time_parse("2026-11-30T12:00:00Z", 0, &ms) == 0 &&
	    ms == 1796040000000LL, "ts without millis");
	ok(audit_time_parse("2026-11-30T12:00:00Z", 1, &ms) == 0 &&
	    ms == 1796040000999LL, "as an end: the last ms of that second");
	ok(audit_time_parse("2026-11-30T12:00:00.5Z", 1, &ms) == 0 &&
	    ms == 1796040000599LL, "tenths as an end");
	ok(audit_time_parse("2026-11-30", 0, &ms) == 0 &&
	    ms == 1796040000000LL - 12 * 3600000LL, "a date is its midnight UTC");
	ok(audit_time_parse("2026-11-30", 1, &ms) == 0 &&
	    ms == 1796040000000LL + 12 * 3600000LL - 1, "... or, as an end, its "
	    "last ms");
	ok(audit_time_parse("2026-11-30T14:00:00+02:00", 0, &ms) == 0 &&
	    ms == 1796040000000LL, "an offset");
	ok(audit_time_parse("2026-11-30T12:00:00", 0, &ms) == 0 &&
	    ms == 1796040000000LL, "no zone: UTC");
	ok(audit_time_parse("2026-11-30 12:00:00Z", 0, &ms) == 0 &&
	    ms == 1796040000000LL, "a space for the T");
	ok(audit_time_parse("2026-02-30", 0, &ms) == -1, "Feb 30 refused");
	ok(audit_time_parse("2026-11-30T24:00:00Z", 0, &ms) == -1, "hour 24 refused");
	ok(audit_time_parse("2026-11-30T12:00Z", 0, &ms) == -1, "no seconds refused");
	ok(audit_time_parse("2026-11-30T12:00:00.Z", 0, &ms) == -1,
	    "an empty fraction refused");
	ok(audit_time_parse("2026-11-30T12:00:00Zjunk", 0, &ms) == -1,
	    "trailing junk refused");
	ok(audit_time_parse("yesterday", 0, &ms) == -1, "words refused");
	ok(audit_time_parse("", 0, &ms) == -1, "empty refused");
	audit_time_format(1796040000123LL, buf, sizeof(buf));
	is_string("2026-11-30T12:00:00.123Z", buf, "audit_time_format");
}

static void
test_events(void)
{
	enum audit_event ev = AUDIT_EV_DNS;

	ok(audit_event_parse("exfil", &ev) == 0 && ev == AUDIT_EV_EXFIL,
	    "event names parse");
	ok(audit_event_parse("config", &ev) == 0 &&
	    strcmp(audit_event_str(ev), "config") == 0, "and round-trip");
	ok(audit_event_parse("Exfil", &ev) == -1, "names are exact");
	ok(audit_event_parse("", &ev) == -1, "empty refused");
	ok(audit_event_parse("alarm", &ev) == 0 && ev == AUDIT_EV_ALARM,
	    "alarm (airlock's rules were disturbed) parses");
	ok(audit_event_parse("checkpoint", &ev) == 0 && ev == AUDIT_EV_CHECKPOINT &&
	    audit_event_parse("rotate", &ev) == 0 && ev == AUDIT_EV_ROTATE,
	    "the writer's own, checkpoint and rotate, parse");
	ok(audit_event_parse("sink_overflow", &ev) == 0 &&
	    ev == AUDIT_EV_SINK_OVERFLOW, "sink_overflow (audit.syslog) parses");
	ok(audit_event_str((enum audit_event)(AUDIT_EV_SINK_OVERFLOW + 1)) == NULL &&
	    audit_event_str((enum audit_event)-1) == NULL,
	    "audit_event_str outside the enum is NULL");
}

static void
test_host(void)
{
	ok(audit_host_match("api.github.com", "api.github.com:443"), "exact");
	ok(audit_host_match("API.GitHub.com.", "api.github.com:443"),
	    "case and trailing dot ignored");
	ok(audit_host_match("api.github.com", "API.GITHUB.COM."), "host "
	    "normalised too");
	ok(!audit_host_match("github.com", "api.github.com:443"), "exact is exact");
	ok(!audit_host_match("api.github.co", "api.github.com:443"), "no prefix");
	ok(audit_host_match(".github.com", "api.github.com:443"), ".suffix: below");
	ok(audit_host_match(".github.com", "github.com:443"), ".suffix: itself");
	ok(!audit_host_match(".github.com", "evilgithub.com:443"),
	    ".suffix: on a label boundary only");
	ok(audit_host_match("*.github.com", "a.b.github.com:443"), "*.suffix: below");
	ok(!audit_host_match("*.github.com", "github.com:443"),
	    "*.suffix: not itself");
	ok(audit_host_match("2001:db8::1", "[2001:db8::1]:443"), "IPv6 in brackets");
	ok(audit_host_match("10.0.0.1", "10.0.0.1:22"), "IPv4 with a port");
	ok(!audit_host_match(".", "a.b:1"), "a lone dot matches nothing");
	ok(!audit_host_match("", "a.b:1"), "an empty pattern matches nothing");
}

static char *
run_query(const char *p, const struct audit_filter *f, int json, char **errs)
{
	char *out = NULL, *eb = NULL, err[256];
	size_t olen, elen;
	FILE *o, *e;
	char *paths[1] = { (char *)(uintptr_t)p };

	o = open_memstream(&out, &olen);
	e = open_memstream(&eb, &elen);
	if (audit_query(paths, 1, f, json, o, e, err, sizeof(err)) == -1)
		diag("audit_query: %s", err);
	fclose(o);
	fclose(e);
	*errs = eb;
	return out;
}

/* Runs audit_query and checks how many lines it printed. */
static void
query_count(const char *p, const struct audit_filter *f, int want,
    const char *what)
{
	char *out, *errs;

	out = run_query(p, f, 0, &errs);
	is_int(want, count_lines(out, strlen(out)), "%s", what);
	free(out);
	free(errs);
}

/* audit_summary's output (to free()), or NULL if it failed. */
static char *
run_summary(const char *p, int json)
{
	char *paths[1] = { (char *)(uintptr_t)p };
	char *out = NULL, *eb = NULL, err[256];
	size_t olen, elen;
	FILE *o, *e;
	int rc;

	o = open_memstream(&out, &olen);
	e = open_memstream(&eb, &elen);
	if ((rc = audit_summary(paths, 1, json, o, e, err, sizeof(err))) == -1)
		diag("audit_summary: %s", err);
	fclose(o);
	fclose(e);
	free(eb);
	if (rc == -1) {
		free(out);
		return NULL;
	}
	return out;
}

static void
test_query(void)
{
	static const char *const inject[] = { "tok", NULL };
	struct audit_filter f = AUDIT_FILTER_INIT;
	struct audit_kv qn = { "qname", "Evil.Example.", 0 };
	struct audit_log *log;
	char p[512], err[512], *out, *errs, *line;
	FILE *fp;
	int i;

	tpath(p, sizeof(p), "q.jsonl");
	if ((log = audit_open(p, AUDIT_FSYNC_NEVER, err, sizeof(err))) == NULL)
		bail("%s", err);
	for (i = 0; i < 6; i++) {
		struct audit_record r = AUDIT_RECORD_INIT;

		r.ar_ts_ms = 1796040000000LL + i * 60000LL;	/* 12:00 + i min */
		r.ar_sandbox = i < 4 ? "demo" : "other";
		r.ar_event = AUDIT_EV_REQUEST;
		r.ar_dst = "api.github.com:443";
		r.ar_decision = "allow";
		r.ar_rule = "github-api";
		r.ar_method = "GET";
		r.ar_path = "/repos/a b\x1b[31m";
		r.ar_status = 200;
		r.ar_inject = inject;
		if (i == 2) {
			r.ar_event = AUDIT_EV_DENY;
			r.ar_dst = "evil.example:443";
			r.ar_decision = "deny";
			r.ar_rule = NULL;
			r.ar_reason = "name_not_allowed";
			r.ar_status = -1;
			r.ar_method = r.ar_path = NULL;
		} else if (i == 3) {
			r.ar_event = AUDIT_EV_DNS;
			r.ar_dst = NULL;
			r.ar_decision = "deny";
			r.ar_rule = NULL;
			r.ar_reason = "name_not_allowed";
			r.ar_extra = &qn;
			r.ar_nextra = 1;
			r.ar_method = r.ar_path = NULL;
			r.ar_status = -1;
		} else if (i == 5) {
			r.ar_would_deny = 1;
			r.ar_reason = "method_not_allowed";
			r.ar_dst = "x.pythonhosted.org:443";
		}
		audit_write(log, &r);
	}
	audit_close(log);
	/* A line that is not JSON, which the read tools skip with a warning. */
	fp = fopen(p, "a");
	fputs("this is not json\n", fp);
	fclose(fp);

	out = run_query(p, &f, 0, &errs);
	is_int(6, count_lines(out, strlen(out)), "no filter: every record");
	ok(strstr(errs, "q.jsonl:7: not a JSON record") != NULL,
	    "a warning for the line that is not JSON");
	line = strstr(out, "2026-11-30T12:00:00.000Z");
	ok(line != NULL && strncmp(line, "2026-11-30T12:00:00.000Z demo request "
	    "allow api.github.com:443 github-api GET /repos/a\\x20b\\x1b[31m 200\n",
	    97) == 0, "the readable line; a space and ESC escaped");
	ok(strstr(out, "2026-11-30T12:02:00.000Z demo deny deny evil.example:443 "
	    "name_not_allowed - - -\n") != NULL, "a denial shows its reason");
	ok(strstr(out, "demo dns deny Evil.Example. name_not_allowed") != NULL,
	    "a dns record shows its qname");
	ok(strstr(out, "other request allow,would_deny x.pythonhosted.org:443 "
	    "github-api/method_not_allowed") != NULL, "report mode: would_deny, "
	    "rule/reason");
	free(out);
	free(errs);

	f.af_sandbox = "demo";
	query_count(p, &f, 4, "--sandbox demo");
	f.af_decision = "deny";
	query_count(p, &f, 2, "--sandbox demo --decision deny");
	f.af_event = "dns";
	out = run_query(p, &f, 1, &errs);
	is_int(1, count_lines(out, strlen(out)), "... --event dns");
	ok(strncmp(out, "{\"ts\":\"2026-11-30T12:03:00.000Z\",\"seq\":4,", 41) == 0,
	    "--json prints the raw line");
	free(out);
	free(errs);

	f = (struct audit_filter)AUDIT_FILTER_INIT;
	f.af_host = "evil.example";
	query_count(p, &f, 2, "--host matches dst and a dns qname");
	f.af_host = ".pythonhosted.org";
	query_count(p, &f, 1, "--host .suffix");

	f = (struct audit_filter)AUDIT_FILTER_INIT;
	audit_time_parse("2026-11-30T12:01:00Z", 0, &f.af_since);
	audit_time_parse("2026-11-30T12:03:00Z", 1, &f.af_until);
	query_count(p, &f, 3, "--since 12:01 --until 12:03: inclusive");
	audit_time_parse("2026-11-29", 1, &f.af_until);
	f.af_since = -1;
	query_count(p, &f, 0, "--until the day before: nothing");

	/* Summary. */
	{
		char *sout = run_summary(p, 1);
		json_t *j, *demo;

		ok(sout != NULL, "audit_summary --json");
		j = json_loads(sout != NULL ? sout : "", 0, NULL);
		demo = json_object_get(json_object_get(j, "sandboxes"), "demo");
		is_int(6, json_integer_value(json_object_get(j, "records")),
		    "6 records");
		is_int(2, json_integer_value(json_object_get(json_object_get(
		    json_object_get(demo, "allowed"), "api.github.com"), "count")),
		    "demo reached api.github.com twice");
		is_string("2026-11-30T12:01:00.000Z", json_string_value(
		    json_object_get(json_object_get(json_object_get(demo, "allowed"),
		    "api.github.com"), "last")), "... last seen at 12:01");
		is_int(2, json_integer_value(json_object_get(json_object_get(
		    json_object_get(demo, "denied"), "evil.example"), "count")),
		    "demo was denied evil.example twice (connect and dns)");
		is_int(2, json_integer_value(json_object_get(json_object_get(j,
		    "reasons"), "name_not_allowed")), "totals per reason");
		/* json_object_get(NULL, ...) is NULL: a missing level reads 0. */
		is_int(1, json_integer_value(json_object_get(json_object_get(
		    json_object_get(json_object_get(json_object_get(j,
		    "sandboxes"), "other"), "would_deny"), "x.pythonhosted.org"),
		    "count")),
		    "report mode hosts counted as would_deny");
		json_decref(j);
		free(sout);

		sout = run_summary(p, 0);
		ok(sout != NULL, "audit_summary text");
		ok(sout != NULL && strstr(sout, "sandbox demo: 4 records\n"
		    "  allowed (1 host):\n"
		    "    api.github.com 2 2026-11-30T12:00:00.000Z .. "
		    "2026-11-30T12:01:00.000Z\n  denied (1 host):\n"
		    "    evil.example 2 ") != NULL, "text summary per sandbox");
		ok(sout != NULL && strstr(sout, "total: 6 records, 2 sandboxes\n"
		    "reasons:\n  name_not_allowed 2\n  method_not_allowed 1\n") !=
		    NULL, "text totals, reasons by count");
		free(sout);
	}

	/* A line over 1 MiB is an error, not a skip. */
	{
		char *big = malloc(AUDIT_LINE_MAX + 2);

		memset(big, 'x', AUDIT_LINE_MAX + 1);
		big[AUDIT_LINE_MAX + 1] = '\n';
		spit(p, big, AUDIT_LINE_MAX + 2);
		free(big);
	}
	{
		char *paths[1] = { p };
		FILE *o = fopen("/dev/null", "w");

		ok(audit_query(paths, 1, &f, 0, o, o, err, sizeof(err)) == -1 &&
		    strstr(err, "1 MiB") != NULL, "query: a line over 1 MiB is an "
		    "error: %s", err);
		ok(audit_summary(paths, 1, 0, o, o, err, sizeof(err)) == -1,
		    "summary too");
		paths[0] = (char *)(uintptr_t)"/nonexistent/audit.jsonl";
		ok(audit_query(paths, 1, &f, 0, o, o, err, sizeof(err)) == -1,
		    "a missing file is an error: %s", err);
		fclose(o);
	}
}

int
main(void)
{
	plan_lazy();
	test_time();
	test_events();
	test_host();
	test_query();
	return 0;
}
