/*
 * cli/cmd_audit.c: airlock audit verify|query|summary|serve|keygen (serve's server
 * is cmd_audit_serve.c).
 *
 *	airlock audit verify [--strict] [--head HASH] [--expect-seq N]
 *	    [--key-file FILE] [--pubkey FILE] [FILE...]
 *	airlock audit query [--sandbox S] [--decision allow|deny] [--host H]
 *	    [--event E] [--since T] [--until T] [--json] [FILE...]
 *	airlock audit summary [--json] [FILE...]
 *	airlock audit serve [--listen ADDR:PORT] [--key-file FILE] [FILE...]
 *	airlock audit keygen FILE
 *
 * Several FILEs are one chain in rotation order, oldest first (audit.jsonl.2
 * audit.jsonl.1 audit.jsonl).  Without FILE the configured audit path is used (and
 * for verify its rotated files before it, PATH.N .. PATH.1, those that exist).
 * Options may come before or after the files.
 */
#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "audit.h"
#include "cli.h"

/* verify without FILE: the configured path and up to this many rotated files. */
#define AUDIT_ROTATED_MAX	CONFIG_AUDIT_KEEP_MAX

struct audit_args {
	char		**aa_files;	/* aa_argv, or aa_conf_path */
	int		 aa_nfiles;
	char		**aa_argv;	/* the FILEs of argv; freed by the caller */
	char		*aa_conf_path[AUDIT_ROTATED_MAX + 1];
	char		*aa_rotated[AUDIT_ROTATED_MAX];	/* allocated: PATH.N */
	struct airlock_config aa_cfg;
};

/* Room for the FILEs among argc arguments.  Returns 0 or -1. */
static int
audit_args_init(struct audit_args *aa, int argc)
{
	memset(aa, 0, sizeof(*aa));
	if ((aa->aa_argv = calloc((size_t)argc, sizeof(char *))) == NULL) {
		fprintf(stderr, "airlock: out of memory\n");
		return -1;
	}
	aa->aa_files = aa->aa_argv;
	return 0;
}

static int
audit_usage(void)
{
	cli_group_usage(&cli_audit_group, stderr);
	return 2;
}

/*
 * Without FILE arguments, the audit path of the configuration; with rotated, also
 * the rotated files before it (PATH.N .. PATH.1, oldest first: from the highest N
 * such that PATH.1 .. PATH.N all exist).
 */
static int
audit_files_default(const struct cli_ctx *ctx, struct audit_args *aa, int rotated)
{
	struct stat st;
	char buf[PATH_MAX + 16];
	int n = 0, i;

	if (aa->aa_nfiles > 0)
		return 0;
	if (cli_config(ctx, &aa->aa_cfg) == -1)
		return -1;
	while (rotated && n < AUDIT_ROTATED_MAX) {
		snprintf(buf, sizeof(buf), "%s.%d", aa->aa_cfg.audit_path, n + 1);
		if (stat(buf, &st) == -1)
			break;
		if ((aa->aa_rotated[n] = strdup(buf)) == NULL) {
			fprintf(stderr, "airlock: out of memory\n");
			return -1;
		}
		n++;
	}
	for (i = 0; i < n; i++)
		aa->aa_conf_path[i] = aa->aa_rotated[n - 1 - i];
	aa->aa_conf_path[n] = aa->aa_cfg.audit_path;
	aa->aa_files = aa->aa_conf_path;
	aa->aa_nfiles = n + 1;
	return 0;
}

/*
 * After the options: the FILEs (audit_files_default, with rotated its rotated
 * files too) and, with --key-file, its key
 * into key (*keylen bytes).  Returns 0, or -1 after a message.
 */
static int
audit_args_done(const struct cli_ctx *ctx, struct audit_args *aa,
    const char *key_file, unsigned char key[AUDIT_KEY_MAX], size_t *keylen,
    int rotated)
{
	char err[512];

	if (audit_files_default(ctx, aa, rotated) == -1)
		return -1;
	if (key_file != NULL && audit_key_load(key_file, key, keylen, err,
	    sizeof(err)) == -1) {
		fprintf(stderr, "airlock: %s\n", err);
		return -1;
	}
	return 0;
}

/* An option the subcommand argv[1] does not take: said, with the usage (2). */
static int
audit_unknown(char **argv, const char *opt)
{
	fprintf(stderr, "airlock: audit %s: unknown option %s\n", argv[1], opt);
	return audit_usage();
}

