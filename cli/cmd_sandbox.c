/*
 * cli/cmd_sandbox.c: airlock sandbox create|destroy|ls.
 *
 *	airlock sandbox create NAME --policy FILE [--owner USER]
 *	airlock sandbox destroy NAME
 *	airlock sandbox ls [--json]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "cli.h"
#include "control.h"
#include "netctl.h"
#include "sandbox.h"
#include "vmm.h"

/*
 * Tells a running airlockd (the record is the truth; a daemon that is not running
 * reads every record when it starts, so "not running" is no failure).
 */
void
cli_sandbox_notify(const struct airlock_config *cfg, const char *cmd,
    const char *name)
{
	char err[512];
	int r;

	r = control_sandbox_notify(cfg->control_socket, cmd, name, err,
	    sizeof(err));
	if (r == 1 || (r == -1 && control_is_not_running(errno)))
		return;
	fprintf(stderr, "airlock: warning: airlockd: %s\n", err);
}

/* The sandbox records of cfg's state directory; prints the error on failure. */
int
cli_sandbox_list(const struct airlock_config *cfg, struct sandbox **v)
{
	int n;

	if ((n = sandbox_list(cfg->state_dir, v)) == -1)
		fprintf(stderr, "airlock: reading sandbox records in %s: %s\n",
		    cfg->state_dir, strerror(errno));
	return n;
}

/* Parses "--opt VALUE" pairs named in opts[] into vals[]; "--json" into *json. */
int
cli_opts_parse(int argc, char **argv, int first, const char *const *opts,
    const char **vals, size_t nopts, const char **pos, int *json)
{
	size_t j;
	int i, found;

	*pos = NULL;
	for (i = first; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0 && json != NULL) {
			*json = 1;
			continue;
		}
		found = 0;
		for (j = 0; j < nopts; j++) {
			if (strcmp(argv[i], opts[j]) != 0)
				continue;
			if (i + 1 >= argc) {
				fprintf(stderr, "airlock: %s %s: %s needs a value\n",
				    argv[0], argv[first - 1], opts[j]);
				return -1;
			}
			vals[j] = argv[++i];
			found = 1;
			break;
		}
		if (found)
			continue;
		if (argv[i][0] == '-' && argv[i][1] != '\0') {
			fprintf(stderr, "airlock: %s %s: unknown option '%s'\n",
			    argv[0], argv[first - 1], argv[i]);
			return -1;
		}
		if (*pos != NULL) {
			fprintf(stderr, "airlock: %s %s: unexpected argument '%s'\n",
			    argv[0], argv[first - 1], argv[i]);
			return -1;
		}
		*pos = argv[i];
	}
	return 0;
}

static void
sandbox_usage(void)
{
	cli_group_usage(&cli_sandbox_group, stderr);
}

static int
sandbox_create(const struct cli_ctx *ctx, int argc, char **argv)
{
	static const char *const opts[] = { "--policy", "--owner" };
	const char *vals[2] = { NULL, NULL }, *name;
	struct airlock_config cfg;
	struct netctl_request req;
	struct sandbox sb;
	char err[1024], h[NETADDR_STRLEN], g[NETADDR_STRLEN];

	if (cli_opts_parse(argc, argv, 2, opts, vals, 2, &name, NULL) == -1 ||
	    name == NULL || vals[0] == NULL) {
		sandbox_usage();
		return 2;
	}
	if (cli_config(ctx, &cfg) == -1)
		return 2;
	memset(&req, 0, sizeof(req));
	req.nr_name = name;
	req.nr_policy = vals[0];
	req.nr_owner = vals[1];
	if (netctl_sandbox_create(&cfg, &req, &sb, err, sizeof(err)) == -1) {
		fprintf(stderr, "airlock: sandbox create %s: %s\n", name, err);
		return 1;
	}
	cli_sandbox_notify(&cfg, "sandbox_add", sb.sb_name);
	printf("sandbox %s: tap %s, host %s/%u, guest %s\n", sb.sb_name,
	    sb.sb_iface, netaddr_fmt(&sb.sb_host_ip, h, sizeof(h)), sb.sb_prefix,
	    netaddr_fmt(&sb.sb_guest_ip, g, sizeof(g)));
	return 0;
}

