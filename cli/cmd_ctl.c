/*
 * cli/cmd_ctl.c: commands that talk to the running airlockd over its control socket.
 *
 *	airlock reload [--json]		re-read every sandbox record and policy
 *	airlock stats [--json]		per sandbox: live connections, allowed, denied, bytes;
 *					the audit chain's head (seq, hash)
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"
#include "control.h"

/* Reload may parse many policies; give it longer than a plain query. */
#define CMD_RELOAD_TIMEOUT_MS	60000

/* Parses "--json" after the subcommand.  0, or -1 (usage printed). */
static int
cmd_ctl_args(const struct cli_ctx *ctx, int argc, char **argv, int *json)
{
	int i;

	*json = ctx->json;
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			*json = 1;
		else {
			fprintf(stderr, "airlock: %s: %s '%s'\n", argv[0],
			    argv[i][0] == '-' ? "unknown option" :
			    "unexpected argument", argv[i]);
			fprintf(stderr, "usage: airlock %s [--json]\n", argv[0]);
			return -1;
		}
	}
	return 0;
}

json_t *
cli_ctl_request(const struct cli_ctx *ctx, const char *what, const char *req,
    int timeout_ms, char **raw, int *rc)
{
	struct airlock_config cfg;
	json_error_t jerr;
	json_t *reply = NULL, *e;
	char err[1024];

	*raw = NULL;
	*rc = 2;
	if (cli_config(ctx, &cfg) == -1)
		return NULL;
	*rc = 1;
	if (control_request(cfg.control_socket, req, timeout_ms, raw, err,
	    sizeof(err)) == -1) {
		int saved = errno;

		fprintf(stderr, "airlock: %s: %s\n", what, err);
		errno = saved;	/* control_is_not_running() for the caller */
		return NULL;
	}
	reply = json_loads(*raw, JSON_REJECT_DUPLICATES, &jerr);
	if (!json_is_object(reply) || !json_is_boolean(json_object_get(reply, "ok"))) {
		fprintf(stderr, "airlock: %s: airlockd sent a malformed reply\n", what);
		goto error;
	}
	if (!json_is_true(json_object_get(reply, "ok"))) {
		e = json_object_get(reply, "error");
		fprintf(stderr, "airlock: %s: %s\n", what,
		    json_is_string(e) ? json_string_value(e) : "refused");
		goto error;
	}
	return reply;
 error:
	json_decref(reply);
	free(*raw);
	*raw = NULL;
	return NULL;
}

static const char *
cmd_ctl_str(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_string(v) ? json_string_value(v) : "";
}

static long long
cmd_ctl_num(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_integer(v) ? (long long)json_integer_value(v) : 0;
}

int
cmd_reload(const struct cli_ctx *ctx, int argc, char **argv)
{
	json_t *reply, *list, *sb, *errs, *e;
	const char *status, *name;
	char *raw;
	size_t i, k;
	int json, failed, rc;

	if (cmd_ctl_args(ctx, argc, argv, &json) == -1)
		return 2;
	reply = cli_ctl_request(ctx, "reload", "{\"cmd\":\"reload\"}",
	    CMD_RELOAD_TIMEOUT_MS, &raw, &rc);
	if (reply == NULL)
		return rc;
	failed = cmd_ctl_num(reply, "failed") > 0;
	if (json) {
		printf("%s\n", raw);
		goto out;
	}
	list = json_object_get(reply, "sandboxes");
	json_array_foreach(list, i, sb) {
		name = cmd_ctl_str(sb, "name");
		status = cmd_ctl_str(sb, "status");
		errs = json_object_get(sb, "errors");
		if (strcmp(status, "kept") == 0)
			printf("%s: FAILED, keeping policy %s (%.12s)\n", name,
			    cmd_ctl_str(sb, "policy"), cmd_ctl_str(sb, "hash"));
		else if (strcmp(status, "refused") == 0)
			printf("%s: FAILED, not registered\n", name);
		else if (json_array_size(errs) > 0)
			printf("%s: FAILED, %s with nothing allowed\n", name, status);
		else
			printf("%s: %s, policy %s (%.12s)\n", name, status,
			    cmd_ctl_str(sb, "policy"), cmd_ctl_str(sb, "hash"));
		json_array_foreach(errs, k, e)
			if (json_is_string(e))
				fprintf(stderr, "airlock: %s: %s\n", name,
				    json_string_value(e));
	}
	json_array_foreach(json_object_get(reply, "removed"), i, e)
		if (json_is_string(e))
			printf("%s: removed\n", json_string_value(e));
 out:
	json_decref(reply);
	free(raw);
	return failed ? 1 : 0;
}

