/*
 * vault/vault_fs.c: the few file operations the vault and the CA need, done so that a
 * secret file is never read when someone else could have read or replaced it
 * (OpenSSH's check_file_secrecy), and never written in place (temp + fsync + rename +
 * fsync of the directory, so a crash leaves the old file or the new one).
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "vault_int.h"

/*
 * Opens dir/name for reading after checking that it is a regular file owned by us or
 * root, with no group or other permission bits.  Returns VAULT_OK with *fdp (and
 * *sizep), VAULT_ERR_ABSENT if it does not exist, or another enum vault_err.
 */
int
vault_fs_open_secret(const char *dir, const char *name, int *fdp, off_t *sizep,
    char *err, size_t errlen)
{
	char path[PATH_MAX];
	struct stat st;
	int fd = -1, rv;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    sizeof(path)) {
		snprintf(err, errlen, "%s: path too long", name);
		return VAULT_ERR_SYS;
	}
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1) {
		rv = errno == ENOENT ? VAULT_ERR_ABSENT : VAULT_ERR_SYS;
		if (errno == ELOOP)
			rv = VAULT_ERR_PERM;
		snprintf(err, errlen, "%s: %s", name, strerror(errno));
		goto error;
	}
	if (fstat(fd, &st) == -1) {
		snprintf(err, errlen, "%s: %s", name, strerror(errno));
		rv = VAULT_ERR_SYS;
		goto error;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", name);
		rv = VAULT_ERR_PERM;
		goto error;
	}
	if (st.st_uid != geteuid() && st.st_uid != 0) {
		snprintf(err, errlen, "%s: owned by uid %u, must be owned by uid %u "
		    "or root", name, (unsigned)st.st_uid, (unsigned)geteuid());
		rv = VAULT_ERR_PERM;
		goto error;
	}
	if ((st.st_mode & 077) != 0) {
		snprintf(err, errlen, "%s: mode %04o, must be 0600", name,
		    (unsigned)(st.st_mode & 07777));
		rv = VAULT_ERR_PERM;
		goto error;
	}
	*fdp = fd;
	if (sizep != NULL)
		*sizep = st.st_size;
	return VAULT_OK;
 error:
	if (fd != -1)
		close(fd);
	return rv;
}

/*
 * Reads all of dir/name (checked as above, at most maxlen bytes).  Returns VAULT_OK
 * with *out (release with OPENSSL_clear_free(*out, *outlen)), or an enum vault_err.
 */
int
vault_fs_read_secret(const char *dir, const char *name, size_t maxlen,
    uint8_t **out, size_t *outlen, char *err, size_t errlen)
{
	uint8_t *buf = NULL;
	size_t len = 0, cap;
	ssize_t r;
	off_t size;
	int fd = -1, rv;

	if ((rv = vault_fs_open_secret(dir, name, &fd, &size, err, errlen)) !=
	    VAULT_OK)
		return rv;
	if (size < 0 || (uint64_t)size > maxlen) {
		snprintf(err, errlen, "%s: too large (%lld bytes)", name,
		    (long long)size);
		rv = VAULT_ERR_FORMAT;
		goto error;
	}
	/* One byte more than the size, to see a file growing under us. */
	cap = (size_t)size + 1;
	if ((buf = malloc(cap)) == NULL) {
		snprintf(err, errlen, "%s: %s", name, strerror(errno));
		rv = VAULT_ERR_SYS;
		goto error;
	}
	for (;;) {
		r = read(fd, buf + len, cap - len);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1) {
			snprintf(err, errlen, "%s: %s", name, strerror(errno));
			rv = VAULT_ERR_SYS;
			goto error;
		}
		if (r == 0)
			break;
		len += (size_t)r;
		if (len == cap) {
			snprintf(err, errlen, "%s: changed while reading", name);
			rv = VAULT_ERR_SYS;
			goto error;
		}
	}
	close(fd);
	*out = buf;
	*outlen = len;
	return VAULT_OK;
 error:
	if (buf != NULL)
		OPENSSL_clear_free(buf, cap);
	close(fd);
	return rv;
}

static int
vault_fs_fsync_dir(const char *dir)
{
	int fd, rv;

	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return -1;
	rv = fsync(fd);
	close(fd);
	return rv;
}

/*
 * Writes buf to dir/name atomically with the given mode.  Returns VAULT_OK or
 * VAULT_ERR_SYS; on failure the old file (if any) is untouched.
 */
int
vault_fs_write_atomic(const char *dir, const char *name, const void *buf,
    size_t len, mode_t mode, char *err, size_t errlen)
{
	char tmp[PATH_MAX], path[PATH_MAX];
	const uint8_t *p = buf;
	size_t off = 0;
	ssize_t w;
	int fd = -1;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    sizeof(path) || (size_t)snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX",
	    dir, name) >= sizeof(tmp)) {
		snprintf(err, errlen, "%s: path too long", name);
		return VAULT_ERR_SYS;
	}
	/* mkstemp creates the file 0600; fchmod only ever widens for ca.pem. */
	if ((fd = mkostemp(tmp, O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "%s: %s", name, strerror(errno));
		return VAULT_ERR_SYS;
	}
	if (fchmod(fd, mode) == -1)
		goto error;
	while (off < len) {
		w = write(fd, p + off, len - off);
		if (w == -1 && errno == EINTR)
			continue;
		if (w == -1)
			goto error;
		off += (size_t)w;
	}
	if (fsync(fd) == -1)
		goto error;
	if (close(fd) == -1) {
		fd = -1;
		goto error;
	}
	fd = -1;
	if (rename(tmp, path) == -1)
		goto error;
	if (vault_fs_fsync_dir(dir) == -1) {
		snprintf(err, errlen, "%s: fsync of directory: %s", name,
		    strerror(errno));
		return VAULT_ERR_SYS;
	}
	return VAULT_OK;
 error:
	snprintf(err, errlen, "%s: %s", name, strerror(errno));
	if (fd != -1)
		close(fd);
	unlink(tmp);
	return VAULT_ERR_SYS;
}

/* rename(dir/from, dir/to) and fsync(dir).  VAULT_OK or VAULT_ERR_SYS. */
int
vault_fs_rename(const char *dir, const char *from, const char *to, char *err,
    size_t errlen)
{
	char a[PATH_MAX], b[PATH_MAX];

	if ((size_t)snprintf(a, sizeof(a), "%s/%s", dir, from) >= sizeof(a) ||
	    (size_t)snprintf(b, sizeof(b), "%s/%s", dir, to) >= sizeof(b)) {
		snprintf(err, errlen, "%s: path too long", to);
		return VAULT_ERR_SYS;
	}
	if (rename(a, b) == -1 || vault_fs_fsync_dir(dir) == -1) {
		snprintf(err, errlen, "%s: %s", to, strerror(errno));
		return VAULT_ERR_SYS;
	}
	return VAULT_OK;
}

/* mkdir(dir, 0700) unless it exists (as a directory).  VAULT_OK or VAULT_ERR_SYS. */
int
vault_fs_mkdir(const char *dir, char *err, size_t errlen)
{
	struct stat st;

	if (mkdir(dir, 0700) == 0)
		return VAULT_OK;
	if (errno == EEXIST && stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
		return VAULT_OK;
	snprintf(err, errlen, "%s: %s", dir, strerror(errno));
	return VAULT_ERR_SYS;
}

/* 1 if dir/name exists (as anything, symlinks not followed), else 0. */
int
vault_fs_exists(const char *dir, const char *name)
{
	char path[PATH_MAX];
	struct stat st;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    sizeof(path))
		return 0;
	return lstat(path, &st) == 0;
}
