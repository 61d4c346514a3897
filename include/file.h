/*
 * include/file.h: reading a small regular file whole (configuration, policies,
 * guest files).  Implemented in lib/file.c.
 */
#ifndef AIRLOCK_FILE_H
#define AIRLOCK_FILE_H

#include <stddef.h>

/*
 * Reads the regular file at path, of at most max bytes, into *buf (NUL-terminated,
 * *len bytes before the NUL; freed by the caller).  Returns 0, or -1 with errno:
 * that of open/fstat/read/malloc, EISDIR for a directory, EINVAL for anything else
 * that is not a regular file (a FIFO is refused without blocking), EFBIG when it is
 * larger than max or grew while being read.  *buf is NULL after a failure.
 */
int	file_read(const char *path, size_t max, char **buf, size_t *len);

#endif