static void
audit_args_free(struct audit_args *aa)
{
	int i;

	for (i = 0; i < AUDIT_ROTATED_MAX; i++)
		free(aa->aa_rotated[i]);
	free(aa->aa_argv);
}

/* Takes the value of option argv[*i]; NULL (after a message) if there is none. */
static const char *
opt_value(int argc, char **argv, int *i)
{
	if (*i + 1 >= argc) {
		fprintf(stderr, "airlock: audit: %s needs a value\n", argv[*i]);
		return NULL;
	}
	return argv[++*i];
}

/*
 * argv[*i], which is none of the subcommand's own options: --key-file FILE, a FILE,
 * or an unknown option.  Returns 0, or -1 after a message with *rv the status.
 */
static int
audit_arg_rest(int argc, char **argv, int *i, struct audit_args *aa,
    const char **key_file, int *rv)
{
	if (strcmp(argv[*i], "--key-file") == 0) {
		if ((*key_file = opt_value(argc, argv, i)) == NULL)
			return -1;
	} else if (argv[*i][0] == '-' && argv[*i][1] != '\0') {
		*rv = audit_unknown(argv, argv[*i]);
		return -1;
	} else
		aa->aa_files[aa->aa_nfiles++] = argv[*i];
	return 0;
}

static int
hash_arg(const char *s, char out[AUDIT_HASH_HEX + 1])
{
	size_t i;

	if (strlen(s) != AUDIT_HASH_HEX)
		return -1;
	for (i = 0; i < AUDIT_HASH_HEX; i++) {
		char c = s[i];

		if (c >= 'A' && c <= 'F')
			c = (char)(c - 'A' + 'a');
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return -1;
		out[i] = c;
	}
	out[AUDIT_HASH_HEX] = '\0';
	return 0;
}

/* verify's notes from the chain (an unsigned checkpoint, a restart): FILE:LINE. */
struct verify_ctx {
	struct audit_chain	*vc_chain;
	char			**vc_files;
	long long		 vc_notes;
};

static void
verify_note(void *arg, const char *msg)
{
	struct verify_ctx *vc = arg;

	vc->vc_notes++;
	printf("%s:%lld: note: %s\n", vc->vc_files[vc->vc_chain->ac_fileno],
	    vc->vc_chain->ac_lineno, msg);
}

/*
 * With --pubkey: what the signatures cover, said after the files.  0, or 1 when
 * that is not enough: no signed checkpoint at all, or (--strict) records after the
 * last one or a checkpoint not signed.
 */
static int
verify_signatures(const struct audit_chain *c, char **files, int strict)
{
	long long after;

	if (c->ac_signed == 0) {
		printf("signatures: no signed checkpoint (%lld checkpoint(s), %lld "
		    "unsigned): no record is covered by a signature\n", c->ac_cp,
		    c->ac_cp_unsigned);
		return 1;
	}
	printf("signatures: records %lld..%lld signed (last signed checkpoint at "
	    "%s:%lld, seq %lld); %lld checkpoint(s), %lld signed, %lld unsigned\n",
	    c->ac_first_seq, c->ac_signed_last, files[c->ac_signed_fileno],
	    c->ac_signed_lineno, c->ac_signed_cp_seq, c->ac_cp, c->ac_signed,
	    c->ac_cp_unsigned);
	after = c->ac_seq - c->ac_signed_cp_seq;
	if (after > 0)
		printf("signatures: %lld record(s) after the last signed checkpoint "
		    "(seq %lld..%lld) are not covered by a signature%s\n", after,
		    c->ac_signed_cp_seq + 1, c->ac_seq, c->ac_last_is_cp ? "" :
		    "; the log does not end with a checkpoint: airlockd is "
		    "running, or stopped without its final checkpoint (a crash, a "
		    "kill), or records were cut off the end");
	else
		printf("signatures: the log ends with a signed checkpoint: every "
		    "record before it is covered\n");
	if (strict && (after > 0 || c->ac_cp_unsigned > 0)) {
		printf("signatures: not every record is covered (--strict)\n");
		return 1;
	}
	return 0;
}

