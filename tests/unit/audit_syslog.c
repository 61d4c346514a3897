/*
 * tests/unit/audit_syslog.c: the syslog framing of audit lines (audit_syslog.c)
 * and the writer's tap: the header of RFC 5424 with the record's ts, event and
 * severity, octet counting that counts exactly the bytes after "LEN ", names that
 * are not valid replaced by "-", and the tap seeing each record's line exactly as
 * the file holds it (without its newline), in the chain's order, checkpoints too.
 */
#include "audit_test.h"

struct tap_seen {
	int		 n;
	long long	 seq[16];
	enum audit_event ev[16];
	char		*line[16];
};

static void
tap(void *arg, enum audit_event ev, long long seq, long long ts_ms,
    const char *line, size_t len)
{
	struct tap_seen *ts = arg;

	if (ts->n >= 16)
		return;
	ts->seq[ts->n] = seq;
	ts->ev[ts->n] = ev;
	ts->line[ts->n] = strndup(line, len);
	ts->n++;
}

static void
test_header(void)
{
	char buf[AUDIT_SYSLOG_HDR_MAX];
	size_t n;
	/* 2026-12-02T16:42:47.123Z */
	long long ts = 1796229767123LL;

	n = audit_syslog_header(buf, sizeof(buf), 16, AUDIT_EV_CONNECT, ts, "gw1",
	    "airlock", 4242, 10, 0);
	is_string("<134>1 2026-12-02T16:42:47.123Z gw1 airlock 4242 connect - ", buf,
	    "datagram header: PRI local0.info, ts, host, app, pid, event");
	is_int((long long)strlen(buf), (long long)n, "its length is returned");
	n = audit_syslog_header(buf, sizeof(buf), 16, AUDIT_EV_DENY, ts, "gw1",
	    "airlock", 4242, 10, 1);
	is_string("66 <133>1 2026-12-02T16:42:47.123Z gw1 airlock 4242 deny - ", buf,
	    "octet counting: LEN counts the header after it and the 10 bytes of MSG; "
	    "a denial is notice");
	ok(strtol(buf, NULL, 10) == (long)(n - strlen("66 ") + 10),
	    "LEN is exact");
	audit_syslog_header(buf, sizeof(buf), 4, AUDIT_EV_ALARM, ts, "gw 1", "",
	    0, 1, 0);
	is_string("<36>1 2026-12-02T16:42:47.123Z - - - alarm - ", buf,
	    "auth.warning for an alarm; a host with a space, an empty app, no pid: "
	    "\"-\"");
	audit_syslog_header(buf, sizeof(buf), 23, AUDIT_EV_SINK_OVERFLOW, ts, "h",
	    "a", 1, 1, 0);
	is_string("<189>1 2026-12-02T16:42:47.123Z h a 1 sink_overflow - ", buf,
	    "local7.notice for sink_overflow");
	is_int(0, (long long)audit_syslog_header(buf, sizeof(buf), 24,
	    AUDIT_EV_DNS, ts, "h", "a", 1, 1, 0), "facility 24 refused");
	is_int(0, (long long)audit_syslog_header(buf, sizeof(buf), 1,
	    (enum audit_event)99, ts, "h", "a", 1, 1, 0), "an unknown event refused");
	is_int(0, (long long)audit_syslog_header(buf, sizeof(buf), 1, AUDIT_EV_DNS,
	    -1, "h", "a", 1, 1, 0), "a negative ts refused");
	is_int(0, (long long)audit_syslog_header(buf, 20, 1, AUDIT_EV_DNS, ts, "h",
	    "a", 1, 1, 0), "a buffer too short refused");
	ok(audit_syslog_name_is_valid("airlock", 48) &&
	    !audit_syslog_name_is_valid("air lock", 48) &&
	    !audit_syslog_name_is_valid("", 48) &&
	    !audit_syslog_name_is_valid("abc", 2) &&
	    !audit_syslog_name_is_valid("a\x7f", 48), "names: printable ASCII, no "
	    "space, 1..max");
}

static void
test_tap(void)
{
	struct audit_record r = AUDIT_RECORD_INIT;
	struct tap_seen seen = { 0 };
	char path[512], err[256], *file, *p, *nl;
	struct audit_log *log;
	size_t len;
	long long bad = 0;
	int i, same = 1;

	snprintf(path, sizeof(path), "%s/tap.jsonl", tap_tmpdir());
	if ((log = audit_open(path, AUDIT_FSYNC_NEVER, err, sizeof(err))) == NULL)
		bail("%s", err);
	r.ar_event = AUDIT_EV_CONNECT;
	r.ar_sandbox = "a";
	r.ar_decision = "allow";
	ok(audit_write(log, &r) == 0, "a record before the tap");
	audit_set_tap(log, tap, &seen);
	r.ar_path = "/\"quoted\"\n";
	ok(audit_write(log, &r) == 0 && audit_checkpoint(log, "count") == 0,
	    "a record and a checkpoint with the tap");
	r.ar_event = AUDIT_EV_SINK_OVERFLOW;
	r.ar_decision = NULL;
	ok(audit_write(log, &r) == 0, "a sink_overflow record is written");
	audit_set_tap(log, NULL, NULL);
	ok(audit_write(log, &r) == 0, "a record after the tap");
	audit_close(log);
	is_int(3, seen.n, "the tap saw the three records in between");
	ok(seen.seq[0] == 2 && seen.seq[1] == 3 && seen.seq[2] == 4 &&
	    seen.ev[0] == AUDIT_EV_CONNECT && seen.ev[1] == AUDIT_EV_CHECKPOINT &&
	    seen.ev[2] == AUDIT_EV_SINK_OVERFLOW, "in order, with seq and event");
	file = slurp(path, &len);
	p = strchr(file, '\n') + 1;
	for (i = 0; i < seen.n && i < 3; i++) {
		nl = strchr(p, '\n');
		if (nl == NULL || strlen(seen.line[i]) != (size_t)(nl - p) ||
		    memcmp(seen.line[i], p, (size_t)(nl - p)) != 0)
			same = 0;
		p = nl != NULL ? nl + 1 : p;
	}
	ok(same, "each line the tap saw is the file's line, byte for byte, "
	    "without its newline");
	ok(audit_verify(path, &bad, err, sizeof(err)) == 0,
	    "the file with a sink_overflow record verifies: %s", err);
	for (i = 0; i < seen.n; i++)
		free(seen.line[i]);
	free(file);
}

int
main(void)
{
	plan_lazy();
	test_header();
	test_tap();
	return 0;
}
