/*
 * cli/cmd_policy.c: airlock policy check|test (suggest: cmd_policy_suggest.c).
 *
 *	airlock policy check [--json] FILE...
 *	airlock policy test [--json] [--protocol tls|http|tcp] [--layer FILE]...
 *	    FILE HOST[:PORT] [METHOD PATH]
 *
 * check validates each file (with its bases) and prints one summary line per valid
 * file (and one per file of a policy with bases), or every error of every file
 * ("FILE:LINE:COL: $.path: reason") on stderr; exit 0 when all are valid, 1
 * otherwise, 2 on usage errors.
 * test says what the policy decides for a destination as a VM presents it: the
 * host goes through the same normaliser as SNI and Host headers; an IP literal
 * (also "[v6]:port") is a connection to that address, judged by cidr rules.
 * Exit 0 allow (also report mode), 1 deny, 2 usage or policy error.  --layer
 * loads FILE as an extra layer after the policy (policy_load_layers()), as airlockd
 * loads a sandbox's approvals file (STATE_DIR/approvals/SANDBOX.json).
 * Options may appear anywhere after the subcommand; "--" ends them.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "netaddr.h"
#include "policy.h"

/* What comes after "airlock policy SUB": its options and positional arguments. */
struct policy_args {
	const char	*pa_proto;	/* --protocol, or NULL */
	const char	*pa_layers[POLICY_FILES_MAX];	/* --layer, in order */
	size_t		 pa_nlayers;
	char		**pa_pos;	/* free() */
	int		 pa_npos;
	int		 pa_json;
};


#define policy_usage(...) \
	cli_group_usage_error(&cli_policy_group, NULL, __VA_ARGS__)

/* Prints one JSON document on a line of stdout and releases it. */
static void
policy_json_print(json_t *j)
{
	char *s;

	if (j == NULL || (s = json_dumps(j, JSON_COMPACT)) == NULL) {
		fprintf(stderr, "airlock: out of memory\n");
		json_decref(j);
		return;
	}
	printf("%s\n", s);
	free(s);
	json_decref(j);
}

static void
policy_errors_print(const struct policy_errors *errs)
{
	char line[1536];
	size_t i;

	for (i = 0; i < errs->n; i++) {
		policy_error_fmt(&errs->v[i], line, sizeof(line));
		fprintf(stderr, "%s\n", line);
	}
}

static json_t *
policy_errors_json(const char *file, const struct policy_errors *errs)
{
	const struct policy_error *e;
	json_t *arr, *o;
	size_t i;

	arr = json_array();
	for (i = 0; arr != NULL && i < errs->n; i++) {
		e = &errs->v[i];
		o = json_pack("{s:s, s:s?, s:i, s:i, s:s}", "file", e->pe_file,
		    "path", e->pe_path, "line", e->pe_line, "column",
		    e->pe_column, "reason", e->pe_reason);
		json_array_append_new(arr, o);
	}
	return json_pack("{s:s, s:b, s:o*}", "file", file, "ok", 0, "errors",
	    arr);
}

/*
 * FILE, or "-": standard input (named "<stdin>" in its errors; its bases are
 * relative to the current folder).
 */
static struct policy *
policy_load_arg(const char *file, struct policy_errors *errs)
{
	struct policy_bundle b = { NULL, 0 };
	struct policy *p = NULL;
	size_t len = 0;
	ssize_t n;
	char *buf;

	if (strcmp(file, "-") != 0)
		return policy_load_file(file, errs);
	/* One byte past the limit: the loader says it is too large. */
	if ((buf = malloc(POLICY_FILE_MAX + 1)) == NULL) {
		fprintf(stderr, "airlock: policy: out of memory\n");
		return NULL;
	}
	while (len < POLICY_FILE_MAX + 1 &&
	    (n = read(STDIN_FILENO, buf + len, POLICY_FILE_MAX + 1 - len)) != 0) {
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			fprintf(stderr, "airlock: policy: standard input: %s\n",
			    strerror(errno));
			free(buf);
			return NULL;
		}
		len += (size_t)n;
	}
	if (policy_bundle_add(&b, "<stdin>", buf, len, NULL) == -1 ||
	    policy_bundle_read(&b, "<stdin>") == -1)
		fprintf(stderr, "airlock: policy: out of memory\n");
	else
		p = policy_load_bundle(&b, errs);
	policy_bundle_free(&b);
	free(buf);
	return p;
}

