/*
 * audit/audit_syslog.c: the syslog framing of audit lines (include/audit.h,
 * "Syslog framing"): RFC 5424 headers, RFC 6587 octet counting.  Pure formatting;
 * airlockd's sender is proxy/proxy_syslog.c.
 */
#include <stdio.h>
#include <string.h>

#include "audit.h"
#include "audit_int.h"

int
audit_syslog_severity(enum audit_event ev)
{
	switch (ev) {
	case AUDIT_EV_ALARM:
		return 4;	/* warning */
	case AUDIT_EV_DENY:
	case AUDIT_EV_EXFIL:
	case AUDIT_EV_SINK_OVERFLOW:
		return 5;	/* notice */
	default:
		return 6;	/* informational */
	}
}

int
audit_syslog_name_is_valid(const char *s, size_t max)
{
	size_t i;

	if (s == NULL || s[0] == '\0')
		return 0;
	for (i = 0; s[i] != '\0'; i++)
		if (i >= max || (unsigned char)s[i] < 33 ||
		    (unsigned char)s[i] > 126)
			return 0;
	return 1;
}

size_t
audit_syslog_header(char *buf, size_t len, int facility, enum audit_event ev,
    long long ts_ms, const char *host, const char *app, long procid,
    size_t msglen, int octet_count)
{
	char hdr[AUDIT_SYSLOG_HDR_MAX], ts[40], pid[24];
	const char *msgid = audit_event_str(ev);
	int n, m;

	if (facility < 0 || facility > 23 || ts_ms < 0 || ts_ms > AUDIT_TS_MAX_MS ||
	    msgid == NULL)
		return 0;
	audit_time_format(ts_ms, ts, sizeof(ts));
	if (procid > 0)
		snprintf(pid, sizeof(pid), "%ld", procid);
	else
		snprintf(pid, sizeof(pid), "-");
	n = snprintf(hdr, sizeof(hdr), "<%d>1 %s %s %s %s %s - ",
	    facility * 8 + audit_syslog_severity(ev), ts,
	    audit_syslog_name_is_valid(host, 255) ? host : "-",
	    audit_syslog_name_is_valid(app, AUDIT_SYSLOG_APP_MAX) ? app : "-", pid,
	    msgid);
	if (n < 0 || (size_t)n >= sizeof(hdr))
		return 0;
	if (octet_count)
		m = snprintf(buf, len, "%zu %s", (size_t)n + msglen, hdr);
	else
		m = snprintf(buf, len, "%s", hdr);
	if (m < 0 || (size_t)m >= len)
		return 0;
	return (size_t)m;
}
