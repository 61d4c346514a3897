/*
 * tests/tools/audit_gen.c: writes audit records through the real writer (audit_open,
 * audit_write) for the integration tests.  One record per line of stdin, as
 * space-separated key=value words; values are %XX-decoded (so "%0a" is a newline):
 *
 *	ts=2026-11-30T12:00:00.123Z sandbox=demo event=request dst=api.github.com:443
 *	decision=allow rule=github-api method=GET path=/repos status=200
 *	inject=a,b would_deny=1 bytes_up=1 bytes_down=2 ms=3 x.qname=example.com
 *	n.port=443
 *
 * (x.KEY: an extra string field, n.KEY: an extra integer field; agg=dst: a denial
 * aggregated per sandbox, reason and destination, as airlockd's connections'.)
 *
 *	audit_gen [--key-file FILE] [--sign-key FILE] PATH < spec
 *
 * A line that starts with '!' is a command to the writer instead:
 *	!checkpoint AT	a checkpoint now (AT: start, count, shutdown, ...), signed
 *			with --sign-key's key by a signer in this process that
 *			began at the chain's head when the log was opened (as
 *			airlockd's keys process does), or unsigned without one
 *	!flush		every pending aggregation count written now (audit_flush())
 *	!keyd-down	from here on the signer refuses (as a keys process gone):
 *			checkpoints are written unsigned; !keyd-up undoes it
 *	!restart	the log closed and opened again, with a new signer that
 *			begins at the head on disk (a restart of airlockd)
 *	!rotate		PATH.1..PATH.8 shifted up, PATH renamed to PATH.1 and the
 *			log goes on in a new PATH (audit_rotate_fd())
 *
 * Prints "seq N head HASH" of the chain at the end.  Exit 0, or 1 with a message.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "audit.h"
#include "hexdig.h"

#define MAX_INJECT	8

/* Decodes %XX in place. */
static void
pct_decode(char *s)
{
	char *o = s;

	for (; *s != '\0'; s++) {
		if (s[0] == '%' && hexdig_val(s[1]) >= 0 && hexdig_val(s[2]) >= 0) {
			*o++ = (char)(hexdig_val(s[1]) * 16 + hexdig_val(s[2]));
			s += 2;
		} else
			*o++ = *s;
	}
	*o = '\0';
}

static struct audit_signer *signer;
static int keyd_down;

static int
gen_sign(void *arg, long long seq, const char *head, long long ts_ms,
    struct audit_signature *out)
{
	char err[160];

	if (keyd_down) {
		snprintf(out->as_unsigned, sizeof(out->as_unsigned), "keys process: "
		    "it is gone");
		return -1;
	}
	if (audit_signer_sign(signer, seq, head, ts_ms, out, err,
	    sizeof(err)) == -1) {
		snprintf(out->as_unsigned, sizeof(out->as_unsigned), "keys process "
		    "refused: %s", err);
		return -1;
	}
	return 0;
}

/* A signer from the key file that begins at the head of the log at path. */
static int
gen_signer(const char *keyfile, const char *path, const unsigned char *key,
    size_t keylen)
{
	char keyid[AUDIT_KEYID_HEX + 1], err[512], head[AUDIT_HASH_HEX + 1];
	unsigned char *der;
	size_t derlen;
	long long seq;

	audit_signer_free(signer);
	signer = NULL;
	if (audit_sign_key_load(keyfile, &der, &derlen, keyid, err,
	    sizeof(err)) == -1 ||
	    audit_path_head(path, key, keylen, &seq, head, err, sizeof(err)) == -1) {
		fprintf(stderr, "audit_gen: %s\n", err);
		return -1;
	}
	signer = audit_signer_new(der, derlen, seq, head, err, sizeof(err));
	OPENSSL_clear_free(der, derlen);
	if (signer == NULL) {
		fprintf(stderr, "audit_gen: signer: %s\n", err);
		return -1;
	}
	return 0;
}