int
cmd_stats(const struct cli_ctx *ctx, int argc, char **argv)
{
	json_t *reply, *sb;
	char *raw;
	size_t i;
	int json, rc;

	if (cmd_ctl_args(ctx, argc, argv, &json) == -1)
		return 2;
	reply = cli_ctl_request(ctx, "stats", "{\"cmd\":\"stats\"}",
	    CONTROL_TIMEOUT_MS, &raw, &rc);
	if (reply == NULL)
		return rc;
	if (json) {
		printf("%s\n", raw);
		goto out;
	}
	printf("%-12s %-20s %6s %9s %9s %12s %12s %8s %8s\n", "SANDBOX", "POLICY",
	    "LIVE", "ALLOWED", "DENIED", "BYTES_UP", "BYTES_DOWN", "DNS",
	    "DNS_DENY");
	json_array_foreach(json_object_get(reply, "sandboxes"), i, sb) {
		printf("%-12s %-20.20s %6lld %9lld %9lld %12lld %12lld %8lld %8lld\n",
		    cmd_ctl_str(sb, "name"), cmd_ctl_str(sb, "policy"),
		    cmd_ctl_num(sb, "conns_live"), cmd_ctl_num(sb, "allowed"),
		    cmd_ctl_num(sb, "denied"), cmd_ctl_num(sb, "bytes_up"),
		    cmd_ctl_num(sb, "bytes_down"), cmd_ctl_num(sb, "dns_queries"),
		    cmd_ctl_num(sb, "dns_denied"));
	}
	json_array_foreach(json_object_get(reply, "sandboxes"), i, sb)
		if (json_is_string(json_object_get(sb, "policy_error")))
			printf("%s: policy error: %s\n", cmd_ctl_str(sb, "name"),
			    cmd_ctl_str(sb, "policy_error"));
	if (cmd_ctl_num(reply, "alarms") > 0)
		printf("alarms: %lld (airlock's nftables rules reinstalled %lld "
		    "times; see the audit log)\n", cmd_ctl_num(reply, "alarms"),
		    cmd_ctl_num(reply, "rules_reinstalled"));
	/* The anchor for `airlock audit verify --head HASH --expect-seq SEQ`. */
	if ((sb = json_object_get(reply, "audit")) != NULL)
		printf("audit head: seq %lld hash %s\n", cmd_ctl_num(sb, "seq"),
		    cmd_ctl_str(sb, "head"));
 out:
	json_decref(reply);
	free(raw);
	return 0;
}

/* airlock metrics: airlockd's Prometheus text, as its HTTP endpoint serves it. */
int
cmd_metrics(const struct cli_ctx *ctx, int argc, char **argv)
{
	json_t *reply, *t;
	char *raw;
	int json, rc;

	if (cmd_ctl_args(ctx, argc, argv, &json) == -1)
		return 2;
	reply = cli_ctl_request(ctx, "metrics", "{\"cmd\":\"metrics\"}",
	    CONTROL_TIMEOUT_MS, &raw, &rc);
	if (reply == NULL)
		return rc;
	rc = 0;
	if (json)
		printf("%s\n", raw);
	else if (json_is_string(t = json_object_get(reply, "text")))
		fputs(json_string_value(t), stdout);
	else {
		fprintf(stderr, "airlock: metrics: airlockd sent no text\n");
		rc = 1;
	}
	json_decref(reply);
	free(raw);
	return rc;
}
