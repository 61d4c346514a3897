/*
 * tests/unit/audit_web.c: what the web view takes from a request
 * (audit/audit_web.c).  Query strings: each parameter decoded and bounded, refused
 * when unknown, repeated, of another endpoint, badly escaped or holding a control
 * byte, with the limits' own values accepted; Host headers: the listening address
 * and localhost, with its port, nothing else; static paths: plain names of the
 * web folder, nothing that could leave it.
 */
#include <stdio.h>
#include <string.h>

#include "audit.h"
#include "../tap.h"

#define ALL	(AUDIT_WEB_FILTERS | AUDIT_WEB_PAGE | AUDIT_WEB_TAIL | \
	    AUDIT_WEB_RECORD | AUDIT_WEB_SUMMARY)

static void
test_query(void)
{
	static const struct {
		const char	*q;
		unsigned int	 which;
		const char	*err;	/* NULL: accepted; else the start of the 400 */
	} cases[] = {
		{ NULL, AUDIT_WEB_FILTERS, NULL },
		{ "", AUDIT_WEB_FILTERS, NULL },
		{ "&&", AUDIT_WEB_FILTERS, NULL },
		{ "host=&sandbox=", AUDIT_WEB_FILTERS, NULL },
		{ "limit=500", AUDIT_WEB_PAGE, NULL },
		{ "limit=501", AUDIT_WEB_PAGE, "limit: a number from 1 to 500" },
		{ "limit=0", AUDIT_WEB_PAGE, "limit: a number" },
		{ "limit=1x", AUDIT_WEB_PAGE, "limit: a number" },
		{ "limit=-1", AUDIT_WEB_PAGE, "limit: a number" },
		{ "limit=%2B1", AUDIT_WEB_PAGE, "limit: a number" },
		{ "offset=1000000000000000", AUDIT_WEB_PAGE, NULL },
		{ "offset=1000000000000001", AUDIT_WEB_PAGE, "offset: a number" },
		{ "offset=99999999999999999999999", AUDIT_WEB_PAGE, "offset: a number" },
		{ "wait=25", AUDIT_WEB_TAIL, NULL },
		{ "wait=26", AUDIT_WEB_TAIL, "wait: a number from 0 to 25" },
		{ "n=1", AUDIT_WEB_PAGE, "unknown parameter 'n'" },
		{ "N=1", AUDIT_WEB_RECORD, "unknown parameter" },
		{ "nosuch=1", ALL, "unknown parameter 'nosuch'" },
		{ "no%3Csuch=1", ALL, "unknown parameter" },
		{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa=1", ALL, "unknown parameter" },
		{ "host=a&host=b", AUDIT_WEB_FILTERS, "host: given twice" },
		{ "host=a&host=", AUDIT_WEB_FILTERS, "host: given twice" },
		{ "host=%zz", AUDIT_WEB_FILTERS, "host: a bad %-escape" },
		{ "host=%4", AUDIT_WEB_FILTERS, "host: a bad %-escape" },
		{ "host=a%", AUDIT_WEB_FILTERS, "host: a bad %-escape" },
		{ "host=a%00", AUDIT_WEB_FILTERS, "host: a bad %-escape or a control" },
		{ "q=a%0Ab", AUDIT_WEB_FILTERS, "q: a bad %-escape or a control" },
		{ "q=a%7Fb", AUDIT_WEB_FILTERS, "q: a bad %-escape or a control" },
		{ "q=a\tb", AUDIT_WEB_FILTERS, "q: a bad %-escape or a control" },
		{ "decision=deny", AUDIT_WEB_FILTERS, NULL },
		{ "decision=Deny", AUDIT_WEB_FILTERS, "decision: allow or deny" },
		{ "event=exfil", AUDIT_WEB_FILTERS, NULL },
		{ "event=exfill", AUDIT_WEB_FILTERS, "event: not an event" },
		{ "order=desc", AUDIT_WEB_PAGE, NULL },
		{ "order=up", AUDIT_WEB_PAGE, "order: asc or desc" },
		{ "since=2026-11-30", AUDIT_WEB_FILTERS, NULL },
		{ "since=2026-02-30", AUDIT_WEB_FILTERS, "since: not a time" },
		{ "until=2026-11-30T12%3A00%3A00Z", AUDIT_WEB_FILTERS, NULL },
		{ "top=100", AUDIT_WEB_SUMMARY, NULL },
		{ "top=101", AUDIT_WEB_SUMMARY, "top: a number from 1 to 100" },
		{ "sandbox=demo&top=5", AUDIT_WEB_SUMMARY, NULL },
		{ "reason=name_not_allowed&q=a+b&host_part=EXAMPLE", AUDIT_WEB_FILTERS,
		  NULL },
	};
	struct audit_web_query q;
	char err[256], buf[AUDIT_WEB_QUERY_MAX + 64];
	size_t i;
	int rc;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err[0] = '\0';
		rc = audit_web_query_parse(cases[i].q, cases[i].which, &q, err,
		    sizeof(err));
		if (cases[i].err == NULL)
			ok(rc == 0, "query '%s' accepted%s%s", cases[i].q ? cases[i].q :
			    "(none)", rc ? ": " : "", rc ? err : "");
		else
			ok(rc == -1 && strncmp(err, cases[i].err,
			    strlen(cases[i].err)) == 0, "query '%s' refused: '%s'",
			    cases[i].q, err);
	}

	/* Values: decoded, bounded at 256 bytes. */
	audit_web_query_parse("host=Evil.Example&q=a+b%2Bc&since=2026-11-30&"
	    "until=2026-11-30&host_part=x", AUDIT_WEB_FILTERS, &q, err, sizeof(err));
	is_string("Evil.Example", q.awq_host, "host as given");
	is_string("a b+c", q.awq_text, "q: + a space, %%2B a plus");
	is_int(1796083200000LL - 86400000LL, q.awq_since, "since: the day's start");
	is_int(1796083200000LL - 1, q.awq_until, "until: the day's last ms");
	memset(buf, 'a', 256);
	memcpy(buf, "host=", 5);
	memset(buf + 5, 'a', 256);
	buf[5 + 256] = '\0';
	ok(audit_web_query_parse(buf, AUDIT_WEB_FILTERS, &q, err, sizeof(err)) == 0 &&
	    strlen(q.awq_host) == 256, "a value of 256 bytes: taken whole");
	strcpy(buf + 5 + 256, "a");
	ok(audit_web_query_parse(buf, AUDIT_WEB_FILTERS, &q, err, sizeof(err)) == -1 &&
	    strstr(err, "longer than 256") != NULL, "257 bytes: refused (%s)", err);
	memcpy(buf, "host=", 5);
	for (i = 0; i < 256; i++)
		memcpy(buf + 5 + 3 * i, "%41", 3);
	buf[5 + 3 * 256] = '\0';
	ok(audit_web_query_parse(buf, AUDIT_WEB_FILTERS, &q, err, sizeof(err)) == 0 &&
	    strlen(q.awq_host) == 256, "256 escaped bytes: the decoded length counts");
	memset(buf, 'x', sizeof(buf));
	buf[AUDIT_WEB_QUERY_MAX + 1] = '\0';
	ok(audit_web_query_parse(buf, ALL, &q, err, sizeof(err)) == -1 &&
	    strstr(err, "longer than 4096") != NULL, "a query over 4096 bytes: "
	    "refused");
	audit_web_query_parse("", ALL, &q, err, sizeof(err));
	ok(q.awq_since == -1 && q.awq_until == -1 && q.awq_wait == -1 &&
	    q.awq_limit == 0 && q.awq_n == 0 && !q.awq_desc, "nothing given: the "
	    "defaults");
	{
		struct audit_filter f;

		audit_web_query_parse("sandbox=demo&reason=r&host_part=x", ALL, &q, err,
		    sizeof(err));
		audit_web_filter(&q, &f);
		ok(f.af_sandbox != NULL && strcmp(f.af_sandbox, "demo") == 0 &&
		    f.af_reason != NULL && f.af_host_part != NULL &&
		    f.af_host == NULL && f.af_event == NULL && f.af_text == NULL &&
		    f.af_since == -1, "the filter: what was given, NULL for the rest");
	}
}