/* A '!' line; 0 or -1. */
static int
gen_command(struct audit_log **logp, const char *line, const char *path,
    const char *sign_key, const unsigned char *key, size_t keylen)
{
	char err[512], from[4200], to[4200];
	int k, fd;

	if (strncmp(line, "!checkpoint ", 12) == 0) {
		if (audit_checkpoint(*logp, line + 12) == -1) {
			fprintf(stderr, "audit_gen: checkpoint: %m\n");
			return -1;
		}
		return 0;
	}
	if (strcmp(line, "!flush") == 0) {
		if (audit_flush(*logp, 1) == -1) {
			fprintf(stderr, "audit_gen: flush: %m\n");
			return -1;
		}
		return 0;
	}
	if (strcmp(line, "!keyd-down") == 0 || strcmp(line, "!keyd-up") == 0) {
		keyd_down = line[6] == 'd';
		return 0;
	}
	if (strcmp(line, "!restart") == 0) {
		audit_close(*logp);
		if ((*logp = audit_open_keyed(path, AUDIT_FSYNC_NEVER, keylen > 0 ?
		    key : NULL, keylen, err, sizeof(err))) == NULL) {
			fprintf(stderr, "audit_gen: %s\n", err);
			return -1;
		}
		if (sign_key != NULL) {
			if (gen_signer(sign_key, path, key, keylen) == -1)
				return -1;
			audit_set_signer(*logp, gen_sign, NULL);
		}
		return 0;
	}
	if (strcmp(line, "!rotate") == 0) {
		for (k = 8; k >= 1; k--) {
			snprintf(from, sizeof(from), k == 1 ? "%s" : "%s.%d", path,
			    k - 1);
			snprintf(to, sizeof(to), "%s.%d", path, k);
			(void)rename(from, to);
		}
		if ((fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_EXCL |
		    O_CLOEXEC, 0600)) == -1 ||
		    audit_rotate_fd(*logp, fd, err, sizeof(err)) == -1) {
			fprintf(stderr, "audit_gen: rotate: %s\n", fd == -1 ?
			    strerror(errno) : err);
			return -1;
		}
		return 0;
	}
	fprintf(stderr, "audit_gen: unknown command '%s'\n", line);
	return -1;
}

