/*
 * cli/cmd_vm.c: airlock vm start|stop|destroy|ls|console.  The work is in vmm/
 * (include/vmm.h).
 *
 *	airlock vm start NAME [--image default|DIR | --disk FILE.qcow2]
 *	    [--memory MiB] [--vcpus N] [--agent FILE]
 *	airlock vm stop NAME [--timeout SEC]	graceful, then destroyed
 *	airlock vm destroy NAME
 *	airlock vm ls [--json]
 *	airlock vm console NAME [--wait MARKER [--timeout SEC]]
 *	    the console log; with --wait, followed until a line containing MARKER
 *	    (exit 0) or the timeout / the VM's end (exit 1)
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"
#include "vmm.h"

static void
vm_usage(void)
{
	cli_group_usage(&cli_vm_group, stderr);
}

/* A decimal in lo..hi.  Returns 0 or -1 (message printed). */
static int
vm_number(const char *opt, const char *s, unsigned long lo, unsigned long hi,
    unsigned int *out)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (s[0] < '0' || s[0] > '9' || *end != '\0' || errno != 0 || v < lo ||
	    v > hi) {
		fprintf(stderr, "airlock: %s must be a number in %lu..%lu\n", opt,
		    lo, hi);
		return -1;
	}
	*out = (unsigned int)v;
	return 0;
}

static int
vm_start(const struct cli_ctx *ctx, int argc, char **argv)
{
	static const char *const opts[] = { "--image", "--disk", "--memory",
	    "--vcpus", "--agent" };
	const char *vals[5] = { NULL, NULL, NULL, NULL, NULL }, *name;
	struct airlock_config cfg;
	struct vmm_start_opts o;
	struct vmm_started st;
	char err[1024], disk[PATH_MAX], agent[PATH_MAX];

	memset(&o, 0, sizeof(o));
	if (cli_opts_parse(argc, argv, 2, opts, vals, 5, &name, NULL) == -1 ||
	    name == NULL) {
		vm_usage();
		return 2;
	}
	if ((vals[2] != NULL && vm_number("--memory", vals[2], VMM_MEMORY_MIN,
	    VMM_MEMORY_MAX, &o.vs_memory) == -1) ||
	    (vals[3] != NULL && vm_number("--vcpus", vals[3], 1, VMM_VCPUS_MAX,
	    &o.vs_vcpus) == -1))
		return 2;
	if (vals[0] != NULL && vals[1] != NULL) {
		fprintf(stderr, "airlock: --image and --disk exclude each other\n");
		return 2;
	}
	/* libvirtd opens the disk, maybe from another directory: make it absolute. */
	if (vals[1] != NULL) {
		if (realpath(vals[1], disk) == NULL) {
			fprintf(stderr, "airlock: --disk %s: %s\n", vals[1],
			    strerror(errno));
			return 2;
		}
		o.vs_disk = disk;
	}
	if (vals[4] != NULL) {
		if (realpath(vals[4], agent) == NULL) {
			fprintf(stderr, "airlock: --agent %s: %s\n", vals[4],
			    strerror(errno));
			return 2;
		}
		o.vs_agent = agent;
	}
	o.vs_name = name;
	o.vs_image = vals[0];
	if (cli_config(ctx, &cfg) == -1)
		return 2;
	if (vmm_start(&cfg, &o, &st, err, sizeof(err)) == -1) {
		fprintf(stderr, "airlock: vm start %s: %s\n", name, err);
		return 1;
	}
	if (st.vd_ca_reissued)
		fprintf(stderr, "airlock: sandbox %s: the names its policy inspects "
		    "changed: made a new CA; run `airlock reload` so that "
		    "airlockd signs with it\n", name);
	printf("vm %s: domain %s (%s), CA %s, %u placeholder%s, console %s\n",
	    name, st.vd_domain, st.vd_type, st.vd_ca, st.vd_nenv,
	    st.vd_nenv == 1 ? "" : "s", st.vd_console);
	return 0;
}

static int
vm_stop(const struct cli_ctx *ctx, int argc, char **argv)
{
	static const char *const opts[] = { "--timeout" };
	const char *vals[1] = { NULL }, *name;
	struct airlock_config cfg;
	unsigned int timeout = VMM_STOP_TIMEOUT;
	char err[1024];
	int r;

	if (cli_opts_parse(argc, argv, 2, opts, vals, 1, &name, NULL) == -1 ||
	    name == NULL) {
		vm_usage();
		return 2;
	}
	if (vals[0] != NULL && vm_number("--timeout", vals[0], 0, 3600,
	    &timeout) == -1)
		return 2;
	if (cli_config(ctx, &cfg) == -1)
		return 2;
	if ((r = vmm_stop(&cfg, name, timeout, err, sizeof(err))) == -1) {
		fprintf(stderr, "airlock: vm stop %s: %s\n", name, err);
		return 1;
	}
	printf("vm %s: %s\n", name, r == 0 ? "powered off" :
	    "did not power off in time: destroyed");
	return 0;
}