/* The files of a policy with bases: one line each, or a JSON array. */
static void
policy_files_print(const struct policy *p)
{
	const struct policy_source *f;
	size_t i;

	if (p->p_nfiles < 2)
		return;
	for (i = 0; i < p->p_nfiles; i++) {
		f = p->p_files[i];
		printf("  %*s%s %s: policy %s, %zu rule%s, sha256 %s\n",
		    (int)(2 * f->ps_depth), "", f->ps_depth == 0 ? "file" : "base",
		    f->ps_file, f->ps_name, f->ps_nrules, f->ps_nrules == 1 ? "" :
		    "s", f->ps_hash);
	}
}

static json_t *
policy_files_json(const struct policy *p)
{
	const struct policy_source *f;
	json_t *arr;
	size_t i;

	if ((arr = json_array()) == NULL)
		return NULL;
	for (i = 0; i < p->p_nfiles; i++) {
		f = p->p_files[i];
		json_array_append_new(arr, json_pack("{s:s, s:s, s:I, s:i, s:s}",
		    "file", f->ps_file, "policy", f->ps_name, "rules",
		    (json_int_t)f->ps_nrules, "depth", (int)f->ps_depth, "sha256",
		    f->ps_hash));
	}
	return arr;
}

static int
policy_check(int json, int nfiles, char **files)
{
	struct policy_errors errs = { 0 };
	struct policy *p;
	int i, rc = 0;

	for (i = 0; i < nfiles; i++) {
		p = policy_load_arg(files[i], &errs);
		if (p == NULL) {
			rc = 1;
			if (json)
				policy_json_print(policy_errors_json(files[i],
				    &errs));
			else
				policy_errors_print(&errs);
		} else if (json)
			policy_json_print(json_pack("{s:s, s:b, s:s, s:I, s:s, "
			    "s:s, s:s, s:o*}", "file", files[i], "ok", 1, "policy",
			    p->p_name, "rules", (json_int_t)p->p_nrules, "mode",
			    policy_mode_str(p->p_mode), "unknown",
			    policy_unknown_str(p->p_unknown), "sha256", p->p_hash,
			    "files", policy_files_json(p)));
		else {
			printf("%s: ok: policy %s, %zu rule%s, mode %s%s, sha256 "
			    "%s\n", files[i], p->p_name, p->p_nrules,
			    p->p_nrules == 1 ? "" : "s",
			    policy_mode_str(p->p_mode),
			    p->p_unknown == POLICY_UNKNOWN_ASK ? ", unknown ask" : "",
			    p->p_hash);
			policy_files_print(p);
		}
		policy_free(p);
		policy_errors_free(&errs);
	}
	fflush(stdout);
	return rc;
}

/*
 * Splits HOST[:PORT] into host (a copy, brackets removed) and port.  "[v6]" and
 * "[v6]:port" take brackets; a bare string with several ':' is an IPv6 literal
 * without a port.  Returns 0, or -1 for a malformed argument.
 */
static int
policy_dest_parse(const char *arg, char *host, size_t hostlen, uint16_t *port,
    int *has_port)
{
	const char *end, *colon, *p;
	unsigned long v = 0;
	size_t len;

	*has_port = 0;
	if (arg[0] == '[') {
		if ((end = strchr(arg, ']')) == NULL)
			return -1;
		len = (size_t)(end - arg - 1);
		p = end + 1;
		if (*p == ':')
			p++;
		else if (*p != '\0')
			return -1;
		else
			p = NULL;
		arg++;
	} else if ((colon = strchr(arg, ':')) != NULL &&
	    strchr(colon + 1, ':') == NULL) {
		len = (size_t)(colon - arg);
		p = colon + 1;
	} else {
		len = strlen(arg);
		p = NULL;
	}
	if (len >= hostlen)
		return -1;
	memcpy(host, arg, len);
	host[len] = '\0';
	if (p == NULL)
		return 0;
	if (*p == '\0' || strlen(p) > 5 || (p[0] == '0'))
		return -1;
	for (; *p != '\0'; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (unsigned long)(*p - '0');
	}
	if (v < 1 || v > 65535)
		return -1;
	*port = (uint16_t)v;
	*has_port = 1;
	return 0;
}

/* FILE with the extra layers of --layer (each read with its bases). */
static struct policy *
policy_load_with_layers(const char *file, const char *const *layers, size_t n,
    struct policy_errors *errs)
{
	struct policy_bundle b = { NULL, 0 };
	const char *files[POLICY_FILES_MAX + 1];
	struct policy *p = NULL;
	size_t i;

	if (n == 0)
		return policy_load_arg(file, errs);
	files[0] = file;
	for (i = 0; i < n; i++)
		files[i + 1] = layers[i];
	for (i = 0; i <= n; i++)
		if (policy_bundle_read(&b, files[i]) == -1) {
			fprintf(stderr, "airlock: out of memory\n");
			goto out;
		}
	p = policy_load_layers(&b, files, n + 1, errs);
 out:
	policy_bundle_free(&b);
	return p;
}

