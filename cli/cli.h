/*
 * cli/cli.h: the airlock command line, private to cli/.  One file per command group;
 * each takes the arguments after its own name (argv[0] is the group name) and returns
 * the process exit status: 0 success, 1 a "no"/failure answer, 2 usage or load error.
 */
#ifndef AIRLOCK_CLI_H
#define AIRLOCK_CLI_H

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

/* cmd_policy.c */
int	cmd_policy(const struct cli_ctx *ctx, int argc, char **argv);
/* cmd_audit.c */
int	cmd_audit(const struct cli_ctx *ctx, int argc, char **argv);
/* cmd_ctl.c: airlock reload, airlock stats (through airlockd's control socket) */
int	cmd_reload(const struct cli_ctx *ctx, int argc, char **argv);
int	cmd_stats(const struct cli_ctx *ctx, int argc, char **argv);

/* cmd_sandbox.c: airlock sandbox create|destroy|ls */
int	cmd_sandbox(const struct cli_ctx *ctx, int argc, char **argv);
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
int	cmd_net(const struct cli_ctx *ctx, int argc, char **argv);

/* cmd_vm.c: airlock vm start|stop|destroy|ls|console */
int	cmd_vm(const struct cli_ctx *ctx, int argc, char **argv);

/* cmd_vault.c: airlock vault put|ls|rm|rotate-key */
int	cmd_vault(const struct cli_ctx *ctx, int argc, char **argv);
/* cmd_ca.c: airlock ca init|cert */
int	cmd_ca(const struct cli_ctx *ctx, int argc, char **argv);

#endif
