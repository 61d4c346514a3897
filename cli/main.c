/*
 * cli/main.c: `airlock`, the one command line that fronts every part.
 *
 *	airlock [--config FILE] [--state-dir DIR] [--json] COMMAND ...
 *	airlock help [COMMAND [SUBCOMMAND]] | --help | --version
 *
 * Exit status, for every command: 0 success, 1 a negative answer (a denial, a
 * failed check or verification, airlockd not answering), 2 bad usage or input that
 * cannot be read (README, "Exit status").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "log.h"
#include "version.h"

/*
 * A command is a group (its table gives dispatch and usage) or a function with its
 * usage; policy dispatches itself but has a table for its usage.  audit and policy
 * keep a shorter line in airlock's own usage than their own.
 */
static const struct cli_cmd {
	const char		*name;
	const struct cli_group	*group;		/* dispatch (fn NULL) or usage */
	int			(*fn)(const struct cli_ctx *, int, char **);
	const char		*usage;		/* or NULL: the group's */
} cli_cmds[] = {
	{ "vault", &cli_vault_group, NULL, NULL },
	{ "ca", &cli_ca_group, NULL, NULL },
	{ "policy", &cli_policy_group, cmd_policy,
	  "policy check FILE... | policy test FILE HOST[:PORT] [METHOD PATH]" },
	{ "audit", &cli_audit_group, NULL,
	  "audit verify [options] [FILE...] | audit query [filters] [--json] [FILE...] | audit summary [--key-file FILE] [--json] [FILE...] | audit serve [--listen ADDR:PORT] [FILE...]" },
	{ "reload", NULL, cmd_reload, "reload [--json]" },
	{ "stats", NULL, cmd_stats, "stats [--json]" },
	{ "metrics", NULL, cmd_metrics, "metrics [--json]" },
	{ "approve", &cli_approve_group, NULL, NULL },
	{ "sandbox", &cli_sandbox_group, NULL, NULL },
	{ "net", &cli_net_group, NULL, NULL },
	{ "vm", &cli_vm_group, NULL, NULL },
};
#define CLI_NCMDS	(sizeof(cli_cmds) / sizeof(cli_cmds[0]))

static void
usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: airlock [--config FILE] [--state-dir DIR] [--json] "
	    "COMMAND ...\n");
	fprintf(f, "       airlock help [COMMAND [SUBCOMMAND]] | --help | --version\n");
	for (i = 0; i < CLI_NCMDS; i++) {
		fputs("       airlock ", f);
		if (cli_cmds[i].usage != NULL)
			fputs(cli_cmds[i].usage, f);
		else
			cli_group_line(cli_cmds[i].group, f);
		fputc('\n', f);
	}
}

static const struct cli_cmd *
cmd_find(const char *name)
{
	size_t i;

	for (i = 0; i < CLI_NCMDS; i++)
		if (strcmp(name, cli_cmds[i].name) == 0)
			return &cli_cmds[i];
	return NULL;
}

/*
 * The usage of c on f: of its subcommand sub when it has one of that name (NULL:
 * none asked), else of the whole command.  0, or 2 for an unknown sub when strict.
 */
static int
cmd_usage(const struct cli_cmd *c, const char *sub, int strict, FILE *f)
{
	const struct cli_sub *s;

	if (c->group == NULL) {
		fprintf(f, "usage: airlock %s\n", c->usage);
		return 0;
	}
	if (sub != NULL && (s = cli_group_find(c->group, sub)) != NULL) {
		cli_sub_usage(c->group, s, f);
		return 0;
	}
	if (sub != NULL && strict) {
		fprintf(stderr, "airlock: help: %s has no subcommand '%s'\n",
		    c->name, sub);
		cli_group_usage(c->group, stderr);
		return 2;
	}
	cli_group_usage(c->group, f);
	return 0;
}

/* airlock help [COMMAND [SUBCOMMAND]]: usage on stdout. */
static int
cmd_help(int argc, char **argv)
{
	const struct cli_cmd *c;

	if (argc < 2) {
		usage(stdout);
		return 0;
	}
	if ((c = cmd_find(argv[1])) == NULL) {
		fprintf(stderr, "airlock: help: unknown command '%s'\n", argv[1]);
		usage(stderr);
		return 2;
	}
	return cmd_usage(c, argc > 2 ? argv[2] : NULL, 1, stdout);
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
	const struct cli_cmd *c;
	int a = 1, i;

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
		} else if (strcmp(argv[a], "--version") == 0) {
			printf("airlock %s\n", AIRLOCK_VERSION);
			return 0;
		} else {
			if (strcmp(argv[a], "--config") == 0 ||
			    strcmp(argv[a], "--state-dir") == 0)
				fprintf(stderr, "airlock: %s needs a value\n",
				    argv[a]);
			else
				fprintf(stderr, "airlock: unknown option '%s'\n",
				    argv[a]);
			usage(stderr);
			return 2;
		}
	}
	if (a >= argc) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[a], "help") == 0)
		return cmd_help(argc - a, argv + a);
	if ((c = cmd_find(argv[a])) == NULL) {
		fprintf(stderr, "airlock: unknown command '%s'\n", argv[a]);
		usage(stderr);
		return 2;
	}
	/* --help (or -h) anywhere after the command: its usage, on stdout. */
	for (i = a + 1; i < argc; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
			return cmd_usage(c, a + 1 < argc && argv[a + 1][0] != '-' ?
			    argv[a + 1] : NULL, 0, stdout);
	if (c->fn != NULL)
		return c->fn(&ctx, argc - a, argv + a);
	return cli_group_run(c->group, &ctx, argc - a, argv + a);
}
