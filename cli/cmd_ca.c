/*
 * cli/cmd_ca.c: airlock ca init|cert (README, "Making a guest trust the interception CA").
 *
 *	airlock ca init [--force]	the host CA (STATE_DIR/ca.key, ca.pem)
 *	airlock ca cert [SANDBOX]	the PEM a VM must trust: the host CA, or the
 *					sandbox's own name-constrained CA, made (or
 *					remade, when the policy's inspected names
 *					changed) from the sandbox's current policy
 *
 * Why per-sandbox CAs with name constraints: see vault/vault_ca.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ca.h"
#include "cli.h"
#include "policy.h"
#include "sandbox.h"

static void
ca_usage(void)
{
	cli_group_usage(&cli_ca_group, stderr);
}

static int
ca_cmd_init(const struct cli_ctx *ctx, int argc, char **argv)
{
	struct airlock_config cfg;
	char err[1024];
	int force = 0, rv;

	if (argc == 3 && strcmp(argv[2], "--force") == 0)
		force = 1;
	else if (argc != 2) {
		cli_arg_refused(argv, argc == 3 || strcmp(argv[2], "--force") != 0 ?
		    argv[2] : argv[3]);
		ca_usage();
		return 2;
	}
	if (cli_config(ctx, &cfg) == -1)
		return 2;
	if ((rv = ca_init(cfg.state_dir, force, err, sizeof(err))) != CA_OK) {
		fprintf(stderr, "airlock: ca init: %s\n", err);
		return rv == CA_ERR_EXISTS ? 1 : 2;
	}
	printf("created the interception CA: %s/ca.pem (key %s/ca.key, 0600)\n",
	    cfg.state_dir, cfg.state_dir);
	return 0;
}

/*
 * The names a sandbox's policy inspects (TLS terminated by the proxy): host rules
 * with tls "inspect".  Returns the count and *out (borrowed strings from p; free the
 * array with free()), or -1.
 */
static int
ca_policy_names(const struct policy *p, const char ***out)
{
	const char **v;
	size_t i, n = 0;

	if ((v = calloc(p->p_nrules + 1, sizeof(*v))) == NULL)
		return -1;
	for (i = 0; i < p->p_nrules; i++)
		if (!p->p_rules[i].pr_is_cidr &&
		    p->p_rules[i].pr_tls == POLICY_TLS_INSPECT)
			v[n++] = p->p_rules[i].pr_host;
	*out = v;
	return (int)n;
}

static int
ca_cmd_cert_sandbox(const struct airlock_config *cfg, const char *name)
{
	struct policy_errors errs = { NULL, 0 };
	struct policy *p = NULL;
	struct sandbox sb;
	struct ca *ca = NULL;
	const char **names = NULL;
	char err[1024];
	int n, reissued, rv = 2;

	if (!sandbox_name_is_valid(name)) {
		fprintf(stderr, "airlock: invalid sandbox name '%.64s'\n", name);
		goto out;
	}
	if (sandbox_load(cfg->state_dir, name, &sb) == -1) {
		fprintf(stderr, "airlock: no sandbox '%s' in %s\n", name,
		    cfg->state_dir);
		rv = 1;
		goto out;
	}
	if ((p = policy_load_file(sb.sb_policy, &errs)) == NULL) {
		if (errs.n > 0 && policy_error_fmt(&errs.v[0], err,
		    sizeof(err)) >= 0)
			fprintf(stderr, "airlock: sandbox %s: %s\n", name, err);
		else
			fprintf(stderr, "airlock: sandbox %s: cannot load %s\n",
			    name, sb.sb_policy);
		goto out;
	}
	if ((n = ca_policy_names(p, &names)) == -1) {
		fprintf(stderr, "airlock: out of memory\n");
		goto out;
	}
	if (n == 0) {
		fprintf(stderr, "airlock: sandbox %s: its policy inspects no "
		    "names, so its VM needs no CA\n", name);
		rv = 1;
		goto out;
	}
	if (ca_sandbox_sync(cfg->state_dir, name, names, (size_t)n, &reissued,
	    err, sizeof(err)) != CA_OK) {
		fprintf(stderr, "airlock: sandbox %s CA: %s\n", name, err);
		goto out;
	}
	if (reissued)
		fprintf(stderr, "airlock: sandbox %s: the names its policy "
		    "inspects changed: made a new CA; give the VM this "
		    "certificate\n", name);
	if ((ca = ca_load(cfg->state_dir, name, NULL, err, sizeof(err))) ==
	    NULL) {
		fprintf(stderr, "airlock: %s\n", err);
		goto out;
	}
	if (ca_cert_write_pem(ca, stdout) == -1 || fflush(stdout) == EOF) {
		fprintf(stderr, "airlock: cannot write the certificate\n");
		rv = 1;
		goto out;
	}
	rv = 0;
 out:
	ca_free(ca);
	free(names);
	policy_free(p);
	policy_errors_free(&errs);
	return rv;
}

static int
ca_cmd_cert(const struct cli_ctx *ctx, int argc, char **argv)
{
	struct airlock_config cfg;
	struct ca *ca;
	char err[1024];
	int rv;

	if (argc > 3 || (argc == 3 && argv[2][0] == '-')) {
		cli_arg_refused(argv, argv[2][0] == '-' ? argv[2] : argv[3]);
		ca_usage();
		return 2;
	}
	if (cli_config(ctx, &cfg) == -1)
		return 2;
	if (argc == 3)
		return ca_cmd_cert_sandbox(&cfg, argv[2]);
	if ((ca = ca_load(cfg.state_dir, NULL, &rv, err, sizeof(err))) == NULL) {
		fprintf(stderr, "airlock: %s\n", err);
		return rv == CA_ERR_ABSENT ? 1 : 2;
	}
	rv = ca_cert_write_pem(ca, stdout) == -1 || fflush(stdout) == EOF;
	if (rv)
		fprintf(stderr, "airlock: cannot write the certificate\n");
	ca_free(ca);
	return rv;
}

static const struct cli_sub ca_subs[] = {
	{ "init", ca_cmd_init, "[--force]" },
	{ "cert", ca_cmd_cert, "[SANDBOX]" },
	{ NULL, NULL, NULL }
};
const struct cli_group cli_ca_group = { "ca", ca_subs, CLI_UNKNOWN_COMMAND, NULL };
