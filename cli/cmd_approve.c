/*
 * cli/cmd_approve.c: airlock approve ls|allow|deny, pending approvals (a policy's
 * "unknown": "ask") through airlockd's control socket.
 *
 *	airlock approve ls [--json] [SANDBOX]
 *	airlock approve allow SANDBOX NAME [--port N] [--once | --for DURATION |
 *	    --always]
 *	airlock approve deny SANDBOX NAME [--port N] [--always]
 *
 * --once (the default) and --for live in airlockd's memory; --always (and deny
 * --always) write STATE_DIR/approvals/SANDBOX.json, an ordinary policy file that
 * airlockd merges after the sandbox's policy as an extra layer: this command
 * writes it (root, atomically, 0600), checks it with the sandbox's policy by the
 * same loader, and then asks airlockd to read that sandbox again.
 */
#include <sys/stat.h>
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "control.h"
#include "file.h"
#include "hostname.h"
#include "policy.h"
#include "sandbox.h"

#define approve_usage(sub, ...) \
	cli_group_usage_error(&cli_approve_group, (sub), __VA_ARGS__)

static int
approve_cmd_ls(const struct cli_ctx *ctx, int argc, char **argv)
{
	json_t *reply, *sb, *e, *req;
	const char *only = NULL;
	char *raw, *line;
	size_t i, k;
	int json = ctx->json, rc, any = 0;

	for (i = 2; i < (size_t)argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = 1;
		else if (argv[i][0] != '-' && only == NULL)
			only = argv[i];
		else {
			cli_arg_refused(argv, argv[i]);
			return 2;
		}
	}
	if (only != NULL && !sandbox_name_is_valid(only))
		return approve_usage("ls", "bad sandbox name '%s'", only);
	req = json_pack("{s:s}", "cmd", "approve_ls");
	if (only != NULL)
		json_object_set_new(req, "sandbox", json_string(only));
	line = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	if (line == NULL)
		return 1;
	reply = cli_ctl_request(ctx, "approve ls", line, CONTROL_TIMEOUT_MS, &raw,
	    &rc);
	free(line);
	if (reply == NULL)
		return rc;
	if (json) {
		printf("%s\n", raw);
		goto out;
	}
	json_array_foreach(json_object_get(reply, "sandboxes"), i, sb) {
		const char *name = json_string_value(json_object_get(sb, "sandbox"));
		json_int_t dropped = json_integer_value(json_object_get(sb,
		    "dropped"));

		json_array_foreach(json_object_get(sb, "pending"), k, e) {
			json_t *m = json_object_get(e, "method");
			json_int_t port = json_integer_value(json_object_get(e,
			    "port"));
			char dest[HOSTNAME_MAX + 8];

			if (port == 0)
				snprintf(dest, sizeof(dest), "%s (dns)",
				    json_string_value(json_object_get(e, "name")));
			else
				snprintf(dest, sizeof(dest), "%s:%lld",
				    json_string_value(json_object_get(e, "name")),
				    (long long)port);
			if (!any)
				printf("%-11s %-10s %-32s %5s  %-20s  %-20s  %s\n",
				    "SANDBOX", "ID", "NAME", "COUNT", "FIRST SEEN",
				    "LAST SEEN", "REQUEST");
			any = 1;
			printf("%-11s %-10s %-32s %5lld  %-20s  %-20s  %s%s%s\n",
			    name, json_string_value(json_object_get(e, "id")), dest,
			    (long long)json_integer_value(json_object_get(e,
			    "count")),
			    json_string_value(json_object_get(e, "first_seen")),
			    json_string_value(json_object_get(e, "last_seen")),
			    json_is_string(m) ? json_string_value(m) : "-",
			    json_is_string(m) ? " " : "", json_is_string(m) ?
			    json_string_value(json_object_get(e, "path")) : "");
		}
		json_array_foreach(json_object_get(sb, "grants"), k, e) {
			json_t *x = json_object_get(e, "expires_in");

			printf("%s: allowed %s:%lld %s", name,
			    json_string_value(json_object_get(e, "name")),
			    (long long)json_integer_value(json_object_get(e,
			    "port")), json_is_true(json_object_get(e, "once")) ?
			    "once" : "for");
			if (json_is_integer(x))
				printf(" %llds more", (long long)json_integer_value(x));
			printf("\n");
		}
		if (dropped > 0)
			printf("%s: %lld pending approvals dropped for room\n", name,
			    (long long)dropped);
	}
	if (!any)
		printf("no pending approvals\n");
 out:
	json_decref(reply);
	free(raw);
	return 0;
}