static int
cmd_audit_verify(const struct cli_ctx *ctx, int argc, char **argv)
{
	unsigned char key[AUDIT_KEY_MAX];
	char head[AUDIT_HASH_HEX + 1], why[512];
	struct audit_file_result res;
	struct audit_pubkey *pk = NULL;
	struct audit_chain c;
	struct audit_args aa;
	struct verify_ctx vc;
	const char *v, *key_file = NULL, *pub_file = NULL, *ok;
	char *end;
	long long bad_line, want_seq = 0, records = 0;
	size_t keylen = 0;
	int i, strict = 0, have_head = 0, started, rv = 2;

	if (audit_args_init(&aa, argc) == -1)
		return 2;
	for (i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--strict") == 0)
			strict = 1;
		else if (strcmp(argv[i], "--head") == 0) {
			if ((v = opt_value(argc, argv, &i)) == NULL)
				goto out;
			if (hash_arg(v, head) == -1) {
				fprintf(stderr, "airlock: audit verify: --head "
				    "wants 64 hex digits\n");
				goto out;
			}
			have_head = 1;
		} else if (strcmp(argv[i], "--expect-seq") == 0) {
			if ((v = opt_value(argc, argv, &i)) == NULL)
				goto out;
			errno = 0;
			want_seq = strtoll(v, &end, 10);
			if (errno != 0 || *v == '\0' || *end != '\0' ||
			    want_seq < 1) {
				fprintf(stderr, "airlock: audit verify: "
				    "--expect-seq wants a positive number\n");
				goto out;
			}
		} else if (strcmp(argv[i], "--pubkey") == 0) {
			if ((pub_file = opt_value(argc, argv, &i)) == NULL)
				goto out;
		} else if (audit_arg_rest(argc, argv, &i, &aa, &key_file, &rv) == -1)
			goto out;
	}
	if (audit_args_done(ctx, &aa, key_file, key, &keylen, 1) == -1)
		goto out;
	if (pub_file != NULL && (pk = audit_pubkey_load(pub_file, why,
	    sizeof(why))) == NULL) {
		fprintf(stderr, "airlock: %s\n", why);
		goto out;
	}
	audit_chain_init(&c, keylen > 0 ? key : NULL, keylen);
	c.ac_want_hash = have_head ? head : NULL;
	c.ac_want_seq = want_seq;
	c.ac_pubkey = pk;
	vc.vc_chain = &c;
	vc.vc_files = aa.aa_files;
	vc.vc_notes = 0;
	c.ac_note = verify_note;
	c.ac_note_arg = &vc;
	/* With an anchor to check, "ok" waits for that check (the last line). */
	ok = have_head || want_seq > 0 ? "chain intact" : "ok";
	rv = 1;
	for (i = 0; i < aa.aa_nfiles; i++) {
		const char *f = aa.aa_files[i];

		started = c.ac_started;
		c.ac_fileno = i;
		if (audit_verify_file(f, &c, &res, &bad_line, why,
		    sizeof(why)) == -1) {
			if (bad_line == 0) {
				fprintf(stderr, "airlock: %s: %s\n", f, why);
				rv = 2;
			} else
				printf("%s:%lld: %s\n", f, bad_line, why);
			goto out;
		}
		if (res.afr_records == 0) {
			printf("%s: no records\n", f);
			continue;
		}
		records += res.afr_records;
		if (!started && strcmp(res.afr_first_prev, AUDIT_ZERO_HASH) != 0) {
			/* Rotation, or the start of the chain was cut off. */
			if (strict) {
				printf("%s:1: the chain continues from an earlier "
				    "file (prev %s, seq %lld): its start is "
				    "missing (--strict)\n", f, res.afr_first_prev,
				    res.afr_first_seq);
				goto out;
			}
			printf("%s: %s, %lld records, seq %lld..%lld, head %s; "
			    "chain continues from an earlier file (prev %s)\n",
			    f, ok, res.afr_records, res.afr_first_seq,
			    res.afr_last_seq, res.afr_head, res.afr_first_prev);
		} else
			printf("%s: %s, %lld records, seq %lld..%lld, head %s\n",
			    f, ok, res.afr_records, res.afr_first_seq,
			    res.afr_last_seq, res.afr_head);
	}
	/* A log emptied (or never written) vouches for nothing. */
	if (records == 0) {
		printf("%s: not verified: no record in %s\n",
		    aa.aa_files[aa.aa_nfiles - 1], aa.aa_nfiles == 1 ? "the file" :
		    "any of the files");
		goto out;
	}
	if (pk != NULL && verify_signatures(&c, aa.aa_files, strict) != 0)
		goto out;
	/*
	 * Records cut off the end leave a valid chain: only an anchor taken
	 * earlier (the head airlockd publishes) shows they are gone.
	 */
	if (want_seq > 0 && (!c.ac_started || c.ac_seq < want_seq)) {
		printf("%s: the log ends at seq %lld, expected seq %lld: records "
		    "are missing at the end\n", aa.aa_files[aa.aa_nfiles - 1],
		    c.ac_seq, want_seq);
		goto out;
	}
	if (have_head) {
		if (!c.ac_anchor_found) {
			printf("%s: head %s not found: records are missing at "
			    "the end, or this is another log\n",
			    aa.aa_files[aa.aa_nfiles - 1], head);
			goto out;
		}
		printf("ok: head %s found at seq %lld (%lld records after it)\n",
		    head, c.ac_anchor_seq, c.ac_seq - c.ac_anchor_seq);
	} else if (want_seq > 0)
		printf("ok: the log reaches seq %lld (expected %lld)\n", c.ac_seq,
		    want_seq);
	if (pk == NULL && c.ac_cp > 0)
		printf("%lld checkpoint(s): fields checked, signatures not (give "
		    "--pubkey)\n", c.ac_cp);
	rv = 0;
 out:
	OPENSSL_cleanse(key, sizeof(key));
	audit_pubkey_free(pk);
	audit_args_free(&aa);
	return rv;
}

