/*
 * cli/cmd_policy_suggest.c: airlock policy suggest.
 *
 *	airlock policy suggest [--sandbox S] [--name NAME] [--siblings N]
 *	    [--key-file FILE] AUDIT...
 *
 * Reads audit logs (one chain, oldest file first, as `audit verify` takes them),
 * and prints on stdout a minimal policy for one sandbox that allows what the log shows
 * it doing: its allowed connections and requests, and in report mode those that
 * enforce mode would have denied (policies/policy_suggest.c says what is suggested).
 * Denials of enforce mode are not suggested: a refused destination stays refused
 * until someone allows it.  Notes (what was left out, and why) go to stderr.
 * The chain must verify first (with --key-file's HMAC key if the log has one): a
 * suggestion would otherwise allow what nobody vouches for.
 * Exit 0 with a policy; 1 when the chain does not verify or the log holds nothing
 * to suggest from; 2 usage or an unreadable file.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/crypto.h>

#include "audit.h"
#include "cli.h"
#include "hostname.h"
#include "netaddr.h"
#include "policy.h"

#define SUGGEST_SIBLINGS	3

struct suggest_args {
	const char	*sa_sandbox;
	const char	*sa_name;
	const char	*sa_key_file;
	unsigned	 sa_siblings;
	char		**sa_files;
	int		 sa_nfiles;
};

static int
suggest_usage(void)
{
	const struct cli_sub *s = cli_group_find(&cli_policy_group, "suggest");

	cli_sub_usage(&cli_policy_group, s, stderr);
	return 2;
}

/* "NAME:PORT", "ADDR:PORT" or "[V6]:PORT" into host (a name) or a; 0 or -1. */
static int
suggest_dst(const char *dst, char host[HOSTNAME_MAX + 1], struct netaddr *a,
    int *is_addr, uint16_t *port)
{
	char buf[HOSTNAME_MAX + 64], *colon, *end;
	const char *h;
	unsigned long p;

	if (strlen(dst) >= sizeof(buf))
		return -1;
	memcpy(buf, dst, strlen(dst) + 1);
	if ((colon = strrchr(buf, ':')) == NULL)
		return -1;
	*colon = '\0';
	errno = 0;
	p = strtoul(colon + 1, &end, 10);
	if (errno != 0 || *end != '\0' || p == 0 || p > 65535 || colon[1] == '\0')
		return -1;
	*port = (uint16_t)p;
	h = buf;
	if (buf[0] == '[' && colon > buf && colon[-1] == ']') {
		colon[-1] = '\0';
		h = buf + 1;
	}
	*is_addr = 0;
	if (netaddr_parse(h, a) == 0) {
		*is_addr = 1;
		return 0;
	}
	return hostname_normalize(h, strlen(h), host) == HOSTNAME_OK ? 0 : -1;
}