/*
 * The approvals file of sandbox, with a rule for name: allow on port, or (deny)
 * every port; an allow rule of the file for name goes when a deny comes in, and a
 * deny rule of the file refuses a later allow (remove it from the file first).
 * Written beside as a temporary file, checked with the sandbox's policy by the
 * loader, then renamed into place.  0 (*changed says whether it was), 1 refused
 * (said), 2 on errors (said).
 */
static int
approve_file(const struct airlock_config *cfg, const char *sandbox,
    const char *name, unsigned int port, int allow, int *changed)
{
	struct policy_errors errs = { 0 };
	struct policy_bundle b = { NULL, 0 };
	struct sandbox sb;
	struct policy *p;
	const char *files[2];
	char path[PATH_MAX], tmp[PATH_MAX + 8], dir[PATH_MAX], id[SANDBOX_APPROVAL_ID_LEN + 1];
	char rid[64], pname[64], line[1536], *buf = NULL, *out = NULL;
	json_t *doc = NULL, *rules, *r, *rule;
	json_error_t jerr;
	size_t len, i;
	int fd = -1, rc = 2, n;

	*changed = 0;
	if (sandbox_load(cfg->state_dir, sandbox, &sb) == -1) {
		fprintf(stderr, "airlock: approve: sandbox %s: %s\n", sandbox,
		    errno == ENOENT ? "no such sandbox" : strerror(errno));
		return 2;
	}
	if (sandbox_approvals_path(cfg->state_dir, sandbox, path, sizeof(path)) == -1 ||
	    snprintf(dir, sizeof(dir), "%s/approvals", cfg->state_dir) >=
	    (int)sizeof(dir) || snprintf(tmp, sizeof(tmp), "%s.tmp", path) >=
	    (int)sizeof(tmp)) {
		fprintf(stderr, "airlock: approve: state directory path too long\n");
		return 2;
	}
	if (file_read(path, POLICY_FILE_MAX, &buf, &len) == 0) {
		doc = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
		if (!json_is_object(doc) ||
		    !json_is_array(json_object_get(doc, "rules"))) {
			fprintf(stderr, "airlock: approve: %s is not an approvals "
			    "file (a policy with \"rules\"): fix or remove it\n",
			    path);
			goto out;
		}
	} else if (errno == ENOENT) {
		snprintf(pname, sizeof(pname), "approvals-%s", sandbox);
		doc = json_pack("{s:s, s:[]}", "policy", pname, "rules");
	} else {
		fprintf(stderr, "airlock: approve: %s: %s\n", path, strerror(errno));
		goto out;
	}
	if (doc == NULL)
		goto out;
	rules = json_object_get(doc, "rules");
	sandbox_approval_id(sandbox, name, allow ? (uint16_t)port : 0, id);
	snprintf(rid, sizeof(rid), "approval-%s%s", allow ? "" : "deny-", id);
	for (i = 0; i < json_array_size(rules); ) {
		const char *h, *act;
		json_t *ports;
		size_t k;

		r = json_array_get(rules, i);
		h = json_string_value(json_object_get(r, "host"));
		act = json_string_value(json_object_get(r, "action"));
		if (h == NULL || strcmp(h, name) != 0) {
			i++;
			continue;
		}
		if (act != NULL && strcmp(act, "deny") == 0) {
			if (!allow)
				goto done;	/* denied already */
			fprintf(stderr, "airlock: approve: %s is denied for sandbox "
			    "%s by rule %s of %s (approve deny --always): remove "
			    "that rule first\n", name, sandbox,
			    json_string_value(json_object_get(r, "id")), path);
			rc = 1;
			goto out;
		}
		if (!allow) {
			/* A deny comes in: the name's allow rules go. */
			json_array_remove(rules, i);
			continue;
		}
		ports = json_object_get(r, "ports");
		for (k = 0; k < json_array_size(ports); k++)
			if (json_integer_value(json_array_get(ports, k)) ==
			    (json_int_t)port)
				goto done;	/* allowed already */
		i++;
	}
	if (allow)
		rule = json_pack("{s:s, s:s, s:[i]}", "id", rid, "host", name,
		    "ports", (int)port);
	else
		rule = json_pack("{s:s, s:s, s:s}", "id", rid, "action", "deny",
		    "host", name);
	if (rule == NULL || json_array_append_new(rules, rule) == -1)
		goto out;
	if ((out = json_dumps(doc, JSON_INDENT(2))) == NULL)
		goto out;
	if (mkdir(dir, 0700) == -1 && errno != EEXIST) {
		fprintf(stderr, "airlock: approve: %s: %s\n", dir, strerror(errno));
		goto out;
	}
	(void)unlink(tmp);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
	    0600)) == -1 || (n = (int)write(fd, out, strlen(out))) !=
	    (int)strlen(out) || write(fd, "\n", 1) != 1 || fsync(fd) == -1) {
		fprintf(stderr, "airlock: approve: %s: %s\n", tmp, strerror(errno));
		goto out;
	}
	close(fd);
	fd = -1;
	/* The same loader as airlockd: the policy, then this file as a layer. */
	files[0] = sb.sb_policy;
	files[1] = tmp;
	if (policy_bundle_read(&b, files[0]) == -1 ||
	    policy_bundle_read(&b, files[1]) == -1)
		goto out;
	if ((p = policy_load_layers(&b, files, 2, &errs)) == NULL) {
		for (i = 0; i < errs.n; i++) {
			policy_error_fmt(&errs.v[i], line, sizeof(line));
			fprintf(stderr, "airlock: approve: %s\n", line);
		}
		fprintf(stderr, "airlock: approve: %s not changed\n", path);
		(void)unlink(tmp);
		goto out;
	}
	policy_free(p);
	if (rename(tmp, path) == -1) {
		fprintf(stderr, "airlock: approve: %s: %s\n", path, strerror(errno));
		(void)unlink(tmp);
		goto out;
	}
	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) != -1)
		(void)fsync(fd);
	*changed = 1;
 done:
	rc = 0;
 out:
	if (fd != -1)
		close(fd);
	policy_bundle_free(&b);
	policy_errors_free(&errs);
	json_decref(doc);
	free(buf);
	free(out);
	return rc;
}