static int
policy_test(int json, const char *proto_arg, const char *const *layers,
    size_t nlayers, int npos, char **pos)
{
	struct policy_errors errs = { 0 };
	struct policy_verdict v;
	struct policy_query q;
	struct policy *p = NULL;
	struct netaddr addr;
	const struct policy_rule *r;
	char host[1024], detail[PATH_MAX + 128];
	uint16_t port = 443;
	int has_port, proto, rc = 2;

	memset(&q, 0, sizeof(q));
	if (npos != 2 && npos != 4)
		return policy_usage("%s", npos == 3 ? "METHOD needs a PATH" :
		    "test needs FILE and HOST[:PORT]");
	if (policy_dest_parse(pos[1], host, sizeof(host), &port,
	    &has_port) == -1)
		return policy_usage("bad destination '%s' (HOST[:PORT], "
		    "[IPv6]:PORT)", pos[1]);
	if (proto_arg == NULL)
		q.pq_proto = port == 80 ? POLICY_PROTO_HTTP : POLICY_PROTO_TLS;
	else if (strtab_value(policy_proto_names, proto_arg, &proto) == 0)
		q.pq_proto = (enum policy_proto)proto;
	else
		return policy_usage("unknown protocol '%s' (tls, http, tcp)",
		    proto_arg);
	/* An address is a connection to it; anything else is a name. */
	if (netaddr_parse(host, &addr) == 0)
		q.pq_addr = &addr;
	else if (pos[1][0] == '[')
		return policy_usage("bad IPv6 literal in '%s'", pos[1]);
	else
		q.pq_host = host;
	q.pq_port = port;
	if (npos == 4) {
		q.pq_method = pos[2];
		q.pq_path = pos[3];
	}

	if (nlayers > 0 && strcmp(pos[0], "-") == 0)
		return policy_usage("--layer needs the policy as a FILE, not -");
	if ((p = policy_load_with_layers(pos[0], layers, nlayers, &errs)) == NULL) {
		if (json)
			policy_json_print(policy_errors_json(pos[0], &errs));
		else
			policy_errors_print(&errs);
		goto out;
	}
	policy_decide(p, &q, &v);
	r = v.pv_rule;
	rc = v.pv_allow ? 0 : 1;
	if (json) {
		policy_json_print(json_pack("{s:s, s:s, s:b, s:s?, s:s?, s:s?, "
		    "s:s?, s:s?, s:s?, s:s, s:s}", "policy", p->p_name, "decision",
		    v.pv_allow ? "allow" : "deny", "would_deny", v.pv_would_deny,
		    "reason", v.pv_reason != POLICY_REASON_NONE ?
		    policy_reason_str(v.pv_reason) : NULL, "rule",
		    r != NULL ? r->pr_id : NULL, "file", r != NULL ? r->pr_file :
		    NULL, "action", r != NULL ? policy_action_str(r->pr_action) :
		    NULL, "protocol", r != NULL &&
		    r->pr_action == POLICY_ACTION_ALLOW ?
		    policy_proto_str(r->pr_proto) : NULL, "tls", r != NULL &&
		    r->pr_action == POLICY_ACTION_ALLOW &&
		    r->pr_proto == POLICY_PROTO_TLS ?
		    policy_tls_str(v.pv_tls) : NULL, "mode",
		    policy_mode_str(p->p_mode), "unknown",
		    policy_unknown_str(p->p_unknown)));
		goto out;
	}
	if (v.pv_reason == POLICY_REASON_NONE) {
		if (r->pr_proto == POLICY_PROTO_TLS)
			snprintf(detail, sizeof(detail), "tls=%s",
			    policy_tls_str(v.pv_tls));
		else
			snprintf(detail, sizeof(detail), "protocol=%s",
			    policy_proto_str(r->pr_proto));
		printf("allow rule=%s %s file=%s\n", r->pr_id, detail, r->pr_file);
	} else {
		detail[0] = '\0';
		if (r != NULL)
			snprintf(detail, sizeof(detail), " rule=%s file=%s",
			    r->pr_id, r->pr_file);
		if (v.pv_would_deny)
			printf("allow (report mode: would deny: reason=%s%s)\n",
			    policy_reason_str(v.pv_reason), detail);
		else
			printf("deny reason=%s%s%s\n",
			    policy_reason_str(v.pv_reason), detail,
			    p->p_unknown == POLICY_UNKNOWN_ASK &&
			    policy_reason_is_unknown(v.pv_reason) ?
			    " (unknown: ask)" : "");
	}
 out:
	fflush(stdout);
	policy_free(p);
	policy_errors_free(&errs);
	return rc;
}

