/*
 * netctl/netctl_err.c: the error text shared by every file of netctl/, at the bottom
 * so that none of them calls back up into netctl.c for it.
 */
#include <sys/types.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "netctl_int.h"

void
nc_err_errno(char *err, size_t errlen, int e, const char *fmt, ...)
{
	char what[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (e == EPERM || e == EACCES)
		snprintf(err, errlen, "%s: %s (this needs root, or "
		    "CAP_NET_ADMIN)", what, strerror(e));
	else
		snprintf(err, errlen, "%s: %s", what, strerror(e));
}
