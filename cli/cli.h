/*
 * cli/cli.h: the airlock command line, private to cli/.  One file per command group;
 * each takes the arguments after its own name (argv[0] is the group name) and returns
 * the process exit status: 0 success, 1 a "no"/failure answer, 2 usage or load error.
 */
#ifndef AIRLOCK_CLI_H
#define AIRLOCK_CLI_H

#include <stdio.h>

#include "config.h"

struct cli_ctx {
	const char	*config_path;	/* --config, or NULL */
	const char	*state_dir;	/* --state-dir, or NULL */
	int		 json;		/* --json given before the command */
};

/*
 * Loads the configuration the way every command does (--config, AIRLOCK_CONFIG,
 * --state-dir, AIRLOCK_STATE_DIR).  Prints the error and returns -1 on failure.
 */
int	cli_config(const struct cli_ctx *ctx, struct airlock_config *cfg);

/*
 * A command group (airlock GROUP SUB ...) is one table: each subcommand's name, its
 * handler (given the group's argc and argv, argv[1] the subcommand's name, and
 * returning the exit status) and its usage after "airlock GROUP SUB".  Dispatch and
 * usage lines both come from the table.
 */
struct cli_sub {
	const char	*cs_name;	/* NULL ends a table */
	int		(*cs_fn)(const struct cli_ctx *, int, char **);
	const char	*cs_usage;	/* "" when the subcommand takes nothing */
};
/* What a group prints for an unknown subcommand, before its usage. */
enum cli_unknown {
	CLI_UNKNOWN_QUIET = 0,		/* nothing */
	CLI_UNKNOWN_COMMAND,		/* airlock: unknown GROUP command 'SUB' */
	CLI_UNKNOWN_SUBCOMMAND		/* airlock: GROUP: unknown subcommand 'SUB' */
};
struct cli_group {
	const char		*cg_name;
	const struct cli_sub	*cg_subs;
	enum cli_unknown	 cg_unknown;
	const char *const	*cg_help;	/* words that print usage on stdout, or NULL */
};

/* cli_group.c */
/* The subcommand called name, or NULL. */
const struct cli_sub *cli_group_find(const struct cli_group *g, const char *name);
/* "usage: airlock GROUP SUB USAGE\n" for the one subcommand s. */
void	cli_sub_usage(const struct cli_group *g, const struct cli_sub *s, FILE *f);
/* "usage: airlock GROUP SUB USAGE\n" then "       airlock ..." for each other SUB. */
void	cli_group_usage(const struct cli_group *g, FILE *f);
/*
 * "airlock: GROUP[ SUB]: MESSAGE" (none when fmt is NULL) and the group's usage on
 * stderr; returns 2, the exit status of a usage error.
 */
int	cli_group_usage_error(const struct cli_group *g, const char *sub,
	    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* "GROUP SUB USAGE | GROUP SUB USAGE ...", no newline (airlock's own usage). */
void	cli_group_line(const struct cli_group *g, FILE *f);
/*
 * Runs the subcommand argv[1]; a help word prints usage on stdout (0); no or an
 * unknown subcommand prints cg_unknown's message and usage on stderr (2).
 */
int	cli_group_run(const struct cli_group *g, const struct cli_ctx *ctx, int argc,
	    char **argv);
/*
 * "airlock: GROUP SUB: unknown option 'ARG'" (or "unexpected argument" for one that
 * is no option) on stderr; argv is the subcommand's (argv[0] the group).
 */
void	cli_arg_refused(char **argv, const char *arg);

/* cmd_policy.c (its table, for help: cmd_policy() dispatches itself) */
int	cmd_policy(const struct cli_ctx *ctx, int argc, char **argv);
extern const struct cli_group cli_policy_group;
/* cmd_policy_suggest.c: airlock policy suggest */
int	policy_cmd_suggest(const struct cli_ctx *ctx, int argc, char **argv);
/* cmd_audit.c: airlock audit verify|query|summary|serve */
extern const struct cli_group cli_audit_group;
/*
 * cmd_audit_serve.c: the web view of the files paths[0..n-1] (one chain, oldest
 * first; key the HMAC key or NULL) on listen ("ADDR:PORT", a loopback address, or
 * "localhost:PORT"), until SIGINT or SIGTERM.  Returns the exit status.
 */
#define CLI_AUDIT_SERVE_LISTEN	"127.0.0.1:9346"
int	cli_audit_serve(char *const *paths, int n, const unsigned char *key,
	    size_t keylen, const char *listen);
/* cmd_ctl.c: airlock reload, airlock stats (through airlockd's control socket) */
/*
 * Sends req (what: the command's name for messages) and parses the reply.  Returns
 * the reply object (json_decref()) and the raw line in *raw (free()); NULL after
 * printing why, with *rc the exit status: 2 for a configuration that does not
 * load, 1 for airlockd not running (errno: control_is_not_running()) or refusing.
 */
struct json_t;
struct json_t *cli_ctl_request(const struct cli_ctx *ctx, const char *what,
	    const char *req, int timeout_ms, char **raw, int *rc);
int	cmd_reload(const struct cli_ctx *ctx, int argc, char **argv);
int	cmd_stats(const struct cli_ctx *ctx, int argc, char **argv);
int	cmd_metrics(const struct cli_ctx *ctx, int argc, char **argv);

/* cmd_sandbox.c: airlock sandbox create|destroy|ls */
extern const struct cli_group cli_sandbox_group;
/* Tells a running airlockd about a sandbox (cmd "sandbox_add"/"sandbox_remove"). */
void	cli_sandbox_notify(const struct airlock_config *cfg, const char *cmd,
	    const char *name);
/* The records of cfg->state_dir (sandbox_list()), or -1 after printing why. */
struct sandbox;
int	cli_sandbox_list(const struct airlock_config *cfg, struct sandbox **v);
/*
 * Parses argv[first..]: "--opt VALUE" for each of the nopts opts (into vals), one
 * positional argument (*pos, NULL if none), "--json" into *json when json != NULL.
 * Prints the error and returns -1 on anything else.
 */
int	cli_opts_parse(int argc, char **argv, int first, const char *const *opts,
	    const char **vals, size_t nopts, const char **pos, int *json);
/* cmd_net.c: airlock net attach|detach|status */
extern const struct cli_group cli_net_group;

/* cmd_approve.c: airlock approve ls|allow|deny */
extern const struct cli_group cli_approve_group;
/*
 * A --for duration: digits and one unit, s, m, h or d ("90s", "10m", "2h", "1d"),
 * 1 second to 30 days.  0 with *secs, or -1.
 */
int	cli_duration_parse(const char *s, long long *secs);

/* cmd_vm.c: airlock vm start|stop|destroy|ls|console */
extern const struct cli_group cli_vm_group;

/* cmd_vault.c: airlock vault put|ls|rm|rotate-key */
extern const struct cli_group cli_vault_group;
/* cmd_ca.c: airlock ca init|cert */
extern const struct cli_group cli_ca_group;

#endif
