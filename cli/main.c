/*
 * cli/main.c: `airlock`, the one command line that fronts every part.
 *
 *	airlock [--config FILE] [--state-dir DIR] COMMAND ...
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "log.h"

static const struct cli_cmd {
	const char	*name;
	int		(*fn)(const struct cli_ctx *, int, char **);
	const char	*usage;
} cli_cmds[] = {
	{ "vault", cmd_vault,
	  "vault put NAME --host HOST [--host HOST...] [--placeholder P] < value | "
	  "vault ls [--json] | vault rm NAME | vault rotate-key" },
	{ "ca", cmd_ca, "ca init [--force] | ca cert [SANDBOX]" },
	{ "policy", cmd_policy,
	  "policy check FILE... | policy test FILE HOST[:PORT] [METHOD PATH]" },
	{ "audit", cmd_audit,
	  "audit verify FILE | audit query FILE [filters] [--json] | audit summary FILE" },
	{ "reload", cmd_reload, "reload [--json]" },
	{ "stats", cmd_stats, "stats [--json]" },
	{ "sandbox", cmd_sandbox,
	  "sandbox create NAME --policy FILE [--owner USER] | sandbox destroy NAME | "
	  "sandbox ls [--json]" },
	{ "net", cmd_net,
	  "net attach NAME --policy FILE --iface IFACE --guest-ip IP [--host-ip IP] "
	  "[--mac MAC] | net detach NAME | net status [--json]" },
	{ "vm", cmd_vm,
	  "vm start NAME [--image default|DIR | --disk FILE.qcow2] [--memory MiB] "
	  "[--vcpus N] [--agent FILE] | vm stop NAME [--timeout SEC] | "
	  "vm destroy NAME | vm ls [--json] | "
	  "vm console NAME [--wait MARKER [--timeout SEC]]" },
};

static void
usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: airlock [--config FILE] [--state-dir DIR] COMMAND ...\n");
	for (i = 0; i < sizeof(cli_cmds) / sizeof(cli_cmds[0]); i++)
		fprintf(f, "       airlock %s\n", cli_cmds[i].usage);
}

int
cli_config(const struct cli_ctx *ctx, struct airlock_config *cfg)
{
	char err[512];

	if (config_load(cfg, ctx->config_path, ctx->state_dir, err,
	    sizeof(err)) == -1) {
		fprintf(stderr, "airlock: %s\n", err);
		return -1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	struct cli_ctx ctx = { 0 };
	size_t i;
	int a = 1;

	log_init("airlock", 1, 0);
	while (a < argc && argv[a][0] == '-') {
		if (strcmp(argv[a], "--config") == 0 && a + 1 < argc) {
			ctx.config_path = argv[a + 1];
			a += 2;
		} else if (strcmp(argv[a], "--state-dir") == 0 && a + 1 < argc) {
			ctx.state_dir = argv[a + 1];
			a += 2;
		} else if (strcmp(argv[a], "--json") == 0) {
			ctx.json = 1;
			a++;
		} else if (strcmp(argv[a], "-h") == 0 ||
		    strcmp(argv[a], "--help") == 0) {
			usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "airlock: unknown option %s\n", argv[a]);
			usage(stderr);
			return 2;
		}
	}
	if (a >= argc) {
		usage(stderr);
		return 2;
	}
	for (i = 0; i < sizeof(cli_cmds) / sizeof(cli_cmds[0]); i++)
		if (strcmp(argv[a], cli_cmds[i].name) == 0)
			return cli_cmds[i].fn(&ctx, argc - a, argv + a);
	fprintf(stderr, "airlock: unknown command '%s'\n", argv[a]);
	usage(stderr);
	return 2;
}
