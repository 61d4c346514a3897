/*
 * lib/file.c: see include/file.h.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "file.h"

int
file_read(const char *path, size_t max, char **buf, size_t *len)
{
	struct stat st;
	char *b = NULL;
	size_t got = 0, cap;
	ssize_t n;
	int fd, saved, rv = -1;

	*buf = NULL;
	*len = 0;
	/* O_NONBLOCK: a FIFO planted at the path must not hang us before fstat. */
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)) == -1)
		return -1;
	if (fstat(fd, &st) == -1)
		goto out;
	if (!S_ISREG(st.st_mode)) {
		errno = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
		goto out;
	}
	if (st.st_size < 0 || (unsigned long long)st.st_size > max) {
		errno = EFBIG;
		goto out;
	}
	/* One byte more than fstat says, to notice a file growing under us. */
	cap = (size_t)st.st_size + 1;
	if ((b = malloc(cap)) == NULL)
		goto out;
	while (got < cap) {
		if ((n = read(fd, b + got, cap - got)) == -1) {
			if (errno == EINTR)
				continue;
			goto out;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	if (got == cap) {
		errno = EFBIG;
		goto out;
	}
	b[got] = '\0';
	*buf = b;
	*len = got;
	b = NULL;	/* transferred */
	rv = 0;
 out:
	saved = errno;
	free(b);
	close(fd);
	errno = saved;
	return rv;
}

int
file_share_dir(const char *env, const char *name, char *buf, size_t len)
{
	const char *e = getenv(env);
	char exe[PATH_MAX], *slash;
	struct stat st;
	ssize_t n;

	if (e != NULL && e[0] != '\0')
		return snprintf(buf, len, "%s", e) >= (int)len ? -1 : 0;
	if ((n = readlink("/proc/self/exe", exe, sizeof(exe) - 1)) == -1)
		return -1;
	exe[n] = '\0';
	if ((slash = strrchr(exe, '/')) == NULL)
		return -1;
	*slash = '\0';
	if (snprintf(buf, len, "%s/%s", exe, name) >= (int)len)
		return -1;
	if (stat(buf, &st) == 0 && S_ISDIR(st.st_mode))
		return 0;
	return snprintf(buf, len, "%s/../share/airlock/%s", exe, name) >= (int)len ?
	    -1 : 0;
}
