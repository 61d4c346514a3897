/*
 * audit/audit_read.c: reading audit files of any size (a bounded line reader) and
 * the timestamps of records.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "audit_int.h"

#define READER_CHUNK	(64 * 1024)

struct audit_reader {
	int		 rd_fd;
	int		 rd_close;	/* 0 for stdin */
	int		 rd_eof;
	char		*rd_buf;
	size_t		 rd_cap;
	size_t		 rd_start;	/* first unread byte */
	size_t		 rd_end;	/* end of the bytes read */
};

struct audit_reader *
audit_reader_open(const char *path)
{
	struct audit_reader *r;
	int saved;

	if ((r = calloc(1, sizeof(*r))) == NULL)
		return NULL;
	r->rd_fd = -1;
	r->rd_cap = READER_CHUNK;
	if ((r->rd_buf = malloc(r->rd_cap)) == NULL)
		goto error;
	if (strcmp(path, "-") == 0)
		r->rd_fd = STDIN_FILENO;
	else {
		if ((r->rd_fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
			goto error;
		r->rd_close = 1;
	}
	return r;
 error:
	saved = errno;
	audit_reader_close(r);
	errno = saved;
	return NULL;
}

struct audit_reader *
audit_reader_fdopen(int fd)
{
	struct audit_reader *r;

	if ((r = calloc(1, sizeof(*r))) == NULL)
		return NULL;
	r->rd_fd = fd;
	r->rd_cap = READER_CHUNK;
	if ((r->rd_buf = malloc(r->rd_cap)) == NULL) {
		free(r);
		return NULL;
	}
	return r;
}

int
audit_reader_next(struct audit_reader *r, const char **line, size_t *len,
    int *complete)
{
	char *nl, *nbuf;
	size_t ncap;
	ssize_t n;

	for (;;) {
		nl = memchr(r->rd_buf + r->rd_start, '\n', r->rd_end - r->rd_start);
		if (nl != NULL) {
			*line = r->rd_buf + r->rd_start;
			*len = (size_t)(nl - *line);
			*complete = 1;
			r->rd_start += *len + 1;
			if (*len > AUDIT_LINE_MAX) {
				errno = E2BIG;
				return -1;
			}
			return 1;
		}
		if (r->rd_eof) {
			if (r->rd_start == r->rd_end)
				return 0;
			*line = r->rd_buf + r->rd_start;
			*len = r->rd_end - r->rd_start;
			*complete = 0;
			r->rd_start = r->rd_end;
			return 1;
		}
		if (r->rd_start > 0) {
			memmove(r->rd_buf, r->rd_buf + r->rd_start,
			    r->rd_end - r->rd_start);
			r->rd_end -= r->rd_start;
			r->rd_start = 0;
		}
		if (r->rd_end == r->rd_cap) {
			/* A line and its '\n' fit in AUDIT_LINE_MAX + 1. */
			if (r->rd_cap > AUDIT_LINE_MAX) {
				errno = E2BIG;
				return -1;
			}
			ncap = r->rd_cap * 2;
			if (ncap > AUDIT_LINE_MAX + 1)
				ncap = AUDIT_LINE_MAX + 1;
			if ((nbuf = realloc(r->rd_buf, ncap)) == NULL)
				return -1;
			r->rd_buf = nbuf;
			r->rd_cap = ncap;
		}
		n = read(r->rd_fd, r->rd_buf + r->rd_end, r->rd_cap - r->rd_end);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0)
			r->rd_eof = 1;
		r->rd_end += (size_t)n;
	}
}

void
audit_reader_close(struct audit_reader *r)
{
	if (r == NULL)
		return;
	if (r->rd_close && r->rd_fd != -1)
		close(r->rd_fd);
	free(r->rd_buf);
	free(r);
}

/* Reads exactly n digits at *s into *v. */
static int
time_digits(const char **s, int n, int *v)
{
	int i;

	*v = 0;
	for (i = 0; i < n; i++) {
		if ((*s)[i] < '0' || (*s)[i] > '9')
			return -1;
		*v = *v * 10 + ((*s)[i] - '0');
	}
	*s += n;
	return 0;
}

int
audit_time_parse(const char *s, int end, long long *ms)
{
	struct tm tm, chk;
	long long frac = 0, span;
	int y, mo, d, h = 0, mi = 0, sec = 0, off = 0, oh, om, ndig = 0;
	time_t t;

	if (time_digits(&s, 4, &y) == -1 || *s++ != '-' ||
	    time_digits(&s, 2, &mo) == -1 || *s++ != '-' ||
	    time_digits(&s, 2, &d) == -1)
		return -1;
	span = 86400000LL;
	if (*s == 'T' || *s == ' ') {
		s++;
		if (time_digits(&s, 2, &h) == -1 || *s++ != ':' ||
		    time_digits(&s, 2, &mi) == -1 || *s++ != ':' ||
		    time_digits(&s, 2, &sec) == -1)
			return -1;
		span = 1000;
		if (*s == '.') {
			s++;
			while (*s >= '0' && *s <= '9' && ndig < 9) {
				if (ndig < 3) {
					frac = frac * 10 + (*s - '0');
					span /= 10;
				}
				ndig++;
				s++;
			}
			if (ndig == 0)
				return -1;
			while (ndig < 3) {
				frac *= 10;
				ndig++;
			}
		}
		if (*s == 'Z')
			s++;
		else if (*s == '+' || *s == '-') {
			int sign = *s++ == '-' ? -1 : 1;

			if (time_digits(&s, 2, &oh) == -1 || *s++ != ':' ||
			    time_digits(&s, 2, &om) == -1 || oh > 23 || om > 59)
				return -1;
			off = sign * (oh * 3600 + om * 60);
		}
	}
	if (*s != '\0' || y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 ||
	    h > 23 || mi > 59 || sec > 59)
		return -1;
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	if ((t = timegm(&tm)) == (time_t)-1 || gmtime_r(&t, &chk) == NULL ||
	    chk.tm_mday != d)		/* 2026-02-30 */
		return -1;
	*ms = ((long long)t - off) * 1000 + frac;
	if (end)
		*ms += span - 1;
	return 0;
}

void
audit_time_format(long long ms, char *buf, size_t len)
{
	struct tm tm;
	time_t t;

	t = (time_t)(ms / 1000);
	if (ms < 0 || gmtime_r(&t, &tm) == NULL) {
		snprintf(buf, len, "1970-01-01T00:00:00.000Z");
		return;
	}
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
	    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
	    tm.tm_sec, (int)(ms % 1000));
}