/* keygen FILE: a new Ed25519 signing key (FILE) and its public half (FILE.pub). */
static int
cmd_audit_keygen(const struct cli_ctx *ctx, int argc, char **argv)
{
	char keyid[AUDIT_KEYID_HEX + 1], err[512];

	if (argc != 3 || argv[2][0] == '-') {
		if (argc > 2 && argv[2][0] == '-')
			cli_arg_refused(argv, argv[2]);
		return audit_usage();
	}
	if (audit_sign_keygen(argv[2], keyid, err, sizeof(err)) == -1) {
		fprintf(stderr, "airlock: audit keygen: %s\n", err);
		return 1;
	}
	printf("%s: signing key (keep it root's; audit.sign_key)\n%s.pub: its "
	    "public key (airlock audit verify --pubkey)\nkey id %s\n", argv[2],
	    argv[2], keyid);
	return 0;
}

/*
 * summary: whether the chain of the files verifies (key: --key-file's, or none).  0,
 * or 1 after a warning on stderr that the counts include records the chain does
 * not vouch for.  A file that cannot be read is the summary's own error.
 */
static int
audit_summary_check(const struct audit_args *aa, const unsigned char *key,
    size_t keylen)
{
	long long bad;
	char why[512];
	int i;

	/* A file that cannot be read (bad 0) is the summary's own error. */
	if (audit_verify_files(aa->aa_files, aa->aa_nfiles, key, keylen, &i, &bad,
	    why, sizeof(why)) == 0 || bad == 0)
		return 0;
	fprintf(stderr, "airlock: audit summary: warning: %s:%lld: %s; these "
	    "counts include records the chain does not vouch for (see "
	    "airlock audit verify)\n", aa->aa_files[i], bad, why);
	return 1;
}

