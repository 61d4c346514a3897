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

/*
 * A command is a group (its table gives dispatch and usage) or a function with its
 * usage.  policy and audit keep a shorter usage line here than their own usage.
 */
static const struct cli_cmd {
	const char		*name;
	const struct cli_group	*group;		/* or NULL: fn */
	int			(*fn)(const struct cli_ctx *, int, char **);
	const char		*usage;		/* or NULL: the group's */
} cli_cmds[] = {
	{ "vault", &cli_vault_group, NULL, NULL },
	{ "ca", &cli_ca_group, NULL, NULL },
	{ "policy", NULL, cmd_policy,
	  "policy check FILE... | policy test FILE HOST[:PORT] [METHOD PATH]" },
	{ "audit", &cli_audit_group, NULL,
	  "audit verify FILE | audit query FILE [filters] [--json] | audit summary FILE" },
	{ "reload", NULL, cmd_reload, "reload [--json]" },
	{ "stats", NULL, cmd_stats, "stats [--json]" },
	{ "sandbox", &cli_sandbox_group, NULL, NULL },
	{ "net", &cli_net_group, NULL, NULL },
	{ "vm", &cli_vm_group, NULL, NULL },
};

static void
usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: airlock [--config FILE] [--state-dir DIR] COMMAND ...\n");
	for (i = 0; i < sizeof(cli_cmds) / sizeof(cli_cmds[0]); i++) {
		fputs("       airlock ", f);
		if (cli_cmds[i].usage != NULL)
			fputs(cli_cmds[i].usage, f);
		else
			cli_group_line(cli_cmds[i].group, f);
		fputc('\n', f);
	}
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
			return cli_cmds[i].group != NULL ?
			    cli_group_run(cli_cmds[i].group, &ctx, argc - a,
			    argv + a) : cli_cmds[i].fn(&ctx, argc - a, argv + a);
	fprintf(stderr, "airlock: unknown command '%s'\n", argv[a]);
	usage(stderr);
	return 2;
}
