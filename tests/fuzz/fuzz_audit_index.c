/*
 * tests/fuzz/fuzz_audit_index.c: the index of airlock audit serve
 * (audit/audit_index.c) over a file of arbitrary bytes: a file handed to the view
 * may have been edited by anyone.  The input is the file's first contents, then,
 * after the first "\n\n\n" in it, bytes appended once it was indexed (the
 * incremental path).  With the first byte odd, every line that ends like a record
 * gets its hash recomputed, so the fuzzer gets past the hash to the JSON, the
 * fields and the chain.
 *
 * Promises: the index holds one record per complete line (a last line without its
 * newline pending), each given back as exactly its line; every filter's answer is
 * ascending and within the records, no filter finds more than no filter; a record
 * at or after the first bad line is not verified, one before it is; the summary is
 * JSON.  The file is a memfd, so nothing touches the disk.
 */
#include <sys/mman.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "audit.h"
#include "../../audit/audit_int.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define SUFFIX	(sizeof(AUDIT_HASH_SEP) - 1 + AUDIT_HASH_HEX + \
	    sizeof(AUDIT_HASH_END) - 1)

/* Recomputes the hash of every line of buf[0..len-1] that has the suffix. */
static void
fz_fix(char *buf, size_t len)
{
	char hex[AUDIT_HASH_HEX + 1], *p = buf, *end = buf + len, *nl;
	size_t l;

	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		l = nl != NULL ? (size_t)(nl - p) : (size_t)(end - p);
		if (l > SUFFIX && audit_hash_compute(p, l - SUFFIX, NULL, 0, hex) == 0)
			memcpy(p + l - SUFFIX + sizeof(AUDIT_HASH_SEP) - 1, hex,
			    AUDIT_HASH_HEX);
		p += l + 1;
	}
}

/*
 * Where each complete line of buf[0..len-1] starts (*starts, malloc; one more at
 * the end: where the next would).  Returns their number, or -1 on ENOMEM.
 */
static long long
fz_lines(const char *buf, size_t len, size_t **starts)
{
	long long n = 0;
	size_t i;

	if ((*starts = malloc((len + 2) * sizeof(**starts))) == NULL)
		return -1;
	(*starts)[0] = 0;
	for (i = 0; i < len; i++)
		if (buf[i] == '\n')
			(*starts)[++n] = i + 1;
	return n;
}

static void
fz_check(struct audit_index *ix, const char *buf, size_t len)
{
	static const char *const texts[] = { "deny", "\"", "\\u" };
	struct audit_index_status st;
	struct audit_index_rec r;
	struct audit_filter f = AUDIT_FILTER_INIT;
	long long *v, nlines, k;
	size_t n, all, i, *at, s, l;
	char *sum;
	json_t *j;

	audit_index_status(ix, &st);
	if ((nlines = fz_lines(buf, len, &at)) == -1)
		return;
	/* A line over AUDIT_LINE_MAX stops the index; the fuzzer's inputs are smaller. */
	if (st.ais_records != nlines)
		abort();
	for (k = 1; k <= st.ais_records; k++) {
		if (audit_index_get(ix, k, &r) == -1)
			abort();
		s = at[k - 1];
		l = at[k] - s - 1;
		if (r.air_len != l || memcmp(r.air_text, buf + s, l) != 0 ||
		    r.air_line != k)
			abort();
		if (st.ais_state == AUDIT_INDEX_TAMPERED ?
		    r.air_verified != (k < st.ais_bad_n) : !r.air_verified)
			abort();
		audit_index_rec_free(&r);
	}
	if (audit_index_find(ix, &f, 0, &v, &all) == -1 || all != (size_t)nlines)
		abort();
	free(v);
	for (i = 0; i < 6; i++) {
		f = (struct audit_filter)AUDIT_FILTER_INIT;
		if (i < 3)
			f.af_text = texts[i];
		else if (i == 3) {
			f.af_decision = "deny";
			f.af_host_part = ".";
		} else if (i == 4) {
			f.af_since = 0;
			f.af_until = 1LL << 50;
			f.af_event = "dns";
		} else
			f.af_host = ".example";
		if (audit_index_find(ix, &f, i, &v, &n) == -1 || n > all)
			abort();
		for (k = 0; k < (long long)n; k++)
			if (v[k] <= (long long)i || v[k] > nlines ||
			    (k > 0 && v[k] <= v[k - 1]))
				abort();
		free(v);
	}
	if ((sum = audit_index_summary(ix, i & 1 ? "demo" : NULL, 3, 2)) == NULL)
		abort();
	if ((j = json_loads(sum, 0, NULL)) == NULL)
		abort();
	json_decref(j);
	free(sum);
	free(at);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct audit_index *ix;
	char path[64], err[256], *buf, *cut;
	char *paths[1] = { path };
	size_t first;
	int fd, changed;

	if (size > 256 * 1024 || (buf = malloc(size + 1)) == NULL)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	if (size > 0 && (data[0] & 1))
		fz_fix(buf, size);
	cut = memmem(buf, size, "\n\n\n", 3);
	first = cut != NULL ? (size_t)(cut - buf) + 1 : size;
	if ((fd = memfd_create("fuzz_audit_index", MFD_CLOEXEC)) == -1) {
		free(buf);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (write(fd, buf, first) != (ssize_t)first ||
	    (ix = audit_index_new(paths, 1, NULL, 0)) == NULL)
		abort();
	if (audit_index_update(ix, &changed, err, sizeof(err)) == -1)
		abort();
	fz_check(ix, buf, first);
	if (first < size) {
		if (write(fd, buf + first, size - first) != (ssize_t)(size - first) ||
		    audit_index_update(ix, &changed, err, sizeof(err)) == -1)
			abort();
		fz_check(ix, buf, size);
	}
	audit_index_free(ix);
	close(fd);
	free(buf);
	return 0;
}
