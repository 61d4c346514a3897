/*
 * proxy/main.c: airlockd, the egress proxy daemon.
 *
 *	airlockd [--config FILE] [--state-dir DIR] [--foreground] [-n] [-v]
 *
 * -n checks the configuration and the policy of every recorded sandbox, then exits.
 */
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "proxy.h"
#include "version.h"

static void
usage(FILE *f)
{
	fprintf(f, "usage: airlockd [--config FILE] [--state-dir DIR] "
	    "[--foreground] [-n] [-v]\n"
	    "       airlockd --help | --version\n"
	    "  --config FILE     the configuration (default %s)\n"
	    "  --state-dir DIR   overrides its state_dir\n"
	    "  --foreground, -d  stays in the foreground, logging to stderr "
	    "(else: syslog,\n"
	    "                    once the first worker serves)\n"
	    "  -n                checks the configuration, the user and every "
	    "recorded\n"
	    "                    sandbox's policy, then exits (0: all valid)\n"
	    "  -v                debug messages too\n"
	    "Signals: HUP reopens the audit log and reloads; TERM and INT stop.\n",
	    CONFIG_DEFAULT_PATH);
}

int
main(int argc, char **argv)
{
	struct proxy_opts o = { 0 };
	int i;

	for (i = 1; i < argc; i++) {
		if ((strcmp(argv[i], "--config") == 0 ||
		    strcmp(argv[i], "--state-dir") == 0) && i + 1 >= argc) {
			fprintf(stderr, "airlockd: %s needs a value\n", argv[i]);
			usage(stderr);
			return 2;
		}
		if (strcmp(argv[i], "--config") == 0)
			o.po_config = argv[++i];
		else if (strcmp(argv[i], "--state-dir") == 0)
			o.po_state_dir = argv[++i];
		else if (strcmp(argv[i], "--foreground") == 0 ||
		    strcmp(argv[i], "-d") == 0)
			o.po_foreground = 1;
		else if (strcmp(argv[i], "-n") == 0)
			o.po_check = 1;
		else if (strcmp(argv[i], "-v") == 0)
			o.po_verbose++;
		else if (strcmp(argv[i], "-h") == 0 ||
		    strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			return 0;
		} else if (strcmp(argv[i], "--version") == 0) {
			printf("airlockd %s\n", AIRLOCK_VERSION);
			return 0;
		} else {
			fprintf(stderr, "airlockd: %s '%s'\n", argv[i][0] == '-' ?
			    "unknown option" : "unexpected argument", argv[i]);
			usage(stderr);
			return 2;
		}
	}
	/*
	 * glibc gives the top of a thread's heap back (madvise, then a TLB shootdown
	 * on every core) as soon as it exceeds 128 KiB, and the next read of a
	 * bufferevent (TLS: up to 16 KiB at a time, 32 KiB chains) grows it again:
	 * ~10% of an inspected keep-alive request's CPU (issue 7, perf).  Keep up to
	 * 8 MiB per heap instead (idle connections are not affected; a failure
	 * here only costs that time).
	 */
	(void)mallopt(M_TRIM_THRESHOLD, 8 * 1024 * 1024);
	return proxy_main(&o);
}
