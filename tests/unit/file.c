/*
 * tests/unit/file.c: lib/file.c file_read(): a file read whole and NUL-terminated,
 * an empty one, the refusals (missing, a directory, a FIFO without blocking, larger
 * than the limit) and nothing handed back after a failure; file_share_dir(): the
 * environment's folder, else the one beside the binary, else ../share/airlock.
 */
#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "file.h"
#include "../tap.h"

static void
write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f == NULL)
		bail("fopen %s", path);
	fputs(text, f);
	fclose(f);
}

int
main(void)
{
	char path[512], *buf;
	const char *dir = tap_tmpdir();
	size_t len;
	int rc;

	plan(25);

	snprintf(path, sizeof(path), "%s/a", dir);
	write_file(path, "hello\n");
	rc = file_read(path, 6, &buf, &len);
	is_int(0, rc, "a 6-byte file with a limit of 6: read");
	is_int(6, (long long)len, "... its length");
	ok(buf != NULL && strcmp(buf, "hello\n") == 0,
	    "... its bytes, NUL-terminated");
	free(buf);

	rc = file_read(path, 5, &buf, &len);
	ok(rc == -1 && errno == EFBIG, "the same with a limit of 5: EFBIG");
	ok(buf == NULL && len == 0, "... nothing handed back");

	snprintf(path, sizeof(path), "%s/empty", dir);
	write_file(path, "");
	rc = file_read(path, 0, &buf, &len);
	is_int(0, rc, "an empty file with a limit of 0: read");
	ok(buf != NULL && buf[0] == '\0' && len == 0, "... as an empty string");
	free(buf);

	snprintf(path, sizeof(path), "%s/missing", dir);
	rc = file_read(path, 100, &buf, &len);
	ok(rc == -1 && errno == ENOENT, "a missing file: ENOENT");
	ok(buf == NULL, "... nothing handed back");

	rc = file_read(dir, 100, &buf, &len);
	ok(rc == -1 && errno == EISDIR, "a directory: EISDIR");
	ok(buf == NULL, "... nothing handed back");

	snprintf(path, sizeof(path), "%s/fifo", dir);
	if (mkfifo(path, 0600) == -1)
		bail("mkfifo %s", path);
	/* No writer: a blocking open would hang here. */
	rc = file_read(path, 100, &buf, &len);
	ok(rc == -1 && errno == EINVAL, "a FIFO: EINVAL, without blocking");
	ok(buf == NULL, "... nothing handed back");

	snprintf(path, sizeof(path), "%s/big", dir);
	write_file(path, "0123456789");
	rc = file_read(path, 9, &buf, &len);
	ok(rc == -1 && errno == EFBIG, "10 bytes with a limit of 9: EFBIG");
	rc = file_read(path, 10, &buf, &len);
	is_int(0, rc, "... with a limit of 10: read");
	is_int(10, (long long)len, "... all 10 bytes");
	ok(buf != NULL && memcmp(buf, "0123456789", 11) == 0,
	    "... and the NUL after them");
	free(buf);
	rc = file_read(path, (size_t)-1, &buf, &len);
	is_int(0, rc, "... with no practical limit: read");
	ok(buf != NULL && len == 10, "... 10 bytes");
	free(buf);

	/* file_share_dir: this test binary lives in build/tests/unit. */
	{
		char exe[256], want[600], got[600];
		ssize_t n;

		setenv("AIRLOCK_TEST_DIR", "/some/where", 1);
		is_int(0, file_share_dir("AIRLOCK_TEST_DIR", "x", got, sizeof(got)),
		    "share dir from the environment");
		is_string("/some/where", got, "... is the environment's");
		setenv("AIRLOCK_TEST_DIR", "", 1);
		if ((n = readlink("/proc/self/exe", exe, sizeof(exe) - 1)) == -1)
			bail("readlink");
		exe[n] = '\0';
		*strrchr(exe, '/') = '\0';
		snprintf(path, sizeof(path), "%s/fileshare.d", exe);
		rmdir(path);
		snprintf(want, sizeof(want), "%s/../share/airlock/fileshare.d", exe);
		is_int(0, file_share_dir("AIRLOCK_TEST_DIR", "fileshare.d", got,
		    sizeof(got)), "share dir, empty environment value");
		is_string(want, got, "... without a folder beside the binary: "
		    "../share/airlock");
		if (mkdir(path, 0700) == -1)
			bail("mkdir %s", path);
		file_share_dir("AIRLOCK_TEST_DIR", "fileshare.d", got, sizeof(got));
		is_string(path, got, "... with one: the folder beside the binary");
		rmdir(path);
		ok(file_share_dir("AIRLOCK_TEST_DIR", "fileshare.d", got, 10) == -1,
		    "... a buffer too small: -1");
	}
	return tap_failures() != 0;
}