/* query and summary share their parsing; summary takes --json and --key-file. */
static int
cmd_audit_read(const struct cli_ctx *ctx, int argc, char **argv, int summary)
{
	unsigned char key[AUDIT_KEY_MAX];
	struct audit_filter f = AUDIT_FILTER_INIT;
	struct audit_args aa;
	enum audit_event ev;
	const char *v, *opt, *key_file = NULL;
	char err[512];
	int i, json = ctx->json, rv = 2, tampered = 0;
	size_t keylen = 0;

	if (audit_args_init(&aa, argc) == -1)
		return 2;
	for (i = 2; i < argc; i++) {
		opt = argv[i];
		if (strcmp(opt, "--json") == 0) {
			json = 1;
			continue;
		}
		if (opt[0] != '-' || opt[1] == '\0') {
			aa.aa_files[aa.aa_nfiles++] = argv[i];
			continue;
		}
		if (summary && strcmp(opt, "--key-file") == 0) {
			if ((key_file = opt_value(argc, argv, &i)) == NULL)
				goto out;
			continue;
		}
		if (summary || (strcmp(opt, "--sandbox") != 0 &&
		    strcmp(opt, "--decision") != 0 && strcmp(opt, "--host") != 0 &&
		    strcmp(opt, "--event") != 0 && strcmp(opt, "--since") != 0 &&
		    strcmp(opt, "--until") != 0)) {
			rv = audit_unknown(argv, opt);
			goto out;
		}
		if ((v = opt_value(argc, argv, &i)) == NULL)
			goto out;
		if (strcmp(opt, "--sandbox") == 0)
			f.af_sandbox = v;
		else if (strcmp(opt, "--decision") == 0) {
			if (strcmp(v, "allow") != 0 && strcmp(v, "deny") != 0) {
				fprintf(stderr, "airlock: audit query: --decision "
				    "is allow or deny\n");
				goto out;
			}
			f.af_decision = v;
		} else if (strcmp(opt, "--host") == 0) {
			if (*v == '\0') {
				fprintf(stderr, "airlock: audit query: --host is "
				    "empty\n");
				goto out;
			}
			f.af_host = v;
		} else if (strcmp(opt, "--event") == 0) {
			if (audit_event_parse(v, &ev) == -1) {
				fprintf(stderr, "airlock: audit query: unknown "
				    "event '%s' (dns, connect, request, deny, "
				    "exfil, sandbox, config, alarm, checkpoint, "
				    "rotate)\n", v);
				goto out;
			}
			f.af_event = v;
		} else if (audit_time_parse(v, strcmp(opt, "--until") == 0,
		    strcmp(opt, "--until") == 0 ? &f.af_until : &f.af_since) == -1) {
			fprintf(stderr, "airlock: audit query: %s: bad time '%s' "
			    "(2026-11-30, 2026-11-30T12:00:00Z or "
			    "2026-11-30T12:00:00.123Z)\n", opt, v);
			goto out;
		}
	}
	if (audit_args_done(ctx, &aa, key_file, key, &keylen, 0) == -1)
		goto out;
	if (summary)
		tampered = audit_summary_check(&aa, keylen > 0 ? key : NULL, keylen);
	if ((summary ? audit_summary(aa.aa_files, aa.aa_nfiles, json, stdout,
	    stderr, err, sizeof(err)) : audit_query(aa.aa_files, aa.aa_nfiles, &f,
	    json, stdout, stderr, err, sizeof(err))) == -1) {
		fprintf(stderr, "airlock: %s\n", err);
		goto out;
	}
	rv = tampered;
 out:
	OPENSSL_cleanse(key, sizeof(key));
	audit_args_free(&aa);
	return rv;
}

static int
cmd_audit_query(const struct cli_ctx *ctx, int argc, char **argv)
{
	return cmd_audit_read(ctx, argc, argv, 0);
}

static int
cmd_audit_summary(const struct cli_ctx *ctx, int argc, char **argv)
{
	return cmd_audit_read(ctx, argc, argv, 1);
}

/* serve: its options here, like the others'; the server is cmd_audit_serve.c. */
static int
cmd_audit_serve(const struct cli_ctx *ctx, int argc, char **argv)
{
	unsigned char key[AUDIT_KEY_MAX];
	struct audit_args aa;
	const char *listen = CLI_AUDIT_SERVE_LISTEN, *key_file = NULL;
	size_t keylen = 0;
	int i, rv = 2;

	if (audit_args_init(&aa, argc) == -1)
		return 2;
	for (i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--listen") == 0) {
			if ((listen = opt_value(argc, argv, &i)) == NULL)
				goto out;
		} else if (audit_arg_rest(argc, argv, &i, &aa, &key_file, &rv) == -1)
			goto out;
	}
	if (audit_args_done(ctx, &aa, key_file, key, &keylen, 0) == -1)
		goto out;
	rv = cli_audit_serve(aa.aa_files, aa.aa_nfiles, keylen > 0 ? key : NULL,
	    keylen, listen);
 out:
	OPENSSL_cleanse(key, sizeof(key));
	audit_args_free(&aa);
	return rv;
}

static const struct cli_sub audit_subs[] = {
	{ "verify", cmd_audit_verify, "[--strict] [--head HASH] [--expect-seq N] "
	  "[--key-file FILE]\n"
	  "           [--pubkey FILE] [FILE...]" },
	{ "query", cmd_audit_query, "[--sandbox S] [--decision allow|deny] "
	  "[--host H] [--event E]\n"
	  "           [--since T] [--until T] [--json] [FILE...]" },
	{ "summary", cmd_audit_summary, "[--key-file FILE] [--json] [FILE...]" },
	{ "serve", cmd_audit_serve, "[--listen ADDR:PORT] [--key-file FILE] "
	  "[FILE...]" },
	{ "keygen", cmd_audit_keygen, "FILE" },
	{ NULL, NULL, NULL }
};
static const char *const audit_help[] = { "-h", "--help", NULL };
const struct cli_group cli_audit_group = { "audit", audit_subs,
    CLI_UNKNOWN_SUBCOMMAND, audit_help };
