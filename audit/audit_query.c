/*
 * audit/audit_query.c: `airlock audit query` and `airlock audit summary`.  Read
 * tools: they stream the files line by line, judge no integrity (audit verify does)
 * and only warn about lines that are not JSON records.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "audit.h"
#include "audit_int.h"

static const char *
view_str(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

/*
 * Copies the host of s into buf, lower case and without a trailing dot:
 * "name:port", "[v6]:port", "name", "v4", or a bare IPv6 address.
 */
static void
host_norm(const char *s, char *buf, size_t len)
{
	const char *end, *colon;
	size_t n, i;

	if (s[0] == '[') {
		s++;
		end = strchr(s, ']');
	} else if ((colon = strchr(s, ':')) != NULL &&
	    strchr(colon + 1, ':') == NULL)
		end = colon;
	else
		end = NULL;
	n = end != NULL ? (size_t)(end - s) : strlen(s);
	if (n > 0 && s[n - 1] == '.')
		n--;
	if (n >= len) {
		/* Cut at a character's start: a summary's keys must stay UTF-8. */
		n = len - 1;
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
	}
	for (i = 0; i < n; i++)
		buf[i] = (char)tolower((unsigned char)s[i]);
	buf[n] = '\0';
}

int
audit_view_parse(struct audit_view *v, const char *line, size_t len)
{
	json_t *o, *st;

	memset(v, 0, sizeof(*v));
	v->av_status = -1;
	v->av_ts_ms = -1;
	v->av_host = v->av_hostbuf;
	if ((o = json_loadb(line, len, 0, NULL)) == NULL)
		return -1;
	if (!json_is_object(o)) {
		json_decref(o);
		return -1;
	}
	v->av_doc = o;
	v->av_ts = view_str(o, "ts");
	v->av_sandbox = view_str(o, "sandbox");
	v->av_event = view_str(o, "event");
	v->av_dst = view_str(o, "dst");
	v->av_qname = view_str(o, "qname");
	v->av_decision = view_str(o, "decision");
	v->av_rule = view_str(o, "rule");
	v->av_reason = view_str(o, "reason");
	v->av_method = view_str(o, "method");
	v->av_path = view_str(o, "path");
	if (json_is_integer(st = json_object_get(o, "status")))
		v->av_status = json_integer_value(st);
	v->av_would_deny = json_is_true(json_object_get(o, "would_deny"));
	v->av_times = json_integer_value(json_object_get(o, "suppressed"));
	if (v->av_times < 0)
		v->av_times = 0;
	if (!json_is_string(st = json_object_get(o, "aggregate")) ||
	    strcmp(json_string_value(st), "flush") != 0)
		v->av_times++;
	if (v->av_dst != NULL)
		host_norm(v->av_dst, v->av_hostbuf, sizeof(v->av_hostbuf));
	else if (v->av_qname != NULL)
		host_norm(v->av_qname, v->av_hostbuf, sizeof(v->av_hostbuf));
	if (v->av_ts != NULL && audit_time_parse(v->av_ts, 0, &v->av_ts_ms) == -1)
		v->av_ts_ms = -1;
	return 0;
}

void
audit_view_clear(struct audit_view *v)
{
	json_decref(v->av_doc);
	v->av_doc = NULL;
}

int
audit_host_match(const char *pattern, const char *host)
{
	char p[AUDIT_VIEW_HOST_MAX], h[AUDIT_VIEW_HOST_MAX];
	size_t pl, hl;
	int below_only = 0;

	if (pattern[0] == '*' && pattern[1] == '.') {
		below_only = 1;
		pattern++;
	}
	/* host_norm would take "a:b" apart; a pattern has no port. */
	pl = strlen(pattern);
	if (pl >= sizeof(p))
		return 0;
	for (hl = 0; hl < pl; hl++)
		p[hl] = (char)tolower((unsigned char)pattern[hl]);
	p[pl] = '\0';
	if (pl > 0 && p[pl - 1] == '.')
		p[--pl] = '\0';
	host_norm(host, h, sizeof(h));
	hl = strlen(h);
	if (p[0] != '.')
		return pl > 0 && strcmp(p, h) == 0;
	if (pl < 2)
		return 0;
	/* ".suffix": suffix itself (unless "*.") or any name below it. */
	if (!below_only && strcmp(p + 1, h) == 0)
		return 1;
	return hl > pl && strcmp(h + hl - pl, p) == 0;
}