static int
sandbox_destroy(const struct cli_ctx *ctx, int argc, char **argv)
{
	struct airlock_config cfg;
	const char *name;
	char err[1024];

	if (cli_opts_parse(argc, argv, 2, NULL, NULL, 0, &name, NULL) == -1 ||
	    name == NULL) {
		sandbox_usage();
		return 2;
	}
	if (cli_config(ctx, &cfg) == -1)
		return 2;
	/*
	 * The VM first, while its tap still exists.  If libvirt cannot be
	 * reached, the rest still goes: a VM left running on a deleted tap
	 * reaches nothing.
	 */
	if (sandbox_name_is_valid(name) &&
	    vmm_sandbox_purge(&cfg, name, err, sizeof(err)) == -1)
		fprintf(stderr, "airlock: warning: sandbox destroy %s: VM: %s\n",
		    name, err);
	if (netctl_sandbox_destroy(&cfg, name, SANDBOX_KIND_TAP, err,
	    sizeof(err)) == -1) {
		fprintf(stderr, "airlock: sandbox destroy %s: %s\n", name, err);
		return 1;
	}
	cli_sandbox_notify(&cfg, "sandbox_remove", name);
	printf("destroyed sandbox %s\n", name);
	return 0;
}

static json_t *
cli_sandbox_json(const struct sandbox *sb)
{
	char h[NETADDR_STRLEN], g[NETADDR_STRLEN];

	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:s, s:s, s:s, s:I}",
	    "name", sb->sb_name,
	    "kind", sb->sb_kind == SANDBOX_KIND_TAP ? "tap" : "attach",
	    "iface", sb->sb_iface,
	    "host_ip", netaddr_fmt(&sb->sb_host_ip, h, sizeof(h)),
	    "guest_ip", netaddr_fmt(&sb->sb_guest_ip, g, sizeof(g)),
	    "prefix", (int)sb->sb_prefix, "mac", sb->sb_mac,
	    "policy", sb->sb_policy, "policy_hash", sb->sb_policy_hash,
	    "created", (json_int_t)sb->sb_created);
}

static int
sandbox_ls(const struct cli_ctx *ctx, int argc, char **argv)
{
	struct airlock_config cfg;
	struct sandbox *v = NULL;
	const char *pos;
	json_t *arr = NULL, *o;
	char h[NETADDR_STRLEN], g[NETADDR_STRLEN];
	int n, i, json = ctx->json, rv = 1;

	if (cli_opts_parse(argc, argv, 2, NULL, NULL, 0, &pos, &json) == -1 ||
	    pos != NULL) {
		sandbox_usage();
		return 2;
	}
	if (cli_config(ctx, &cfg) == -1)
		return 2;
	if ((n = cli_sandbox_list(&cfg, &v)) == -1)
		return 1;
	if (json) {
		if ((arr = json_array()) == NULL)
			goto out;
		for (i = 0; i < n; i++)
			if ((o = cli_sandbox_json(&v[i])) == NULL ||
			    json_array_append_new(arr, o) == -1)
				goto out;
		if (json_dumpf(arr, stdout, JSON_COMPACT) == -1)
			goto out;
		putchar('\n');
	} else {
		printf("%-12s %-6s %-15s %-18s %-15s %s\n", "NAME", "KIND",
		    "IFACE", "HOST", "GUEST", "POLICY");
		for (i = 0; i < n; i++) {
			char host[NETADDR_STRLEN + 4];

			snprintf(host, sizeof(host), "%s/%u",
			    netaddr_fmt(&v[i].sb_host_ip, h, sizeof(h)),
			    v[i].sb_prefix);
			printf("%-12s %-6s %-15s %-18s %-15s %s\n", v[i].sb_name,
			    v[i].sb_kind == SANDBOX_KIND_TAP ? "tap" : "attach",
			    v[i].sb_iface, host,
			    netaddr_fmt(&v[i].sb_guest_ip, g, sizeof(g)),
			    v[i].sb_policy);
		}
	}
	rv = 0;
 out:
	json_decref(arr);
	free(v);
	return rv;
}

static const struct cli_sub sandbox_subs[] = {
	{ "create", sandbox_create, "NAME --policy FILE [--owner USER]" },
	{ "destroy", sandbox_destroy, "NAME" },
	{ "ls", sandbox_ls, "[--json]" },
	{ NULL, NULL, NULL }
};
const struct cli_group cli_sandbox_group = { "sandbox", sandbox_subs,
    CLI_UNKNOWN_QUIET, NULL };