/* allow (allow 1) and deny: SANDBOX NAME [--port N] [--once|--for D|--always]. */
static int
approve_decide(const struct cli_ctx *ctx, int argc, char **argv, int allow)
{
	struct airlock_config cfg;
	const char *sub = argv[1], *scope = NULL, *pos[2] = { NULL, NULL };
	char name[HOSTNAME_MAX + 1], what[64], *line, *raw, *end;
	long long seconds = 0;
	unsigned long port = 443;
	json_t *req, *reply;
	int i, npos = 0, json = ctx->json, rc, changed = 0;

	for (i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = 1;
		else if (strcmp(argv[i], "--port") == 0) {
			if (i + 1 >= argc)
				return approve_usage(sub, "--port needs a value");
			errno = 0;
			port = strtoul(argv[++i], &end, 10);
			if (errno != 0 || *end != '\0' || argv[i][0] == '\0' ||
			    argv[i][0] == '-' || port < 1 || port > 65535)
				return approve_usage(sub, "bad port '%s'", argv[i]);
		} else if (strcmp(argv[i], "--always") == 0 ||
		    (allow && strcmp(argv[i], "--once") == 0)) {
			if (scope != NULL)
				return approve_usage(sub, "one of --once, --for, "
				    "--always");
			scope = argv[i] + 2;
		} else if (allow && strcmp(argv[i], "--for") == 0) {
			if (scope != NULL)
				return approve_usage(sub, "one of --once, --for, "
				    "--always");
			if (i + 1 >= argc)
				return approve_usage(sub, "--for needs a duration");
			if (cli_duration_parse(argv[++i], &seconds) == -1)
				return approve_usage(sub, "bad duration '%s' (e.g. "
				    "90s, 10m, 2h, 1d; at most 30d)", argv[i]);
			scope = "for";
		} else if (argv[i][0] == '-' || npos == 2) {
			cli_arg_refused(argv, argv[i]);
			return 2;
		} else
			pos[npos++] = argv[i];
	}
	if (npos != 2)
		return approve_usage(sub, "needs SANDBOX and NAME");
	if (!sandbox_name_is_valid(pos[0]))
		return approve_usage(sub, "bad sandbox name '%s'", pos[0]);
	if (hostname_normalize(pos[1], strlen(pos[1]), name) != HOSTNAME_OK ||
	    strchr(name, '*') != NULL)
		return approve_usage(sub, "'%s' is not a host name (one name, no "
		    "wildcard)", pos[1]);
	if (scope == NULL)
		scope = allow ? "once" : "pending";
	if (strcmp(scope, "always") == 0) {
		if (geteuid() != 0) {
			fprintf(stderr, "airlock: approve %s --always: root only\n",
			    sub);
			return 1;
		}
		if (cli_config(ctx, &cfg) == -1)
			return 2;
		if ((rc = approve_file(&cfg, pos[0], name, (unsigned int)port, allow,
		    &changed)) != 0)
			return rc;
	}
	req = json_pack("{s:s, s:s, s:s, s:s, s:i, s:s}", "cmd", "approve",
	    "action", allow ? "allow" : "deny", "sandbox", pos[0], "name", name,
	    "port", (int)port, "scope", scope);
	if (req != NULL && seconds > 0)
		json_object_set_new(req, "seconds", json_integer(seconds));
	line = req != NULL ? json_dumps(req, JSON_COMPACT) : NULL;
	json_decref(req);
	if (line == NULL)
		return 1;
	reply = cli_ctl_request(ctx, allow ? "approve allow" : "approve deny",
	    line, CONTROL_TIMEOUT_MS, &raw, &rc);
	free(line);
	if (reply == NULL) {
		if (strcmp(scope, "always") == 0 && control_is_not_running(errno)) {
			printf("%s: %s written; airlockd is not running: it takes "
			    "effect when it starts\n", pos[0], changed ?
			    "approvals file" : "approvals file already had it,");
			return 0;
		}
		return rc;
	}
	if (strcmp(scope, "for") == 0)
		snprintf(what, sizeof(what), "for %llds", seconds);
	else
		snprintf(what, sizeof(what), "%s", strcmp(scope, "pending") == 0 ?
		    "(pending entry dropped)" : scope);
	if (json)
		printf("%s\n", raw);
	else
		printf("%s: %s %s:%lu %s (id %s)\n", pos[0], allow ? "allowed" :
		    "denied", name, port, what,
		    json_string_value(json_object_get(reply, "id")));
	json_decref(reply);
	free(raw);
	return 0;
}

static int
approve_cmd_allow(const struct cli_ctx *ctx, int argc, char **argv)
{
	return approve_decide(ctx, argc, argv, 1);
}

static int
approve_cmd_deny(const struct cli_ctx *ctx, int argc, char **argv)
{
	return approve_decide(ctx, argc, argv, 0);
}

static const struct cli_sub approve_subs[] = {
	{ "ls", approve_cmd_ls, "[--json] [SANDBOX]" },
	{ "allow", approve_cmd_allow, "SANDBOX NAME [--port N] [--once | --for "
	  "DURATION | --always]" },
	{ "deny", approve_cmd_deny, "SANDBOX NAME [--port N] [--always]" },
	{ NULL, NULL, NULL }
};
const struct cli_group cli_approve_group = { "approve", approve_subs,
    CLI_UNKNOWN_SUBCOMMAND, NULL };