/* 1 if needle (NUL-terminated) is in hay[0..len-1], ASCII case ignored. */
static int
contains_nocase(const char *hay, size_t len, const char *needle)
{
	size_t nl = strlen(needle), i, j;

	if (nl == 0)
		return 1;
	for (i = 0; i + nl <= len; i++) {
		for (j = 0; j < nl; j++)
			if (tolower((unsigned char)hay[i + j]) !=
			    tolower((unsigned char)needle[j]))
				break;
		if (j == nl)
			return 1;
	}
	return 0;
}

int
audit_filter_match(const struct audit_filter *f, const struct audit_view *v)
{
	if (f->af_sandbox != NULL && (v->av_sandbox == NULL ||
	    strcmp(f->af_sandbox, v->av_sandbox) != 0))
		return 0;
	if (f->af_decision != NULL && (v->av_decision == NULL ||
	    strcmp(f->af_decision, v->av_decision) != 0))
		return 0;
	if (f->af_event != NULL && (v->av_event == NULL ||
	    strcmp(f->af_event, v->av_event) != 0))
		return 0;
	if (f->af_reason != NULL && (v->av_reason == NULL ||
	    strcmp(f->af_reason, v->av_reason) != 0))
		return 0;
	if (f->af_host != NULL && (v->av_host[0] == '\0' ||
	    !audit_host_match(f->af_host, v->av_host)))
		return 0;
	if (f->af_host_part != NULL && (v->av_host[0] == '\0' ||
	    !contains_nocase(v->av_host, strlen(v->av_host), f->af_host_part)))
		return 0;
	if (f->af_since >= 0 || f->af_until >= 0) {
		if (v->av_ts_ms < 0)
			return 0;
		if (f->af_since >= 0 && v->av_ts_ms < f->af_since)
			return 0;
		if (f->af_until >= 0 && v->av_ts_ms > f->af_until)
			return 0;
	}
	return 1;
}

int
audit_filter_text(const struct audit_filter *f, const char *line, size_t len)
{
	return f->af_text == NULL || contains_nocase(line, len, f->af_text);
}

/*
 * Prints s for a terminal: "-" for NULL or empty, anything that is not printable
 * ASCII (and space and backslash, which would blur the columns) as \xNN, so a record
 * can neither forge a line of output nor send escape sequences.
 */
static void
print_field(FILE *out, const char *s)
{
	const unsigned char *p;

	if (s == NULL || *s == '\0') {
		fputc('-', out);
		return;
	}
	for (p = (const unsigned char *)s; *p != '\0'; p++) {
		if (*p <= 0x20 || *p >= 0x7f || *p == '\\')
			fprintf(out, "\\x%02x", *p);
		else
			fputc(*p, out);
	}
}

static void
print_view(FILE *out, const struct audit_view *v)
{
	char why[2 * AUDIT_STR_MAX + 2];

	print_field(out, v->av_ts);
	fputc(' ', out);
	print_field(out, v->av_sandbox);
	fputc(' ', out);
	print_field(out, v->av_event);
	fputc(' ', out);
	if (v->av_decision != NULL && v->av_would_deny) {
		print_field(out, v->av_decision);
		fputs(",would_deny", out);
	} else
		print_field(out, v->av_decision);
	fputc(' ', out);
	print_field(out, v->av_dst != NULL ? v->av_dst : v->av_qname);
	fputc(' ', out);
	if (v->av_rule != NULL && v->av_reason != NULL)
		snprintf(why, sizeof(why), "%s/%s", v->av_rule, v->av_reason);
	else
		snprintf(why, sizeof(why), "%s", v->av_rule != NULL ? v->av_rule :
		    v->av_reason != NULL ? v->av_reason : "");
	print_field(out, why);
	fputc(' ', out);
	print_field(out, v->av_method);
	fputc(' ', out);
	print_field(out, v->av_path);
	if (v->av_status >= 0)
		fprintf(out, " %lld\n", v->av_status);
	else
		fputs(" -\n", out);
}

/*
 * Calls fn on every record of every file.  Lines that are not JSON objects are
 * skipped with a warning on errf.  Returns 0, or -1 with err.
 */
static int
records_foreach(char *const *paths, int n, FILE *errf, char *err, size_t errlen,
    void (*fn)(void *, const struct audit_view *, const char *, size_t),
    void *arg)
{
	struct audit_reader *r;
	struct audit_view v;
	const char *line;
	size_t len;
	long long lineno;
	int i, complete, rc;

	for (i = 0; i < n; i++) {
		if ((r = audit_reader_open(paths[i])) == NULL) {
			snprintf(err, errlen, "%s: %s", paths[i], strerror(errno));
			return -1;
		}
		lineno = 0;
		while ((rc = audit_reader_next(r, &line, &len, &complete)) == 1) {
			lineno++;
			if (audit_view_parse(&v, line, len) == -1) {
				fprintf(errf, "airlock: warning: %s:%lld: not a JSON "
				    "record, skipped\n", paths[i], lineno);
				continue;
			}
			fn(arg, &v, line, len);
			audit_view_clear(&v);
		}
		if (rc == -1) {
			snprintf(err, errlen, "%s:%lld: %s", paths[i], lineno + 1,
			    errno == E2BIG ? "line longer than 1 MiB" :
			    strerror(errno));
			audit_reader_close(r);
			return -1;
		}
		audit_reader_close(r);
	}
	return 0;
}

