/*
 * include/file.h: reading a small regular file whole (configuration, policies,
 * guest files), and finding the folders shipped beside the binaries.  Implemented in lib/file.c.
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

/*
 * The folder of something airlock ships beside its binaries (the guest image, the
 * audit view's web files): $env when set and not empty, else name beside the
 * running binary when that is a folder (the build tree: `make` puts build/guest
 * and build/web next to build/airlock), else ../share/airlock/name from it (where
 * `make install` puts it: PREFIX/bin/airlock, PREFIX/share/airlock/name).
 * Returns 0 with the path in buf, or -1 (no binary path, or buf too small).
 */
int	file_share_dir(const char *env, const char *name, char *buf, size_t len);

#endif
