/*
 * tests/tools/audit_gen.c: writes audit records through the real writer (audit_open,
 * audit_write) for the integration tests.  One record per line of stdin, as
 * space-separated key=value words; values are %XX-decoded (so "%0a" is a newline):
 *
 *	ts=2026-11-30T12:00:00.123Z sandbox=demo event=request dst=api.github.com:443
 *	decision=allow rule=github-api method=GET path=/repos status=200
 *	inject=a,b would_deny=1 bytes_up=1 bytes_down=2 ms=3 x.qname=example.com
 *
 *	audit_gen [--key-file FILE] PATH < spec
 *
 * Prints "seq N head HASH" of the chain at the end.  Exit 0, or 1 with a message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int
main(int argc, char **argv)
{
	unsigned char key[AUDIT_KEY_MAX];
	char err[512], head[AUDIT_HASH_HEX + 1], line[65536];
	struct audit_kv extra[AUDIT_EXTRA_MAX];
	const char *inject[MAX_INJECT + 1];
	struct audit_log *log;
	size_t keylen = 0;
	long long seq, lineno = 0;
	int a = 1;

	if (argc == 4 && strcmp(argv[1], "--key-file") == 0) {
		if (audit_key_load(argv[2], key, &keylen, err, sizeof(err)) == -1) {
			fprintf(stderr, "audit_gen: %s\n", err);
			return 1;
		}
		a = 3;
	}
	if (argc != a + 1) {
		fprintf(stderr, "usage: audit_gen [--key-file FILE] PATH < spec\n");
		return 1;
	}
	if ((log = audit_open_keyed(argv[a], AUDIT_FSYNC_NEVER,
	    keylen > 0 ? key : NULL, keylen, err, sizeof(err))) == NULL) {
		fprintf(stderr, "audit_gen: %s\n", err);
		return 1;
	}
	while (fgets(line, sizeof(line), stdin) != NULL) {
		struct audit_record r = AUDIT_RECORD_INIT;
		char *w, *save = NULL, *v, *c;
		size_t ninject = 0;

		lineno++;
		line[strcspn(line, "\n")] = '\0';
		if (line[0] == '\0' || line[0] == '#')
			continue;
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
	return 0;
}