static const char *
suggest_str(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/*
 * One record: fed to s when it is an allowed connect or request of the sandbox.
 * *sandbox collects the sandbox's name when none was asked for (a second one is
 * an error the caller reports).
 */
static int
suggest_record(struct policy_suggest *s, json_t *o, const struct suggest_args *sa,
    char *seen_sb, size_t seen_len, int *other_sb, unsigned long *used)
{
	const char *ev, *sb, *dec, *dst, *proto, *tls;
	char host[HOSTNAME_MAX + 1];
	struct policy_seen w;
	struct netaddr a;
	int is_addr, request;

	ev = suggest_str(o, "event");
	sb = suggest_str(o, "sandbox");
	dec = suggest_str(o, "decision");
	dst = suggest_str(o, "dst");
	if (ev == NULL || sb == NULL || dec == NULL || dst == NULL ||
	    strcmp(dec, "allow") != 0)
		return 0;
	request = strcmp(ev, "request") == 0;
	if (!request && strcmp(ev, "connect") != 0)
		return 0;
	if (sa->sa_sandbox != NULL) {
		if (strcmp(sb, sa->sa_sandbox) != 0)
			return 0;
	} else if (seen_sb[0] == '\0')
		snprintf(seen_sb, seen_len, "%s", sb);
	else if (strcmp(seen_sb, sb) != 0) {
		*other_sb = 1;
		return 0;
	}
	if (suggest_dst(dst, host, &a, &is_addr, &w.pw_port) == -1)
		return 0;
	w.pw_host = is_addr ? NULL : host;
	w.pw_addr = &a;
	tls = suggest_str(o, "tls");
	w.pw_inspect = tls != NULL && strcmp(tls, "inspect") == 0;
	w.pw_method = NULL;
	w.pw_path = NULL;
	if (request) {
		/* an inspected request is TLS; one without "tls" was plain HTTP */
		w.pw_proto = tls != NULL ? POLICY_PROTO_TLS : POLICY_PROTO_HTTP;
		w.pw_method = suggest_str(o, "method");
		w.pw_path = suggest_str(o, "path");
	} else {
		proto = suggest_str(o, "proto");
		if (proto == NULL || strcmp(proto, "tls") == 0)
			w.pw_proto = POLICY_PROTO_TLS;
		else if (strcmp(proto, "http") == 0)
			w.pw_proto = POLICY_PROTO_HTTP;
		else
			w.pw_proto = POLICY_PROTO_TCP;
	}
	(*used)++;
	return policy_suggest_add(s, &w);
}

static int
suggest_args_parse(int argc, char **argv, struct suggest_args *sa)
{
	const char *opt, *v;
	char *end;
	unsigned long n;
	int i;

	memset(sa, 0, sizeof(*sa));
	sa->sa_siblings = SUGGEST_SIBLINGS;
	if ((sa->sa_files = calloc((size_t)argc, sizeof(char *))) == NULL) {
		fprintf(stderr, "airlock: out of memory\n");
		return 2;
	}
	for (i = 2; i < argc; i++) {
		opt = argv[i];
		if (strcmp(opt, "--help") == 0 || strcmp(opt, "-h") == 0) {
			cli_sub_usage(&cli_policy_group,
			    cli_group_find(&cli_policy_group, "suggest"), stdout);
			return -1;
		}
		if (opt[0] != '-' || opt[1] == '\0') {
			sa->sa_files[sa->sa_nfiles++] = argv[i];
			continue;
		}
		if (strcmp(opt, "--sandbox") != 0 && strcmp(opt, "--name") != 0 &&
		    strcmp(opt, "--siblings") != 0 && strcmp(opt, "--key-file") != 0) {
			cli_arg_refused(argv, opt);
			return suggest_usage();
		}
		if (i + 1 >= argc) {
			fprintf(stderr, "airlock: policy suggest: %s needs a value\n",
			    opt);
			return suggest_usage();
		}
		v = argv[++i];
		if (strcmp(opt, "--sandbox") == 0)
			sa->sa_sandbox = v;
		else if (strcmp(opt, "--name") == 0)
			sa->sa_name = v;
		else if (strcmp(opt, "--key-file") == 0)
			sa->sa_key_file = v;
		else {
			errno = 0;
			n = strtoul(v, &end, 10);
			if (errno != 0 || *end != '\0' || v[0] == '\0' ||
			    v[0] == '-' || n > 1000) {
				fprintf(stderr, "airlock: policy suggest: --siblings "
				    "is 0 (no wildcards, no path globs) to 1000, "
				    "not '%s'\n", v);
				return 2;
			}
			sa->sa_siblings = (unsigned)n;
		}
	}
	if (sa->sa_nfiles == 0) {
		fprintf(stderr, "airlock: policy suggest: needs at least one AUDIT "
		    "file\n");
		return suggest_usage();
	}
	return 0;
}

/* The chain of the files, oldest first; 0, 1 (said why), 2 (a file unreadable). */
static int
suggest_verify(const struct suggest_args *sa)
{
	unsigned char key[AUDIT_KEY_MAX];
	char why[512];
	long long bad;
	size_t keylen = 0;
	int i, rv = 0;

	if (sa->sa_key_file != NULL && audit_key_load(sa->sa_key_file, key, &keylen,
	    why, sizeof(why)) == -1) {
		fprintf(stderr, "airlock: %s\n", why);
		return 2;
	}
	if (audit_verify_files(sa->sa_files, sa->sa_nfiles, key, keylen, &i, &bad,
	    why, sizeof(why)) == -1) {
		if (bad == 0)
			fprintf(stderr, "airlock: policy suggest: %s: %s\n",
			    sa->sa_files[i], why);
		else
			fprintf(stderr, "airlock: policy suggest: %s:%lld: %s: the "
			    "chain does not vouch for the log, no policy suggested "
			    "(see airlock audit verify)\n", sa->sa_files[i], bad,
			    why);
		rv = bad == 0 ? 2 : 1;
	}
	OPENSSL_cleanse(key, sizeof(key));
	return rv;
}

int
policy_cmd_suggest(const struct cli_ctx *ctx, int argc, char **argv)
{
	struct suggest_args sa;
	struct policy_suggest *s = NULL;
	struct audit_reader *r;
	const char *line;
	char sb[128] = "", name[80], err[512], *text = NULL;
	unsigned long used = 0;
	json_t *o;
	size_t len;
	int i, rv, complete, other = 0, got;

	if ((rv = suggest_args_parse(argc, argv, &sa)) != 0) {
		free(sa.sa_files);
		return rv == -1 ? 0 : rv;
	}
	if ((rv = suggest_verify(&sa)) != 0)
		goto out;
	rv = 2;
	if ((s = policy_suggest_new(stderr)) == NULL)
		goto nomem;
	for (i = 0; i < sa.sa_nfiles; i++) {
		if ((r = audit_reader_open(sa.sa_files[i])) == NULL) {
			fprintf(stderr, "airlock: policy suggest: %s: %s\n",
			    sa.sa_files[i], strerror(errno));
			goto out;
		}
		while ((got = audit_reader_next(r, &line, &len, &complete)) == 1) {
			if ((o = json_loadb(line, len, 0, NULL)) == NULL)
				continue;	/* the chain check read it already */
			if (json_is_object(o) && suggest_record(s, o, &sa, sb,
			    sizeof(sb), &other, &used) == -1) {
				json_decref(o);
				audit_reader_close(r);
				goto nomem;
			}
			json_decref(o);
		}
		audit_reader_close(r);
		if (got == -1) {
			fprintf(stderr, "airlock: policy suggest: %s: %s\n",
			    sa.sa_files[i], strerror(errno));
			goto out;
		}
	}
	if (other) {
		fprintf(stderr, "airlock: policy suggest: the log holds more than one "
		    "sandbox: name one with --sandbox\n");
		goto out;
	}
	if (used == 0) {
		fprintf(stderr, "airlock: policy suggest: no allowed connection or "
		    "request of %s in the log: nothing to suggest\n",
		    sa.sa_sandbox != NULL ? sa.sa_sandbox : "any sandbox");
		rv = 1;
		goto out;
	}
	if (sa.sa_name == NULL) {
		snprintf(name, sizeof(name), "suggested-%.60s",
		    sa.sa_sandbox != NULL ? sa.sa_sandbox : sb);
		sa.sa_name = name;
	}
	if ((text = policy_suggest_build(s, sa.sa_name, sa.sa_siblings, err,
	    sizeof(err))) == NULL) {
		fprintf(stderr, "airlock: policy suggest: %s\n", err);
		goto out;
	}
	printf("%s\n", text);
	fprintf(stderr, "airlock: policy suggest: %lu records of %s\n", used,
	    sa.sa_sandbox != NULL ? sa.sa_sandbox : sb);
	rv = 0;
	goto out;
 nomem:
	fprintf(stderr, "airlock: out of memory\n");
 out:
	(void)ctx;
	free(text);
	policy_suggest_free(s);
	free(sa.sa_files);
	return rv;
}
