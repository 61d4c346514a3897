/*
 * include/log.h: diagnostics for every part, after OpenBSD's log.c.
 * stderr in the foreground, syslog as a daemon.  Never pass a secret's value here:
 * the audit log and these messages only ever carry secret *names*.
 */
#ifndef AIRLOCK_LOG_H
#define AIRLOCK_LOG_H

#include <stdarg.h>

void	log_init(const char *progname, int foreground, int verbose);
void	log_procinit(const char *procname);
void	log_setverbose(int verbose);
int	log_getverbose(void);
void	log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	fatal(const char *fmt, ...)
	    __attribute__((format(printf, 1, 2), noreturn));
void	fatalx(const char *fmt, ...)
	    __attribute__((format(printf, 1, 2), noreturn));

#endif