static int
vm_destroy(const struct cli_ctx *ctx, int argc, char **argv)
{
	struct airlock_config cfg;
	const char *name;
	char err[1024];

	if (cli_opts_parse(argc, argv, 2, NULL, NULL, 0, &name, NULL) == -1 ||
	    name == NULL) {
		vm_usage();
		return 2;
	}
	if (cli_config(ctx, &cfg) == -1)
		return 2;
	if (vmm_destroy(&cfg, name, err, sizeof(err)) == -1) {
		fprintf(stderr, "airlock: vm destroy %s: %s\n", name, err);
		return 1;
	}
	return 0;
}

static int
vm_ls(const struct cli_ctx *ctx, int argc, char **argv)
{
	struct airlock_config cfg;
	struct vmm_vm *v = NULL;
	const char *pos;
	json_t *arr = NULL, *o;
	char err[1024];
	int n, i, json = ctx->json, rv = 1;

	if (cli_opts_parse(argc, argv, 2, NULL, NULL, 0, &pos, &json) == -1 ||
	    pos != NULL) {
		vm_usage();
		return 2;
	}
	if (cli_config(ctx, &cfg) == -1)
		return 2;
	if ((n = vmm_list(&cfg, &v, err, sizeof(err))) == -1) {
		fprintf(stderr, "airlock: vm ls: %s\n", err);
		return 1;
	}
	if (json) {
		if ((arr = json_array()) == NULL)
			goto out;
		for (i = 0; i < n; i++) {
			o = json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:s}",
			    "name", v[i].vm_name, "domain", v[i].vm_domain,
			    "state", v[i].vm_state, "type", v[i].vm_type,
			    "id", v[i].vm_id, "memory_mib", (int)v[i].vm_memory,
			    "vcpus", (int)v[i].vm_vcpus,
			    "console", v[i].vm_console);
			if (o == NULL || json_array_append_new(arr, o) == -1)
				goto out;
		}
		if (json_dumpf(arr, stdout, JSON_COMPACT) == -1)
			goto out;
		putchar('\n');
	} else {
		printf("%-12s %-20s %-10s %-5s %6s %5s\n", "NAME", "DOMAIN",
		    "STATE", "TYPE", "MiB", "VCPUS");
		for (i = 0; i < n; i++)
			printf("%-12s %-20s %-10s %-5s %6u %5u\n", v[i].vm_name,
			    v[i].vm_domain, v[i].vm_state, v[i].vm_type,
			    v[i].vm_memory, v[i].vm_vcpus);
	}
	rv = 0;
 out:
	json_decref(arr);
	free(v);
	return rv;
}

static int
vm_console(const struct cli_ctx *ctx, int argc, char **argv)
{
	static const char *const opts[] = { "--wait", "--timeout" };
	const char *vals[2] = { NULL, NULL }, *name;
	struct airlock_config cfg;
	unsigned int timeout = 60;
	char err[1024];
	int r;

	if (cli_opts_parse(argc, argv, 2, opts, vals, 2, &name, NULL) == -1 ||
	    name == NULL || (vals[1] != NULL && vals[0] == NULL)) {
		vm_usage();
		return 2;
	}
	if (vals[0] != NULL && vals[0][0] == '\0') {
		fprintf(stderr, "airlock: --wait needs a non-empty marker\n");
		return 2;
	}
	if (vals[1] != NULL && vm_number("--timeout", vals[1], 0, 86400,
	    &timeout) == -1)
		return 2;
	if (cli_config(ctx, &cfg) == -1)
		return 2;
	r = vmm_console_follow(&cfg, name, vals[0], timeout * 1000, stdout, err,
	    sizeof(err));
	if (r == -1) {
		fprintf(stderr, "airlock: vm console %s: %s\n", name, err);
		return 1;
	}
	if (r == 0) {
		fprintf(stderr, "airlock: vm console %s: no line with '%s' "
		    "(timeout %u s, or the VM stopped)\n", name, vals[0], timeout);
		return 1;
	}
	return 0;
}

static const struct cli_sub vm_subs[] = {
	{ "start", vm_start, "NAME [--image default|DIR | --disk FILE.qcow2] "
	  "[--memory MiB] [--vcpus N] [--agent FILE]" },
	{ "stop", vm_stop, "NAME [--timeout SEC]" },
	{ "destroy", vm_destroy, "NAME" },
	{ "ls", vm_ls, "[--json]" },
	{ "console", vm_console, "NAME [--wait MARKER [--timeout SEC]]" },
	{ NULL, NULL, NULL }
};
const struct cli_group cli_vm_group = { "vm", vm_subs, CLI_UNKNOWN_COMMAND, NULL };
