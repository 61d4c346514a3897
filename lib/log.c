/*
 * lib/log.c: see include/log.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "log.h"

static const char *log_prog = "airlock";
static const char *log_proc;
static int log_foreground = 1;
static int log_verbose;

void
log_init(const char *progname, int foreground, int verbose)
{
	log_prog = progname;
	log_foreground = foreground;
	log_verbose = verbose;
	if (!foreground)
		openlog(progname, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void
log_procinit(const char *procname)
{
	log_proc = procname;
}

void
log_setverbose(int verbose)
{
	log_verbose = verbose;
}

int
log_getverbose(void)
{
	return log_verbose;
}

static void
log_vwrite(int pri, const char *fmt, va_list ap, const char *suffix)
{
	char msg[2048];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (log_foreground) {
		if (log_proc != NULL)
			fprintf(stderr, "%s[%s]: %s%s%s\n", log_prog, log_proc,
			    msg, suffix ? ": " : "", suffix ? suffix : "");
		else
			fprintf(stderr, "%s: %s%s%s\n", log_prog, msg,
			    suffix ? ": " : "", suffix ? suffix : "");
	} else
		syslog(pri, "%s%s%s", msg, suffix ? ": " : "",
		    suffix ? suffix : "");
}

void
log_warn(const char *fmt, ...)
{
	va_list ap;
	int saved = errno;

	va_start(ap, fmt);
	log_vwrite(LOG_ERR, fmt, ap, strerror(saved));
	va_end(ap);
	errno = saved;
}

void
log_warnx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vwrite(LOG_ERR, fmt, ap, NULL);
	va_end(ap);
}

void
log_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vwrite(LOG_INFO, fmt, ap, NULL);
	va_end(ap);
}

void
log_debug(const char *fmt, ...)
{
	va_list ap;

	if (log_verbose < 1)
		return;
	va_start(ap, fmt);
	log_vwrite(LOG_DEBUG, fmt, ap, NULL);
	va_end(ap);
}

void
fatal(const char *fmt, ...)
{
	va_list ap;
	int saved = errno;

	va_start(ap, fmt);
	log_vwrite(LOG_CRIT, fmt, ap, strerror(saved));
	va_end(ap);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vwrite(LOG_CRIT, fmt, ap, NULL);
	va_end(ap);
	exit(1);
}
