/*
 * proxy/main.c: airlockd.  Until the proxy lands (issue 4) it only checks its
 * configuration: `airlockd --config FILE -n`.
 */
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "log.h"

int
main(int argc, char **argv)
{
	struct airlock_config cfg;
	const char *path = NULL;
	char err[512];
	int i, check = 0;

	log_init("airlockd", 1, 0);
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
			path = argv[++i];
		else if (strcmp(argv[i], "-n") == 0)
			check = 1;
		else if (strcmp(argv[i], "--foreground") == 0)
			;
		else {
			fprintf(stderr, "usage: airlockd --config FILE [-n] "
			    "[--foreground]\n");
			return 2;
		}
	}
	if (config_load(&cfg, path, NULL, err, sizeof(err)) == -1)
		fatalx("%s", err);
	if (check) {
		printf("configuration OK\n");
		return 0;
	}
	fatalx("serving traffic is not built yet; only -n (check the "
	    "configuration) works");
}
