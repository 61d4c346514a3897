/*
 * cli/cli_group.c: a command group's table of subcommands (see cli.h), from which
 * both its dispatch and its usage lines come.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

const struct cli_sub *
cli_group_find(const struct cli_group *g, const char *name)
{
	const struct cli_sub *s;

	for (s = g->cg_subs; s->cs_name != NULL; s++)
		if (strcmp(s->cs_name, name) == 0)
			return s;
	return NULL;
}

/* "GROUP SUB USAGE", no newline. */
static void
cli_sub_print(const struct cli_group *g, const struct cli_sub *s, FILE *f)
{
	fprintf(f, "%s %s%s%s", g->cg_name, s->cs_name,
	    s->cs_usage[0] != '\0' ? " " : "", s->cs_usage);
}

void
cli_sub_usage(const struct cli_group *g, const struct cli_sub *s, FILE *f)
{
	fputs("usage: airlock ", f);
	cli_sub_print(g, s, f);
	fputc('\n', f);
}

void
cli_group_usage(const struct cli_group *g, FILE *f)
{
	const struct cli_sub *s;

	for (s = g->cg_subs; s->cs_name != NULL; s++) {
		fputs(s == g->cg_subs ? "usage: airlock " : "       airlock ", f);
		cli_sub_print(g, s, f);
		fputc('\n', f);
	}
}

int
cli_group_usage_error(const struct cli_group *g, const char *sub, const char *fmt,
    ...)
{
	va_list ap;

	if (fmt != NULL) {
		fprintf(stderr, "airlock: %s%s%s: ", g->cg_name, sub != NULL ? " " : "",
		    sub != NULL ? sub : "");
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
	cli_group_usage(g, stderr);
	return 2;
}

void
cli_group_line(const struct cli_group *g, FILE *f)
{
	const struct cli_sub *s;

	for (s = g->cg_subs; s->cs_name != NULL; s++) {
		if (s != g->cg_subs)
			fputs(" | ", f);
		cli_sub_print(g, s, f);
	}
}

void
cli_arg_refused(char **argv, const char *arg)
{
	fprintf(stderr, "airlock: %s %s: %s '%s'\n", argv[0], argv[1],
	    arg[0] == '-' && arg[1] != '\0' ? "unknown option" :
	    "unexpected argument", arg);
}

int
cli_group_run(const struct cli_group *g, const struct cli_ctx *ctx, int argc,
    char **argv)
{
	const struct cli_sub *s;
	size_t i;

	if (argc < 2)
		goto usage;
	if ((s = cli_group_find(g, argv[1])) != NULL)
		return s->cs_fn(ctx, argc, argv);
	for (i = 0; g->cg_help != NULL && g->cg_help[i] != NULL; i++)
		if (strcmp(argv[1], g->cg_help[i]) == 0) {
			cli_group_usage(g, stdout);
			return 0;
		}
	if (g->cg_unknown == CLI_UNKNOWN_COMMAND)
		fprintf(stderr, "airlock: unknown %s command '%s'\n", g->cg_name,
		    argv[1]);
	else if (g->cg_unknown == CLI_UNKNOWN_SUBCOMMAND)
		fprintf(stderr, "airlock: %s: unknown subcommand '%s'\n",
		    g->cg_name, argv[1]);
 usage:
	cli_group_usage(g, stderr);
	return 2;
}
