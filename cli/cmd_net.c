/*
 * cli/cmd_net.c: airlock net attach|detach|status.
 *
 *	airlock net attach NAME --policy FILE --iface IFACE --guest-ip IP
 *	    [--host-ip IP] [--mac MAC]
 *	airlock net detach NAME
 *	airlock net status [--json]	exit 0: as installed; 1: drift; 2: error
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"
#include "netctl.h"
#include "sandbox.h"

static void
net_usage(void)
{
	cli_group_usage(&cli_net_group, stderr);
}

static int
net_attach(const struct cli_ctx *ctx, int argc, char **argv)
{
	static const char *const opts[] = { "--policy", "--iface", "--guest-ip",
	    "--host-ip", "--mac" };
	const char *vals[5] = { NULL, NULL, NULL, NULL, NULL }, *name;
	struct airlock_config cfg;
	struct netctl_request req;
	struct sandbox sb;
	char err[1024], h[NETADDR_STRLEN];

	if (cli_opts_parse(argc, argv, 2, opts, vals, 5, &name, NULL) == -1 ||
	    name == NULL || vals[0] == NULL || vals[1] == NULL ||
	    vals[2] == NULL) {
		net_usage();
		return 2;
	}
	if (cli_config(ctx, &cfg) == -1)
		return 2;
	memset(&req, 0, sizeof(req));
	req.nr_name = name;
	req.nr_policy = vals[0];
	req.nr_iface = vals[1];
	req.nr_guest_ip = vals[2];
	req.nr_host_ip = vals[3];
	req.nr_mac = vals[4];
	if (netctl_sandbox_attach(&cfg, &req, &sb, err, sizeof(err)) == -1) {
		fprintf(stderr, "airlock: net attach %s: %s\n", name, err);
		return 1;
	}
	cli_sandbox_notify(&cfg, "sandbox_add", sb.sb_name);
	printf("sandbox %s: enforcing on %s (host %s, guest %s)\n", sb.sb_name,
	    sb.sb_iface, netaddr_fmt(&sb.sb_host_ip, h, sizeof(h)), vals[2]);
	return 0;
}

static int
net_detach(const struct cli_ctx *ctx, int argc, char **argv)
{
	struct airlock_config cfg;
	const char *name;
	char err[1024];

	if (cli_opts_parse(argc, argv, 2, NULL, NULL, 0, &name, NULL) == -1 ||
	    name == NULL) {
		net_usage();
		return 2;
	}
	if (cli_config(ctx, &cfg) == -1)
		return 2;
	if (netctl_sandbox_destroy(&cfg, name, SANDBOX_KIND_ATTACH, err,
	    sizeof(err)) == -1) {
		fprintf(stderr, "airlock: net detach %s: %s\n", name, err);
		return 1;
	}
	cli_sandbox_notify(&cfg, "sandbox_remove", name);
	return 0;
}

static int
net_status_json(const struct netctl_status *st)
{
	json_t *root, *sbs, *drift, *o;
	size_t i;
	int rv = -1;

	if ((root = json_object()) == NULL)
		return -1;
	if ((sbs = json_array()) == NULL ||
	    json_object_set_new(root, "sandboxes", sbs) == -1 ||
	    (drift = json_array()) == NULL ||
	    json_object_set_new(root, "drift", drift) == -1)
		goto out;
	for (i = 0; i < st->st_nsb; i++) {
		const struct netctl_sb_status *s = &st->st_sb[i];

		o = json_pack("{s:s, s:s, s:b, s:i, s:i, s:b, s:i}",
		    "name", s->ss_name, "iface", s->ss_iface,
		    "iface_exists", s->ss_iface_exists,
		    "elements_expected", s->ss_elems_expected,
		    "elements_present", s->ss_elems_present,
		    "chain_ok", s->ss_chain_ok, "path_rules", s->ss_path_rules);
		if (o == NULL || json_array_append_new(sbs, o) == -1)
			goto out;
	}
	for (i = 0; i < st->st_ndrift; i++)
		if (json_array_append_new(drift, json_string(st->st_drift[i])) ==
		    -1)
			goto out;
	if (json_object_set_new(root, "inet_table",
	    json_boolean(st->st_inet_table)) == -1 ||
	    json_object_set_new(root, "netdev_table",
	    json_boolean(st->st_netdev_table)) == -1 ||
	    json_object_set_new(root, "rules", json_integer(st->st_rules)) == -1 ||
	    json_object_set_new(root, "chains", json_integer(st->st_chains)) ==
	    -1 ||
	    json_object_set_new(root, "generation",
	    json_integer(st->st_genid)) == -1)
		goto out;
	if (json_dumpf(root, stdout, JSON_COMPACT) == -1)
		goto out;
	putchar('\n');
	rv = 0;
 out:
	json_decref(root);
	return rv;
}

static int
net_status(const struct cli_ctx *ctx, int argc, char **argv)
{
	struct airlock_config cfg;
	struct netctl_params p;
	struct netctl_status *st;
	struct sandbox *v = NULL;
	const char *pos;
	char err[1024];
	size_t i;
	int n, json = ctx->json, rv = 2;

	if (cli_opts_parse(argc, argv, 2, NULL, NULL, 0, &pos, &json) == -1 ||
	    pos != NULL) {
		net_usage();
		return 2;
	}
	if (cli_config(ctx, &cfg) == -1)
		return 2;
	if (netctl_params_from_config(&cfg, &p, err, sizeof(err)) == -1) {
		fprintf(stderr, "airlock: net status: %s\n", err);
		return 2;
	}
	if ((n = cli_sandbox_list(&cfg, &v)) == -1)
		return 2;
	if ((st = netctl_status_get(&p, v, (size_t)n, err, sizeof(err))) ==
	    NULL) {
		fprintf(stderr, "airlock: net status: %s\n", err);
		goto out;
	}
	if (json) {
		if (net_status_json(st) == -1) {
			fprintf(stderr, "airlock: net status: out of memory\n");
			goto out;
		}
	} else {
		printf("tables: inet airlock %s, netdev airlock %s; %d chains, "
		    "%d rules (generation %u)\n",
		    st->st_inet_table ? "present" : "absent",
		    st->st_netdev_table ? "present" : "absent", st->st_chains,
		    st->st_rules, st->st_genid);
		for (i = 0; i < st->st_nsb; i++) {
			const struct netctl_sb_status *s = &st->st_sb[i];

			printf("sandbox %s: iface %s%s, elements %d/%d, ingress "
			    "chain %s, %d rules on its packet path\n", s->ss_name,
			    s->ss_iface, s->ss_iface_exists ? "" : " (absent)",
			    s->ss_elems_present, s->ss_elems_expected,
			    s->ss_chain_ok ? "ok" : "WRONG", s->ss_path_rules);
		}
		for (i = 0; i < st->st_ndrift; i++)
			printf("drift: %s\n", st->st_drift[i]);
		if (st->st_ndrift == 0)
			printf("no drift: the kernel holds what airlock "
			    "installed\n");
	}
	rv = st->st_ndrift > 0 ? 1 : 0;
 out:
	netctl_status_free(st);
	free(v);
	return rv;
}

static const struct cli_sub net_subs[] = {
	{ "attach", net_attach, "NAME --policy FILE --iface IFACE --guest-ip IP "
	  "[--host-ip IP] [--mac MAC]" },
	{ "detach", net_detach, "NAME" },
	{ "status", net_status, "[--json]" },
	{ NULL, NULL, NULL }
};
const struct cli_group cli_net_group = { "net", net_subs, CLI_UNKNOWN_QUIET, NULL };