/*
 * Parses argv[2..] into pa.  Returns 0 (pa->pa_pos to free()), or 2 after printing
 * the usage error (pa->pa_pos NULL).
 */
static int
policy_args_parse(const struct cli_ctx *ctx, int argc, char **argv,
    struct policy_args *pa)
{
	int i, opts = 1, noval = 0;

	memset(pa, 0, sizeof(*pa));
	pa->pa_json = ctx->json;
	if ((pa->pa_pos = calloc((size_t)argc, sizeof(char *))) == NULL) {
		fprintf(stderr, "airlock: out of memory\n");
		return 2;
	}
	for (i = 2; i < argc; i++) {
		if (opts && strcmp(argv[i], "--") == 0)
			opts = 0;
		else if (opts && strcmp(argv[i], "--json") == 0)
			pa->pa_json = 1;
		else if (opts && strcmp(argv[i], "--protocol") == 0) {
			if ((noval = i + 1 >= argc))
				goto fail;
			pa->pa_proto = argv[++i];
		} else if (opts && strncmp(argv[i], "--protocol=", 11) == 0)
			pa->pa_proto = argv[i] + 11;
		else if (opts && strcmp(argv[i], "--layer") == 0) {
			if ((noval = i + 1 >= argc))
				goto fail;
			if (pa->pa_nlayers == POLICY_FILES_MAX - 1) {
				free(pa->pa_pos);
				pa->pa_pos = NULL;
				return policy_usage("too many --layer");
			}
			pa->pa_layers[pa->pa_nlayers++] = argv[++i];
		}
		else if (opts && argv[i][0] == '-' && argv[i][1] != '\0')
			goto fail;
		else
			pa->pa_pos[pa->pa_npos++] = argv[i];
	}
	return 0;
 fail:
	free(pa->pa_pos);
	pa->pa_pos = NULL;
	if (noval)
		return policy_usage("%s needs a value", argv[i]);
	return policy_usage("unknown option '%s'", argv[i]);
}

static int
policy_cmd_check(const struct cli_ctx *ctx, int argc, char **argv)
{
	struct policy_args pa;
	int rc;

	if ((rc = policy_args_parse(ctx, argc, argv, &pa)) != 0)
		return rc;
	if (pa.pa_proto != NULL || pa.pa_nlayers > 0)
		rc = policy_usage("check takes no %s", pa.pa_proto != NULL ?
		    "--protocol" : "--layer");
	else if (pa.pa_npos == 0)
		rc = policy_usage("check needs at least one FILE");
	else
		rc = policy_check(pa.pa_json, pa.pa_npos, pa.pa_pos);
	free(pa.pa_pos);
	return rc;
}

static int
policy_cmd_test(const struct cli_ctx *ctx, int argc, char **argv)
{
	struct policy_args pa;
	int rc = policy_args_parse(ctx, argc, argv, &pa);

	if (rc == 0)
		rc = policy_test(pa.pa_json, pa.pa_proto, pa.pa_layers,
		    pa.pa_nlayers, pa.pa_npos, pa.pa_pos);
	free(pa.pa_pos);
	return rc;
}

static const struct cli_sub policy_subs[] = {
	{ "check", policy_cmd_check, "[--json] FILE..." },
	{ "test", policy_cmd_test, "[--json] [--protocol tls|http|tcp] "
	  "[--layer FILE]... FILE HOST[:PORT] [METHOD PATH]" },
	{ "suggest", policy_cmd_suggest, "[--sandbox S] [--name NAME] "
	  "[--siblings N] [--key-file FILE] AUDIT..." },
	{ NULL, NULL, NULL }
};
const struct cli_group cli_policy_group = { "policy", policy_subs,
    CLI_UNKNOWN_SUBCOMMAND, NULL };

int
cmd_policy(const struct cli_ctx *ctx, int argc, char **argv)
{
	const struct cli_sub *s;
	struct policy_args pa;
	int rc;

	if (argc < 2)
		return policy_usage(NULL);
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		cli_group_usage(&cli_policy_group, stdout);
		return 0;
	}
	if ((s = cli_group_find(&cli_policy_group, argv[1])) != NULL)
		return s->cs_fn(ctx, argc, argv);
	/* As before the table: a bad option is reported first. */
	if ((rc = policy_args_parse(ctx, argc, argv, &pa)) == 0) {
		free(pa.pa_pos);
		rc = policy_usage("unknown subcommand '%s'", argv[1]);
	}
	return rc;
}
