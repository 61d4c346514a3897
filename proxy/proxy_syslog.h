/*
 * proxy/proxy_syslog.h: the audit log's syslog sink (audit.syslog;
 * proxy_syslog.c).
 */
#ifndef AIRLOCK_PROXY_SYSLOG_H
#define AIRLOCK_PROXY_SYSLOG_H

/*
 * Before the drop and the file system's closing: the CA file, the collector's
 * name resolved.  0 (nothing to do without audit.syslog), or -1 with err.
 */
int	proxy_syslog_init(char *err, size_t errlen);
/* After daemon(), before the seccomp filter: the sink's thread and the tap. */
int	proxy_syslog_start(void);
/* At exit, before audit_close(): what is queued goes out (2 s at most). */
void	proxy_syslog_stop(void);

struct proxy_syslog_counts {
	long long	sc_sent;	/* records handed to the collector's socket */
	long long	sc_dropped;	/* records dropped (queue full, too long) */
	long long	sc_failures;	/* connections that failed or broke */
	long long	sc_queued;	/* records waiting */
	int		sc_up;		/* connected now */
};
/* The counters; -1 without audit.syslog. */
int	proxy_syslog_counts(struct proxy_syslog_counts *c);

#endif