int
main(int argc, char **argv)
{
	unsigned char key[AUDIT_KEY_MAX];
	char err[512], head[AUDIT_HASH_HEX + 1], line[65536];
	struct audit_kv extra[AUDIT_EXTRA_MAX];
	const char *inject[MAX_INJECT + 1];
	struct audit_log *log;
	const char *sign_key = NULL;
	size_t keylen = 0;
	long long seq, lineno = 0;
	int a = 1;

	for (;;) {
		if (argc >= a + 3 && strcmp(argv[a], "--key-file") == 0) {
			if (audit_key_load(argv[a + 1], key, &keylen, err,
			    sizeof(err)) == -1) {
				fprintf(stderr, "audit_gen: %s\n", err);
				return 1;
			}
			a += 2;
		} else if (argc >= a + 3 && strcmp(argv[a], "--sign-key") == 0) {
			sign_key = argv[a + 1];
			a += 2;
		} else
			break;
	}
	if (argc != a + 1) {
		fprintf(stderr, "usage: audit_gen [--key-file FILE] [--sign-key "
		    "FILE] PATH < spec\n");
		return 1;
	}
	if ((log = audit_open_keyed(argv[a], AUDIT_FSYNC_NEVER,
	    keylen > 0 ? key : NULL, keylen, err, sizeof(err))) == NULL) {
		fprintf(stderr, "audit_gen: %s\n", err);
		return 1;
	}
	if (sign_key != NULL) {
		if (gen_signer(sign_key, argv[a], keylen > 0 ? key : NULL,
		    keylen) == -1)
			return 1;
		audit_set_signer(log, gen_sign, NULL);
	}
	while (fgets(line, sizeof(line), stdin) != NULL) {
		struct audit_record r = AUDIT_RECORD_INIT;
		char *w, *save = NULL, *v, *c;
		size_t ninject = 0;

		lineno++;
		line[strcspn(line, "\n")] = '\0';
		if (line[0] == '\0' || line[0] == '#')
			continue;
		if (line[0] == '!') {
			if (gen_command(&log, line, argv[a], sign_key, keylen > 0 ?
			    key : NULL, keylen) == -1) {
				audit_close(log);
				return 1;
			}
			continue;
		}
		for (w = strtok_r(line, " ", &save); w != NULL;
		    w = strtok_r(NULL, " ", &save)) {
			if ((v = strchr(w, '=')) == NULL)
				goto bad;
			*v++ = '\0';
			pct_decode(v);
			if (strcmp(w, "ts") == 0) {
				if (audit_time_parse(v, 0, &r.ar_ts_ms) == -1)
					goto bad;
			} else if (strcmp(w, "event") == 0) {
				if (audit_event_parse(v, &r.ar_event) == -1)
					goto bad;
			} else if (strcmp(w, "sandbox") == 0)
				r.ar_sandbox = v;
			else if (strcmp(w, "src") == 0)
				r.ar_src = v;
			else if (strcmp(w, "dst") == 0)
				r.ar_dst = v;
			else if (strcmp(w, "tls") == 0)
				r.ar_tls = v;
			else if (strcmp(w, "method") == 0)
				r.ar_method = v;
			else if (strcmp(w, "path") == 0)
				r.ar_path = v;
			else if (strcmp(w, "decision") == 0)
				r.ar_decision = v;
			else if (strcmp(w, "rule") == 0)
				r.ar_rule = v;
			else if (strcmp(w, "agg") == 0 && strcmp(v, "dst") == 0)
				r.ar_aggregate = AUDIT_AGG_DST;
			else if (strcmp(w, "rule_file") == 0)
				r.ar_rule_file = v;
			else if (strcmp(w, "reason") == 0)
				r.ar_reason = v;
			else if (strcmp(w, "status") == 0)
				r.ar_status = atoi(v);
			else if (strcmp(w, "would_deny") == 0)
				r.ar_would_deny = atoi(v);
			else if (strcmp(w, "bytes_up") == 0)
				r.ar_bytes_up = atoll(v);
			else if (strcmp(w, "bytes_down") == 0)
				r.ar_bytes_down = atoll(v);
			else if (strcmp(w, "ms") == 0)
				r.ar_ms = atoll(v);
			else if (strcmp(w, "inject") == 0) {
				for (c = strtok(v, ","); c != NULL &&
				    ninject < MAX_INJECT; c = strtok(NULL, ","))
					inject[ninject++] = c;
				inject[ninject] = NULL;
				r.ar_inject = inject;
			} else if (strncmp(w, "x.", 2) == 0 &&
			    r.ar_nextra < AUDIT_EXTRA_MAX) {
				extra[r.ar_nextra].ak_key = w + 2;
				extra[r.ar_nextra].ak_str = v;
				extra[r.ar_nextra].ak_num = 0;
				r.ar_nextra++;
			} else if (strncmp(w, "n.", 2) == 0 &&
			    r.ar_nextra < AUDIT_EXTRA_MAX) {
				extra[r.ar_nextra].ak_key = w + 2;
				extra[r.ar_nextra].ak_str = NULL;
				extra[r.ar_nextra].ak_num = atoll(v);
				r.ar_nextra++;
			} else
				goto bad;
		}
		r.ar_extra = extra;
		if (audit_write(log, &r) == -1) {
			fprintf(stderr, "audit_gen: line %lld: audit_write: %m\n",
			    lineno);
			audit_close(log);
			return 1;
		}
		continue;
 bad:
		fprintf(stderr, "audit_gen: line %lld: bad word '%s'\n", lineno, w);
		audit_close(log);
		return 1;
	}
	seq = audit_head(log, head);
	printf("seq %lld head %s\n", seq, head);
	audit_close(log);
	audit_signer_free(signer);
	return 0;
}