int
audit_secret_read(const char *path, const char *what, int root_only, void *buf,
    size_t cap, size_t *got, char *err, size_t errlen)
{
	struct stat st;
	ssize_t n;
	int fd = -1, rv = -1;

	*got = 0;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1 ||
	    fstat(fd, &st) == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		goto out;
	}
	/* Whoever may write a signing key may sign in airlockd's name. */
	if (root_only && st.st_uid != 0 && st.st_uid != geteuid()) {
		snprintf(err, errlen, "%s: %s not owned by root (uid %u)", path, what,
		    (unsigned int)st.st_uid);
		goto out;
	}
	/* A key others can read proves nothing; one they can write, less. */
	if ((st.st_mode & 077) != 0) {
		snprintf(err, errlen, "%s: %s has group or other permissions "
		    "(mode %04o): chmod 600", path, what,
		    (unsigned int)(st.st_mode & 07777));
		goto out;
	}
	while (*got < cap) {
		if ((n = read(fd, (char *)buf + *got, cap - *got)) == -1) {
			if (errno == EINTR)
				continue;
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		*got += (size_t)n;
	}
	rv = 0;
 out:
	if (rv == -1)
		explicit_bzero(buf, cap);
	if (fd != -1)
		close(fd);
	return rv;
}

int
audit_key_load(const char *path, unsigned char key[AUDIT_KEY_MAX], size_t *len,
    char *err, size_t errlen)
{
	unsigned char buf[AUDIT_KEY_MAX + 1];
	size_t got;
	int rv = -1;

	if (audit_secret_read(path, "key file", 0, buf, sizeof(buf), &got, err,
	    errlen) == -1)
		return -1;
	if (got == 0 || got > AUDIT_KEY_MAX) {
		snprintf(err, errlen, "%s: a key is 1 to %d bytes", path,
		    AUDIT_KEY_MAX);
		goto out;
	}
	memcpy(key, buf, got);
	*len = got;
	rv = 0;
 out:
	explicit_bzero(buf, sizeof(buf));
	return rv;
}