static void
test_host(void)
{
	static const struct {
		const char	*host;
		const char	*addr;
		int		 v6;
		unsigned int	 port;
		int		 want;
	} cases[] = {
		{ "127.0.0.1:9346", "127.0.0.1", 0, 9346, 1 },
		{ "localhost:9346", "127.0.0.1", 0, 9346, 1 },
		{ "LOCALHOST:9346", "127.0.0.1", 0, 9346, 1 },
		{ "[::1]:9346", "::1", 1, 9346, 1 },
		{ "localhost:9346", "::1", 1, 9346, 1 },
		{ "127.0.0.1", "127.0.0.1", 0, 80, 1 },
		{ "localhost", "127.0.0.1", 0, 80, 1 },
		{ "127.0.0.1:80", "127.0.0.1", 0, 80, 1 },
		/* refused */
		{ "127.0.0.1", "127.0.0.1", 0, 9346, 0 },
		{ "127.0.0.1:9347", "127.0.0.1", 0, 9346, 0 },
		{ "127.0.0.1:09346", "127.0.0.1", 0, 9346, 0 },
		{ "127.0.0.1:9346 ", "127.0.0.1", 0, 9346, 0 },
		{ "127.0.0.2:9346", "127.0.0.1", 0, 9346, 0 },
		{ "evil.example:9346", "127.0.0.1", 0, 9346, 0 },
		{ "localhost.:9346", "127.0.0.1", 0, 9346, 0 },
		{ "localhost.evil.example:9346", "127.0.0.1", 0, 9346, 0 },
		{ "127.0.0.1.nip.io:9346", "127.0.0.1", 0, 9346, 0 },
		{ "127.1:9346", "127.0.0.1", 0, 9346, 0 },
		{ "2130706433:9346", "127.0.0.1", 0, 9346, 0 },
		{ "[::1]:9346", "127.0.0.1", 0, 9346, 0 },
		{ "::1:9346", "::1", 1, 9346, 0 },
		{ "[0:0::1]:9346", "::1", 1, 9346, 0 },
		{ "", "127.0.0.1", 0, 9346, 0 },
		{ ":9346", "127.0.0.1", 0, 9346, 0 },
		{ NULL, "127.0.0.1", 0, 9346, 0 },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		is_int(cases[i].want, audit_web_host_ok(cases[i].host, cases[i].addr,
		    cases[i].v6, cases[i].port), "Host '%s' for %s port %u: %s",
		    cases[i].host ? cases[i].host : "(none)", cases[i].addr,
		    cases[i].port, cases[i].want ? "accepted" : "refused");
}

static void
test_static(void)
{
	static const struct {
		const char	*path;
		const char	*name;	/* NULL: refused */
		const char	*type;
	} cases[] = {
		{ "/", "index.html", "text/html; charset=utf-8" },
		{ "/index.html", "index.html", "text/html; charset=utf-8" },
		{ "/app.js", "app.js", "text/javascript; charset=utf-8" },
		{ "/style.css", "style.css", "text/css; charset=utf-8" },
		{ "/shot-1_a.png", "shot-1_a.png", "image/png" },
		{ "", NULL, NULL },
		{ "index.html", NULL, NULL },
		{ "/..", NULL, NULL },
		{ "/../etc/passwd", NULL, NULL },
		{ "/a/../index.html", NULL, NULL },
		{ "/a..js", NULL, NULL },
		{ "/.htaccess.css", NULL, NULL },
		{ "/-x.js", NULL, NULL },
		{ "/%2e%2e/x.js", NULL, NULL },
		{ "/index.html%00.js", NULL, NULL },
		{ "//etc/passwd", NULL, NULL },
		{ "/App.js", NULL, NULL },
		{ "/app.js/", NULL, NULL },
		{ "/app", NULL, NULL },
		{ "/app.svg", NULL, NULL },
		{ "/app.json", NULL, NULL },
		{ "/a b.js", NULL, NULL },
		{ "/a\\b.js", NULL, NULL },
		{ "/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.js",
		  NULL, NULL },		/* 65 bytes */
		{ "/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.js",
		  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.js",
		  "text/javascript; charset=utf-8" },	/* 64 */
		{ NULL, NULL, NULL },
	};
	char name[65];
	const char *type;
	size_t i;
	int rc;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		type = NULL;
		rc = audit_web_static(cases[i].path, name, sizeof(name), &type);
		if (cases[i].name == NULL)
			ok(rc == -1, "path '%s' refused", cases[i].path ?
			    cases[i].path : "(none)");
		else
			ok(rc == 0 && strcmp(name, cases[i].name) == 0 && type != NULL &&
			    strcmp(type, cases[i].type) == 0, "path '%s' is %s (%s)",
			    cases[i].path, cases[i].name, cases[i].type);
	}
	ok(audit_web_static("/app.js", name, 64, &type) == -1,
	    "a name buffer under 65 bytes: refused");
}

int
main(void)
{
	plan_lazy();
	test_query();
	test_host();
	test_static();
	return tap_failures() != 0;
}
