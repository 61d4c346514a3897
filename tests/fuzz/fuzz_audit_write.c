/*
 * tests/fuzz/fuzz_audit_write.c: the audit writer's hand-serialised JSON against
 * jansson.  The input is cut at NUL bytes into the strings of one or two records
 * (sandbox, src, dst, tls, method, path, decision, rule, reason, an extra field's
 * key and value, an inject name), in whatever bytes the fuzzer chooses: invalid
 * UTF-8, control characters, quotes, backslashes, very long values.  Each record
 * is written to a log file (audit_write, fsync never), the file is read back, and:
 *	- every line is one JSON object jansson accepts, and the chain verifies;
 *	- a string field whose input was valid UTF-8 that fits its bound comes back
 *	  byte for byte as it went in (jansson decodes what the writer escaped);
 *	- a longer one comes back as a prefix of it followed by AUDIT_TRUNC_MARK;
 *	- "seq" counts up from 1.
 */
#include <sys/stat.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "audit.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define FZ_FIELDS	11

static char fz_path[64];

/* Is s[n] valid UTF-8 (what the writer keeps as it is)? */
static int
fz_utf8(const unsigned char *s, size_t n)
{
	size_t i = 0, k, cl;
	unsigned long cp;

	while (i < n) {
		if (s[i] < 0x80) {
			i++;
			continue;
		}
		if ((s[i] & 0xe0) == 0xc0) {
			cl = 2;
			cp = s[i] & 0x1f;
		} else if ((s[i] & 0xf0) == 0xe0) {
			cl = 3;
			cp = s[i] & 0x0f;
		} else if ((s[i] & 0xf8) == 0xf0) {
			cl = 4;
			cp = s[i] & 0x07;
		} else
			return 0;
		if (i + cl > n)
			return 0;
		for (k = 1; k < cl; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if ((cl == 2 && cp < 0x80) || (cl == 3 && cp < 0x800) ||
		    (cl == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		i += cl;
	}
	return 1;
}

/* The field came back as promised (see the top); abort() if not. */
static void
fz_check(json_t *o, const char *key, const char *in, size_t max)
{
	json_t *v = json_object_get(o, key);
	const char *got;
	size_t n = strlen(in), gn, ml = strlen(AUDIT_TRUNC_MARK);

	if (v == NULL || !json_is_string(v))
		abort();
	got = json_string_value(v);
	gn = json_string_length(v);
	if (!fz_utf8((const unsigned char *)in, n))
		return;		/* U+FFFD in place of what was not UTF-8 */
	if (n <= max) {
		if (gn != n || memcmp(got, in, n) != 0)
			abort();
		return;
	}
	if (gn > max || gn < ml || memcmp(got + gn - ml, AUDIT_TRUNC_MARK, ml) != 0 ||
	    memcmp(got, in, gn - ml) != 0)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *f[FZ_FIELDS];
	char *buf, *line, *p, why[256];
	struct audit_record r = AUDIT_RECORD_INIT;
	struct audit_chain chain;
	struct audit_kv kv;
	const char *inject[2];
	struct audit_log *log;
	json_error_t jerr;
	json_t *o;
	FILE *fp;
	size_t i, len = 0, cap = 0, nf = 0;
	ssize_t n;
	long long seq = 0;

	if (fz_path[0] == '\0')
		snprintf(fz_path, sizeof(fz_path), "/tmp/fuzz_audit_write.%d.jsonl",
		    (int)getpid());
	if (size > 64 * 1024 || (buf = malloc(size + 1)) == NULL)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	for (p = buf, i = 0; i < FZ_FIELDS; i++) {
		if (p <= buf + size) {
			f[i] = p;
			p += strlen(p) + 1;
			nf++;
		} else
			f[i] = "";
	}
	/* An empty key is not a field name the writer takes: give it one. */
	kv.ak_key = f[9][0] != '\0' && strlen(f[9]) < 64 && fz_utf8((const unsigned
	    char *)f[9], strlen(f[9])) && strpbrk(f[9], "\"\\") == NULL ?
	    f[9] : "x_extra";
	kv.ak_str = f[10];
	kv.ak_num = 0;
	inject[0] = f[8];
	inject[1] = NULL;
	(void)unlink(fz_path);
	if ((log = audit_open(fz_path, AUDIT_FSYNC_NEVER, why, sizeof(why))) == NULL) {
		free(buf);
		return 0;
	}
	r.ar_event = nf % 2 ? AUDIT_EV_DENY : AUDIT_EV_REQUEST;
	r.ar_sandbox = f[0];
	r.ar_src = f[1];
	r.ar_dst = f[2];
	r.ar_tls = f[3];
	r.ar_method = f[4];
	r.ar_path = f[5];
	r.ar_decision = f[6];
	r.ar_rule = f[7];
	r.ar_reason = f[8];
	r.ar_inject = inject;
	r.ar_extra = &kv;
	r.ar_nextra = 1;
	r.ar_status = size > 0 ? data[0] : -1;
	/* A key the writer refuses (reserved, malformed) is an error, not a crash. */
	if (audit_write(log, &r) == 0)
		seq++;
	r.ar_extra = NULL;
	r.ar_nextra = 0;
	if (audit_write(log, &r) == 0)
		seq++;
	audit_close(log);
	if ((fp = fopen(fz_path, "r")) == NULL)
		abort();
	audit_chain_init(&chain, NULL, 0);
	line = NULL;
	for (i = 0; (n = getline(&line, &cap, fp)) > 0; i++) {
		len = (size_t)n;
		if (line[len - 1] != '\n')
			abort();	/* every record ends its line */
		line[--len] = '\0';
		if (audit_chain_add(&chain, line, len, why, sizeof(why)) == -1)
			abort();
		if ((o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr)) == NULL ||
		    !json_is_object(o))
			abort();
		if (json_integer_value(json_object_get(o, "seq")) != (json_int_t)(i + 1))
			abort();
		fz_check(o, "sandbox", f[0], AUDIT_STR_MAX);
		fz_check(o, "src", f[1], AUDIT_STR_MAX);
		fz_check(o, "dst", f[2], AUDIT_STR_MAX);
		fz_check(o, "path", f[5], AUDIT_PATH_MAX);
		fz_check(o, "rule", f[7], AUDIT_STR_MAX);
		fz_check(o, "reason", f[8], AUDIT_STR_MAX);
		json_decref(o);
	}
	free(line);
	fclose(fp);
	if ((long long)i != seq)
		abort();
	(void)unlink(fz_path);
	free(buf);
	return 0;
}
