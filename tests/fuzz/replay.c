/*
 * tests/fuzz/replay.c: runs a libFuzzer target's seed corpus as a TAP test under gcc,
 * so every corpus file doubles as a regression case in `make check` (and under SAN=1).
 * The corpus is tests/fuzz/corpus/<target>/, found from the binary's name.
 */
#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);
int LLVMFuzzerInitialize(int *, char ***) __attribute__((weak));

static int
name_cmp(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

int
main(int argc, char **argv)
{
	char target[256], dir[512], path[1024];
	struct dirent **ents;
	const char *top;
	int n, i, run = 0;

	snprintf(target, sizeof(target), "%s", basename(argv[0]));
	target[strcspn(target, ".")] = '\0';
	if ((top = getenv("AIRLOCK_SRCDIR")) == NULL)
		top = ".";
	snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/%s", top, target);
	if (LLVMFuzzerInitialize != NULL)
		LLVMFuzzerInitialize(&argc, &argv);
	if ((n = scandir(dir, &ents, NULL, name_cmp)) == -1) {
		printf("Bail out! %s: %s\n", dir, strerror(errno));
		return 1;
	}
	for (i = 0; i < n; i++) {
		FILE *f;
		uint8_t *buf;
		long len;

		if (ents[i]->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, ents[i]->d_name);
		if ((f = fopen(path, "rb")) == NULL ||
		    fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 ||
		    fseek(f, 0, SEEK_SET) != 0) {
			printf("Bail out! %s: cannot read\n", path);
			return 1;
		}
		/* An exact-size heap copy so ASan sees reads past the end. */
		if ((buf = malloc(len ? (size_t)len : 1)) == NULL ||
		    fread(buf, 1, (size_t)len, f) != (size_t)len) {
			printf("Bail out! %s: cannot read\n", path);
			return 1;
		}
		fclose(f);
		LLVMFuzzerTestOneInput(buf, (size_t)len);
		free(buf);
		printf("ok %d - %s %s\n", ++run, target, ents[i]->d_name);
	}
	for (i = 0; i < n; i++)
		free(ents[i]);
	free(ents);
	if (run == 0) {
		printf("Bail out! %s: empty corpus\n", dir);
		return 1;
	}
	printf("1..%d\n", run);
	return 0;
}