struct query_ctx {
	const struct audit_filter *qc_filter;
	int		 qc_json;
	FILE		*qc_out;
};

static void
query_one(void *arg, const struct audit_view *v, const char *line, size_t len)
{
	struct query_ctx *qc = arg;

	if (!audit_filter_match(qc->qc_filter, v) ||
	    !audit_filter_text(qc->qc_filter, line, len))
		return;
	if (qc->qc_json) {
		fwrite(line, 1, len, qc->qc_out);
		fputc('\n', qc->qc_out);
	} else
		print_view(qc->qc_out, v);
}

int
audit_query(char *const *paths, int n, const struct audit_filter *f, int json,
    FILE *out, FILE *errf, char *err, size_t errlen)
{
	struct query_ctx qc = { f, json, out };

	if (records_foreach(paths, n, errf, err, errlen, query_one, &qc) == -1)
		return -1;
	if (fflush(out) == EOF || ferror(out)) {
		snprintf(err, errlen, "write: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* The summary is built in jansson objects, which double as maps and as --json. */
struct summary_ctx {
	json_t		*sc_root;
	int		 sc_oom;
};

static json_t *
obj_child(json_t *o, const char *key, int *oom)
{
	json_t *c;

	if ((c = json_object_get(o, key)) != NULL)
		return c;
	if ((c = json_object()) == NULL || json_object_set_new(o, key, c) == -1) {
		*oom = 1;
		return NULL;
	}
	return c;
}

static void
obj_add(json_t *o, const char *key, long long n, int *oom)
{
	json_t *c = json_object_get(o, key);

	if (c == NULL) {
		if (json_object_set_new(o, key, json_integer(n)) == -1)
			*oom = 1;
	} else
		json_integer_set(c, json_integer_value(c) + n);
}

static void
obj_count(json_t *o, const char *key, int *oom)
{
	obj_add(o, key, 1, oom);
}

/* n events (an aggregated record stands for several) to host, seen at ts. */
static void
host_count(json_t *map, const char *host, long long n, const char *ts, int *oom)
{
	json_t *h, *first, *last;

	if ((h = obj_child(map, host, oom)) == NULL)
		return;
	obj_add(h, "count", n, oom);
	if (ts == NULL)
		return;
	first = json_object_get(h, "first");
	last = json_object_get(h, "last");
	if (first == NULL || strcmp(ts, json_string_value(first)) < 0)
		if (json_object_set_new(h, "first", json_string(ts)) == -1)
			*oom = 1;
	if (last == NULL || strcmp(ts, json_string_value(last)) > 0)
		if (json_object_set_new(h, "last", json_string(ts)) == -1)
			*oom = 1;
}

void
audit_summary_add(json_t *root, const struct audit_view *v, int *oom)
{
	json_t *sbx, *sb;
	const char *ts;

	obj_count(root, "records", oom);
	if (v->av_reason != NULL)
		obj_add(obj_child(root, "reasons", oom), v->av_reason,
		    v->av_times, oom);
	if (v->av_sandbox == NULL || *oom)
		return;
	if ((sbx = obj_child(root, "sandboxes", oom)) == NULL ||
	    (sb = obj_child(sbx, v->av_sandbox, oom)) == NULL)
		return;
	obj_count(sb, "records", oom);
	if (v->av_reason != NULL)
		obj_add(obj_child(sb, "reasons", oom), v->av_reason, v->av_times,
		    oom);
	ts = v->av_ts;
	if (v->av_host[0] == '\0' || v->av_decision == NULL || *oom)
		return;
	if (strcmp(v->av_decision, "allow") == 0)
		host_count(obj_child(sb, "allowed", oom), v->av_host, 1, ts, oom);
	else if (strcmp(v->av_decision, "deny") == 0)
		host_count(obj_child(sb, "denied", oom), v->av_host, v->av_times,
		    ts, oom);
	if (v->av_would_deny && !*oom)
		host_count(obj_child(sb, "would_deny", oom), v->av_host, 1, ts, oom);
}

static void
summary_one(void *arg, const struct audit_view *v, const char *line, size_t len)
{
	struct summary_ctx *sc = arg;

	(void)line;
	(void)len;
	audit_summary_add(sc->sc_root, v, &sc->sc_oom);
}

json_t *
audit_summary_new(void)
{
	json_t *root;

	if ((root = json_object()) == NULL ||
	    json_object_set_new(root, "records", json_integer(0)) == -1 ||
	    json_object_set_new(root, "sandboxes", json_object()) == -1 ||
	    json_object_set_new(root, "reasons", json_object()) == -1) {
		json_decref(root);
		return NULL;
	}
	return root;
}

static long long
obj_int(json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

/* Keys of o, sorted by their count (or "count" inside them) down, then by name. */
static int
key_cmp(const void *a, const void *b, void *arg)
{
	json_t *o = arg, *va, *vb;
	const char *ka = *(const char *const *)a, *kb = *(const char *const *)b;
	long long ca, cb;

	va = json_object_get(o, ka);
	vb = json_object_get(o, kb);
	ca = json_is_object(va) ? obj_int(va, "count") : json_integer_value(va);
	cb = json_is_object(vb) ? obj_int(vb, "count") : json_integer_value(vb);
	if (ca != cb)
		return ca > cb ? -1 : 1;
	return strcmp(ka, kb);
}

static int
name_cmp(const void *a, const void *b, void *arg)
{
	(void)arg;
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static const char **
keys_sorted(json_t *o, int by_count, size_t *n)
{
	const char **keys, *k;
	json_t *v;
	size_t i = 0;

	*n = json_object_size(o);
	if ((keys = calloc(*n + 1, sizeof(*keys))) == NULL)
		return NULL;
	json_object_foreach(o, k, v)
		keys[i++] = k;
	qsort_r(keys, *n, sizeof(*keys), by_count ? key_cmp : name_cmp, o);
	return keys;
}

static int
print_hosts(FILE *out, const char *title, json_t *map)
{
	const char **keys;
	json_t *h;
	size_t n, i;

	if (map == NULL)
		return 0;
	if ((keys = keys_sorted(map, 1, &n)) == NULL)
		return -1;
	fprintf(out, "  %s (%zu host%s):\n", title, n, n == 1 ? "" : "s");
	for (i = 0; i < n; i++) {
		h = json_object_get(map, keys[i]);
		fputs("    ", out);
		print_field(out, keys[i]);
		fprintf(out, " %lld ", obj_int(h, "count"));
		print_field(out, json_string_value(json_object_get(h, "first")));
		fputs(" .. ", out);
		print_field(out, json_string_value(json_object_get(h, "last")));
		fputc('\n', out);
	}
	free(keys);
	return 0;
}

static int
print_reasons(FILE *out, const char *indent, json_t *map)
{
	const char **keys;
	size_t n, i;

	if (map == NULL)
		return 0;
	if ((keys = keys_sorted(map, 1, &n)) == NULL)
		return -1;
	fprintf(out, "%sreasons:\n", indent);
	for (i = 0; i < n; i++) {
		fprintf(out, "%s  ", indent);
		print_field(out, keys[i]);
		fprintf(out, " %lld\n", obj_int(map, keys[i]));
	}
	free(keys);
	return 0;
}

static int
summary_print(FILE *out, json_t *root)
{
	const char **names = NULL;
	json_t *sbx, *sb;
	size_t n = 0, i;
	int rv = -1;

	if ((sbx = json_object_get(root, "sandboxes")) != NULL &&
	    (names = keys_sorted(sbx, 0, &n)) == NULL)
		goto out;
	for (i = 0; i < n; i++) {
		sb = json_object_get(sbx, names[i]);
		fputs("sandbox ", out);
		print_field(out, names[i]);
		fprintf(out, ": %lld records\n", obj_int(sb, "records"));
		if (print_hosts(out, "allowed", json_object_get(sb, "allowed")) == -1 ||
		    print_hosts(out, "denied", json_object_get(sb, "denied")) == -1 ||
		    print_hosts(out, "would deny (report mode)",
		    json_object_get(sb, "would_deny")) == -1 ||
		    print_reasons(out, "  ", json_object_get(sb, "reasons")) == -1)
			goto out;
	}
	fprintf(out, "total: %lld records, %zu sandbox%s\n", obj_int(root, "records"),
	    n, n == 1 ? "" : "es");
	if (print_reasons(out, "", json_object_get(root, "reasons")) == -1)
		goto out;
	rv = 0;
 out:
	free(names);
	return rv;
}

int
audit_summary(char *const *paths, int n, int json, FILE *out, FILE *errf,
    char *err, size_t errlen)
{
	struct summary_ctx sc = { NULL, 0 };
	int rv = -1;

	if ((sc.sc_root = audit_summary_new()) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if (records_foreach(paths, n, errf, err, errlen, summary_one, &sc) == -1)
		goto out;
	if (sc.sc_oom) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if (json) {
		if (json_dumpf(sc.sc_root, out, JSON_INDENT(2) | JSON_SORT_KEYS |
		    JSON_ENSURE_ASCII) == -1) {
			snprintf(err, errlen, "write failed");
			goto out;
		}
		fputc('\n', out);
	} else if (summary_print(out, sc.sc_root) == -1) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if (fflush(out) == EOF || ferror(out)) {
		snprintf(err, errlen, "write: %s", strerror(errno));
		goto out;
	}
	rv = 0;
 out:
	json_decref(sc.sc_root);
	return rv;
}

/*
 * The summary as the web view shows it: maps become lists sorted as `audit
 * summary` prints them, each host list cut to its top entries (with the number of
 * hosts beside it), so that a log of a million names is still a small answer.
 */
static int
list_add(json_t *list, json_t *item)
{
	return item == NULL || json_array_append_new(list, item) == -1 ? -1 : 0;
}

static int
hosts_top(json_t *dst, const char *name, json_t *map, size_t top)
{
	const char **keys;
	char count_key[64];
	json_t *list, *h;
	size_t n = 0, i;
	int rv = -1;

	if ((list = json_array()) == NULL ||
	    json_object_set_new(dst, name, list) == -1)
		return -1;
	snprintf(count_key, sizeof(count_key), "%s_hosts", name);
	if (map == NULL)
		return json_object_set_new(dst, count_key, json_integer(0));
	if ((keys = keys_sorted(map, 1, &n)) == NULL)
		return -1;
	for (i = 0; i < n && i < top; i++) {
		h = json_object_get(map, keys[i]);
		if (list_add(list, json_pack("{s:s, s:I, s:O?, s:O?}", "host", keys[i],
		    "count", (json_int_t)obj_int(h, "count"), "first",
		    json_object_get(h, "first"), "last",
		    json_object_get(h, "last"))) == -1)
			goto out;
	}
	rv = json_object_set_new(dst, count_key, json_integer((json_int_t)n));
 out:
	free(keys);
	return rv;
}

static json_t *
reasons_list(json_t *map)
{
	const char **keys = NULL;
	json_t *list;
	size_t n = 0, i;

	if ((list = json_array()) == NULL)
		return NULL;
	if (map != NULL && (keys = keys_sorted(map, 1, &n)) == NULL)
		goto fail;
	for (i = 0; i < n; i++)
		if (list_add(list, json_pack("{s:s, s:I}", "reason", keys[i],
		    "count", (json_int_t)obj_int(map, keys[i]))) == -1)
			goto fail;
	free(keys);
	return list;
 fail:
	free(keys);
	json_decref(list);
	return NULL;
}

json_t *
audit_summary_view(json_t *root, const char *sandbox, size_t top)
{
	const char **names = NULL;
	json_t *out, *list, *sbx, *sb, *o;
	size_t n = 0, i;

	sbx = json_object_get(root, "sandboxes");
	if ((out = json_pack("{s:I}", "records",
	    (json_int_t)obj_int(root, "records"))) == NULL ||
	    json_object_set_new(out, "reasons",
	    reasons_list(json_object_get(root, "reasons"))) == -1 ||
	    (list = json_array()) == NULL ||
	    json_object_set_new(out, "sandboxes", list) == -1 ||
	    (sbx != NULL && (names = keys_sorted(sbx, 0, &n)) == NULL))
		goto fail;
	for (i = 0; i < n; i++) {
		if (sandbox != NULL && strcmp(sandbox, names[i]) != 0)
			continue;
		sb = json_object_get(sbx, names[i]);
		if ((o = json_pack("{s:s, s:I}", "sandbox", names[i], "records",
		    (json_int_t)obj_int(sb, "records"))) == NULL ||
		    json_array_append_new(list, o) == -1 ||
		    hosts_top(o, "allowed", json_object_get(sb, "allowed"), top) == -1 ||
		    hosts_top(o, "denied", json_object_get(sb, "denied"), top) == -1 ||
		    hosts_top(o, "would_deny", json_object_get(sb, "would_deny"),
		    top) == -1 ||
		    json_object_set_new(o, "reasons",
		    reasons_list(json_object_get(sb, "reasons"))) == -1)
			goto fail;
	}
	free(names);
	return out;
 fail:
	free(names);
	json_decref(out);
	return NULL;
}
