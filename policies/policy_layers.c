/*
 * policies/policy_layers.c: a policy as the files it is made of (policies/SCHEMA.md,
 * "Bases"): reading them, following each "base" to the files it names, and merging
 * the documents policy_load.c validated into one struct policy whose rules are in
 * evaluation order, with the checks only the whole can make (mode, upstream proxy,
 * limits, deny rules that need requests inspected).
 *
 * The loader reads files through a bundle (struct policy_bundle) only.
 * policy_bundle_read() runs the same loader with a bundle that reads a file it does
 * not have from the file system and keeps it (with its error when it cannot be
 * read), so a bundle holds exactly the files a load asks for; loading it again
 * elsewhere (airlockd's worker, which opens no file) asks for the same files, in
 * the same order, and finds each.  A file's identity is its path as the loader
 * builds it: the name a "base" gives, joined to the folder of the file that names
 * it, with "." and ".." resolved in the text (never through a symbolic link), so a
 * cycle through another spelling of a path ends at the depth limit instead.
 *
 * The merge, for a file F with bases B1..Bn (each merged the same way first):
 * the deny rules of B1..Bn, then F's own deny rules, then F's own allow rules, then
 * the allow rules of B1..Bn.  So every deny comes before every allow, a base's deny
 * is never overridden, and a file's own allow rules are found before its bases'.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hostname.h"
#include "policy.h"
#include "policy_int.h"
#include "upstream.h"

/* One file of a load: its document and where it sits. */
struct ld_node {
	struct policy	*ln_pol;	/* its own rules, in file order */
	struct policy_source *ln_src;	/* goes to the result's p_files */
	size_t		 ln_text;	/* its index in the bundle */
	int		 ln_mode;	/* it says "mode" */
	int		 ln_unknown;	/* it says "unknown" */
	size_t		*ln_kids;	/* nodes first loaded from its "base" */
	size_t		 ln_nkids;
};

struct ld {
	const struct policy_bundle *ld_b;
	struct policy_bundle *ld_rw;	/* non-NULL: read what is missing */
	struct policy_errors *ld_errs;	/* may be NULL */
	size_t		 ld_nerr;
	int		 ld_oom;
	struct ld_node	*ld_v;
	size_t		 ld_n;
	size_t		 ld_chain[POLICY_BASE_DEPTH + 1];	/* the current path */
};

/* ---- the bundle ----------------------------------------------------------- */

static struct policy_text *
pb_find(const struct policy_bundle *b, const char *file)
{
	size_t i;

	for (i = 0; i < b->pb_n; i++)
		if (strcmp(b->pb_v[i].pt_file, file) == 0)
			return &b->pb_v[i];
	return NULL;
}

int
policy_bundle_add(struct policy_bundle *b, const char *file, const char *buf,
    size_t len, const char *error)
{
	struct policy_text *v, *t;

	if (pb_find(b, file) != NULL)
		return 0;
	if ((v = reallocarray(b->pb_v, b->pb_n + 1, sizeof(*v))) == NULL)
		return -1;
	b->pb_v = v;
	t = &v[b->pb_n];
	memset(t, 0, sizeof(*t));
	if ((t->pt_file = strdup(file)) == NULL)
		return -1;
	if (buf != NULL) {
		if ((t->pt_buf = malloc(len + 1)) == NULL) {
			free(t->pt_file);
			return -1;
		}
		memcpy(t->pt_buf, buf, len);
		t->pt_buf[len] = '\0';
		t->pt_len = len;
	} else if ((t->pt_error = strdup(error != NULL ? error :
	    "cannot be read")) == NULL) {
		free(t->pt_file);
		return -1;
	}
	b->pb_n++;
	return 0;
}

void
policy_bundle_free(struct policy_bundle *b)
{
	size_t i;

	if (b == NULL)
		return;
	for (i = 0; i < b->pb_n; i++) {
		free(b->pb_v[i].pt_file);
		free(b->pb_v[i].pt_buf);
		free(b->pb_v[i].pt_error);
	}
	free(b->pb_v);
	b->pb_v = NULL;
	b->pb_n = 0;
}

/*
 * Reads file whole into *buf (*len bytes), or says why not in reason: a regular
 * file of at most POLICY_FILE_MAX bytes that does not grow while it is read.
 * 0, or -1.
 */
static int
ld_file_read(const char *file, char **buf, size_t *len, char *reason,
    size_t reasonlen)
{
	struct stat st;
	char *b = NULL;
	size_t cap, got = 0;
	ssize_t r;
	int fd;

	*buf = NULL;
	*len = 0;
	/* O_NONBLOCK: a FIFO must not hang us before fstat() refuses it. */
	if ((fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)) == -1) {
		snprintf(reason, reasonlen, "cannot open: %s", strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) == -1) {
		snprintf(reason, reasonlen, "cannot stat: %s", strerror(errno));
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(reason, reasonlen, "not a regular file");
		goto fail;
	}
	if (st.st_size > POLICY_FILE_MAX) {
		snprintf(reason, reasonlen, "larger than 1 MiB: not a policy");
		goto fail;
	}
	/* One byte more than stat says, to notice a file growing under us. */
	cap = (size_t)st.st_size + 1;
	if ((b = malloc(cap)) == NULL) {
		snprintf(reason, reasonlen, "out of memory");
		goto fail;
	}
	while (got < cap) {
		if ((r = read(fd, b + got, cap - got)) == -1) {
			if (errno == EINTR)
				continue;
			snprintf(reason, reasonlen, "cannot read: %s",
			    strerror(errno));
			goto fail;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	if (got == cap) {
		snprintf(reason, reasonlen, "changed while being read");
		goto fail;
	}
	close(fd);
	*buf = b;
	*len = got;
	return 0;
 fail:
	free(b);
	close(fd);
	return -1;
}

/* The index of file's text in the bundle (read into it when reading), or -1. */
static long
ld_text(struct ld *L, const char *file)
{
	const struct policy_text *t;
	char reason[256], *buf;
	size_t len;
	int rv;

	if ((t = pb_find(L->ld_b, file)) != NULL)
		return t - L->ld_b->pb_v;
	if (L->ld_rw == NULL)
		return -1;
	if (ld_file_read(file, &buf, &len, reason, sizeof(reason)) == 0) {
		rv = policy_bundle_add(L->ld_rw, file, buf, len, NULL);
		free(buf);
	} else
		rv = policy_bundle_add(L->ld_rw, file, NULL, 0, reason);
	if (rv == -1) {
		L->ld_oom = 1;
		return -1;
	}
	return (long)L->ld_b->pb_n - 1;
}

/*
 * The path of base name in the file from: name if absolute, else joined to from's
 * folder; empty and "." segments dropped, ".." taking away the segment before it
 * (none above "/"; kept at the start of a relative path).  0, or -1 (too long).
 */
static int
ld_base_path(const char *from, const char *name, char *out, size_t outlen)
{
	char joined[2 * PATH_MAX], *seg, *save = NULL;
	const char *slash;
	size_t o = 0, n, keep = 0;
	int abs;

	if (name[0] == '/' || (slash = strrchr(from, '/')) == NULL)
		n = (size_t)snprintf(joined, sizeof(joined), "%s", name);
	else
		n = (size_t)snprintf(joined, sizeof(joined), "%.*s/%s",
		    (int)(slash - from), from, name);
	if (n >= sizeof(joined))
		return -1;
	abs = joined[0] == '/';
	if (abs) {
		if (outlen < 2)
			return -1;
		out[o++] = '/';
	}
	out[o] = '\0';
	/*
	 * out is the result so far; keep, how many of its leading bytes are ".."
	 * segments a relative path cannot resolve (never taken away).
	 */
	for (seg = strtok_r(joined, "/", &save); seg != NULL;
	    seg = strtok_r(NULL, "/", &save)) {
		if (strcmp(seg, ".") == 0)
			continue;
		if (strcmp(seg, "..") == 0 && o > keep && o > (size_t)abs) {
			while (o > (size_t)abs && out[o - 1] != '/')
				o--;
			if (o > (size_t)abs)
				o--;	/* the '/' before it */
			out[o] = '\0';
			continue;
		}
		if (strcmp(seg, "..") == 0 && abs)
			continue;	/* "/.." is "/" */
		n = strlen(seg);
		if (o + (o > (size_t)abs) + n + 1 > outlen || o + n >= PATH_MAX)
			return -1;
		if (o > (size_t)abs)
			out[o++] = '/';
		memcpy(out + o, seg, n + 1);
		o += n;
		if (strcmp(seg, "..") == 0)
			keep = o;
	}
	if (o == 0) {
		if (outlen < 2)
			return -1;
		memcpy(out, ".", 2);
	}
	return 0;
}

/* ---- loading -------------------------------------------------------------- */

static void __attribute__((format(printf, 5, 6)))
ld_err_at(struct ld *L, size_t node, const char *key, long idx,
    const char *fmt, ...)
{
	const struct policy_text *t = &L->ld_b->pb_v[L->ld_v[node].ln_text];
	va_list ap;

	va_start(ap, fmt);
	pl_verr_at(L->ld_errs, &L->ld_nerr, t->pt_file, t->pt_buf, t->pt_len, key,
	    idx, fmt, ap);
	va_end(ap);
}

/* "a.json -> b.json -> ...": the files of the current path down to depth. */
static void
ld_chain_fmt(const struct ld *L, unsigned int depth, const char *last, char *buf,
    size_t len)
{
	unsigned int i;
	size_t o = 0;

	buf[0] = '\0';
	for (i = 0; i < depth && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s -> ",
		    L->ld_v[L->ld_chain[i]].ln_src->ps_file);
	if (o < len)
		snprintf(buf + o, len - o, "%s", last);
}

static int
ld_kid_add(struct ld *L, size_t node, size_t kid)
{
	struct ld_node *n = &L->ld_v[node];
	size_t *v;

	if ((v = reallocarray(n->ln_kids, n->ln_nkids + 1, sizeof(*v))) == NULL) {
		L->ld_oom = 1;
		return -1;
	}
	n->ln_kids = v;
	v[n->ln_nkids++] = kid;
	return 0;
}

/*
 * Loads file, then its bases.  from: the node whose "base"[idx] names file (as
 * written: as), or -1 for a layer's own file.  The new node's index; -2 when file
 * was loaded before (by another path: one layer, at its first place); -1 after an
 * error.
 */
static long
ld_file(struct ld *L, const char *file, const char *as, long from, size_t idx,
    unsigned int depth, unsigned int layer)
{
	struct pl_doc d;
	struct ld_node *v, *n;
	struct policy_source *src;
	const struct policy_text *t;
	char chain[1024], path[PATH_MAX], q[96];
	const char *name = NULL;
	unsigned int i;
	long ti;
	size_t k, me;

	if (from >= 0) {
		name = pl_quote(q, sizeof(q), as, strlen(as));
		for (i = 0; i < depth; i++)
			if (strcmp(L->ld_v[L->ld_chain[i]].ln_src->ps_file,
			    file) == 0) {
				ld_chain_fmt(L, depth, file, chain, sizeof(chain));
				ld_err_at(L, (size_t)from, "base", (long)idx,
				    "a cycle of bases: %s", chain);
				return -1;
			}
	}
	for (k = 0; k < L->ld_n; k++)
		if (strcmp(L->ld_v[k].ln_src->ps_file, file) == 0)
			return -2;
	if (from >= 0 && depth > POLICY_BASE_DEPTH) {
		ld_chain_fmt(L, depth, file, chain, sizeof(chain));
		ld_err_at(L, (size_t)from, "base", (long)idx, "more than %d levels "
		    "of bases: %s", POLICY_BASE_DEPTH, chain);
		return -1;
	}
	if (from >= 0 && L->ld_n >= POLICY_FILES_MAX) {
		ld_err_at(L, (size_t)from, "base", (long)idx, "more than %d files "
		    "in one policy", POLICY_FILES_MAX);
		return -1;
	}
	if ((ti = ld_text(L, file)) == -1) {
		if (L->ld_oom)
			return -1;
		t = NULL;
	} else
		t = &L->ld_b->pb_v[ti];
	if (t == NULL || t->pt_buf == NULL) {
		const char *why = t != NULL ? t->pt_error : "not read (a policy "
		    "loaded from memory reads no other file)";

		if (from >= 0)
			ld_err_at(L, (size_t)from, "base", (long)idx, "base \"%s\" "
			    "(%s): %s", name, file, why);
		else
			pl_err_file(L->ld_errs, &L->ld_nerr, file, why);
		return -1;
	}
	if (pl_doc_load(t->pt_buf, t->pt_len, file, L->ld_errs, &L->ld_nerr,
	    &d) == -1)
		return -1;
	if ((src = calloc(1, sizeof(*src))) == NULL ||
	    (src->ps_file = strdup(file)) == NULL ||
	    (src->ps_name = strdup(d.pd_pol->p_name)) == NULL ||
	    (v = reallocarray(L->ld_v, L->ld_n + 1, sizeof(*v))) == NULL) {
		if (src != NULL) {
			free(src->ps_file);
			free(src->ps_name);
		}
		free(src);
		pl_doc_free(&d);
		L->ld_oom = 1;
		return -1;
	}
	memcpy(src->ps_hash, d.pd_pol->p_hash, sizeof(src->ps_hash));
	src->ps_nrules = d.pd_pol->p_nrules;
	src->ps_depth = depth;
	src->ps_layer = layer;
	L->ld_v = v;
	me = L->ld_n++;
	n = &v[me];
	memset(n, 0, sizeof(*n));
	n->ln_pol = d.pd_pol;
	d.pd_pol = NULL;
	n->ln_src = src;
	n->ln_text = (size_t)ti;
	n->ln_mode = d.pd_mode;
	n->ln_unknown = d.pd_unknown;
	L->ld_chain[depth] = me;
	for (k = 0; k < d.pd_nbase && !L->ld_oom &&
	    L->ld_nerr < POLICY_ERRORS_MAX; k++) {
		long kid;

		if (ld_base_path(file, d.pd_base[k], path, sizeof(path)) == -1) {
			ld_err_at(L, me, "base", (long)k, "base \"%s\": its path is "
			    "too long", pl_quote(q, sizeof(q), d.pd_base[k],
			    strlen(d.pd_base[k])));
			continue;
		}
		kid = ld_file(L, path, d.pd_base[k], (long)me, k, depth + 1,
		    layer);
		if (kid >= 0)
			(void)ld_kid_add(L, me, (size_t)kid);
	}
	pl_doc_free(&d);
	return (long)me;
}

static void
ld_free(struct ld *L)
{
	size_t i;

	for (i = 0; i < L->ld_n; i++) {
		policy_free(L->ld_v[i].ln_pol);
		if (L->ld_v[i].ln_src != NULL) {
			free(L->ld_v[i].ln_src->ps_file);
			free(L->ld_v[i].ln_src->ps_name);
			free(L->ld_v[i].ln_src);
		}
		free(L->ld_v[i].ln_kids);
	}
	free(L->ld_v);
	memset(L, 0, sizeof(*L));
}

/* ---- merging -------------------------------------------------------------- */

static int
ld_port_cmp(const void *a, const void *b)
{
	uint16_t x = *(const uint16_t *)a, y = *(const uint16_t *)b;

	return (x > y) - (x < y);
}

/* Moves node's rules of action a into p (the bases' around its own, see above). */
static void
ld_emit(struct ld *L, size_t node, enum policy_action a, struct policy *p)
{
	const struct ld_node *n = &L->ld_v[node];
	struct policy_rule *r;
	size_t i;

	if (a == POLICY_ACTION_DENY)
		for (i = 0; i < n->ln_nkids; i++)
			ld_emit(L, n->ln_kids[i], a, p);
	for (i = 0; i < n->ln_pol->p_nrules; i++) {
		if (n->ln_pol->p_rules[i].pr_action != a)
			continue;
		r = &p->p_rules[p->p_nrules++];
		*r = n->ln_pol->p_rules[i];
		r->pr_file = n->ln_src->ps_file;
		r->pr_index = i;
	}
	if (a == POLICY_ACTION_ALLOW)
		for (i = 0; i < n->ln_nkids; i++)
			ld_emit(L, n->ln_kids[i], a, p);
}

/* The node a rule of the result came from. */
static size_t
ld_node_of(const struct ld *L, const struct policy_rule *r)
{
	size_t i;

	for (i = 0; i < L->ld_n; i++)
		if (L->ld_v[i].ln_src->ps_file == r->pr_file)
			return i;
	return 0;	/* not reached: every rule has its node's name */
}

/* 0 is "none" (unlimited, or airlock's own h2 limit): else the smaller. */
static uint64_t
ld_stricter(uint64_t a, uint64_t b)
{
	if (a == 0 || (b != 0 && b < a))
		return b;
	return a;
}

static void
ld_limits(struct policy_limits *l, const struct policy_limits *m)
{
	l->pl_connections = (uint32_t)ld_stricter(l->pl_connections,
	    m->pl_connections);
	l->pl_requests_per_second = (uint32_t)ld_stricter(
	    l->pl_requests_per_second, m->pl_requests_per_second);
	l->pl_bytes_per_second = ld_stricter(l->pl_bytes_per_second,
	    m->pl_bytes_per_second);
	l->pl_connections_per_second = (uint32_t)ld_stricter(
	    l->pl_connections_per_second, m->pl_connections_per_second);
	l->pl_h2_streams = (uint32_t)ld_stricter(l->pl_h2_streams,
	    m->pl_h2_streams);
	l->pl_h2_resets_per_second = (uint32_t)ld_stricter(
	    l->pl_h2_resets_per_second, m->pl_h2_resets_per_second);
	l->pl_h2_control_per_second = (uint32_t)ld_stricter(
	    l->pl_h2_control_per_second, m->pl_h2_control_per_second);
}

static int
ld_same_upstream(const struct policy *a, const struct policy *b)
{
	if (a->p_upstream != b->p_upstream)
		return 0;
	if (a->p_upstream != POLICY_UPSTREAM_PROXY)
		return 1;
	return upstream_same(&a->p_upstream_proxy, &b->p_upstream_proxy) &&
	    strcmp(a->p_upstream_proxy.up_auth, b->p_upstream_proxy.up_auth) == 0;
}

/*
 * mode: report only when every file of the policy says so; upstream_proxy: the one
 * the files that name one agree on; limits: the strictest.  An extra layer names
 * neither mode nor upstream_proxy.  Errors at the key.
 */
static void
ld_top_keys(struct ld *L, struct policy *p)
{
	const struct ld_node *n, *up = NULL;
	size_t i;

	p->p_mode = POLICY_MODE_REPORT;
	/* "ask" by the policy's own file; any file of it that says "deny" wins. */
	p->p_unknown = L->ld_n > 0 ? L->ld_v[0].ln_pol->p_unknown :
	    POLICY_UNKNOWN_DENY;
	for (i = 0; i < L->ld_n; i++) {
		n = &L->ld_v[i];
		ld_limits(&p->p_limits, &n->ln_pol->p_limits);
		if (n->ln_unknown && n->ln_pol->p_unknown == POLICY_UNKNOWN_DENY)
			p->p_unknown = POLICY_UNKNOWN_DENY;
		if (n->ln_src->ps_layer > 0) {
			if (n->ln_unknown)
				ld_err_at(L, i, "unknown", -1, "an extra layer "
				    "cannot set \"unknown\" (the policy's own files "
				    "do)");
			if (n->ln_mode)
				ld_err_at(L, i, "mode", -1, "an extra layer cannot "
				    "set \"mode\" (the policy's own files do)");
			if (n->ln_pol->p_upstream != POLICY_UPSTREAM_GLOBAL)
				ld_err_at(L, i, "upstream_proxy", -1, "an extra "
				    "layer cannot set \"upstream_proxy\" (the "
				    "policy's own files do)");
			continue;
		}
		if (n->ln_pol->p_mode != POLICY_MODE_REPORT)
			p->p_mode = POLICY_MODE_ENFORCE;
		if (n->ln_pol->p_upstream == POLICY_UPSTREAM_GLOBAL)
			continue;
		if (up == NULL) {
			up = n;
			p->p_upstream = n->ln_pol->p_upstream;
			p->p_upstream_proxy = n->ln_pol->p_upstream_proxy;
		} else if (!ld_same_upstream(up->ln_pol, n->ln_pol))
			ld_err_at(L, i, "upstream_proxy", -1, "differs from the "
			    "\"upstream_proxy\" of %s: the files of a policy that "
			    "set it must agree", up->ln_src->ps_file);
	}
}

/* Does host pattern r (exact or "*.suffix") match every name pattern m matches? */
static int
ld_covers(const char *r, const char *m)
{
	return strcmp(r, m) == 0 ||
	    (r[0] == '*' && hostname_match(r, m[0] == '*' ? m + 2 : m));
}

/*
 * The names both host patterns match, as a pattern (the narrower of the two; two
 * patterns that share a name nest), or NULL when there is none.
 */
static const char *
ld_meet(const char *a, const char *b)
{
	if (ld_covers(a, b))
		return b;
	return ld_covers(b, a) ? a : NULL;
}

/*
 * Would allow rule a decide a connection to some name of pattern m on one of the
 * ports in set (a bitmap, changed): the ports no allow rule before a takes for
 * every name of m?
 */
static int
ld_decides(const struct policy *p, const struct policy_rule *a, const char *m,
    unsigned char *set)
{
	const struct policy_rule *r;
	size_t i, k;

	for (r = p->p_rules; r < a; r++) {
		if (r->pr_action != POLICY_ACTION_ALLOW || r->pr_is_cidr ||
		    !ld_covers(r->pr_host, m))
			continue;
		for (k = 0; k < r->pr_nports; k++)
			set[r->pr_ports[k] / 8] &= (unsigned char)~(1 <<
			    (r->pr_ports[k] % 8));
	}
	for (i = 0; i < 65536 / 8; i++)
		if (set[i] != 0)
			return 1;
	return 0;
}

/*
 * A deny rule with methods or paths decides requests, which a spliced connection
 * never shows: an allow rule that would splice a name such a rule covers, on a
 * port it covers, is an error (not one that an earlier allow rule shadows there).
 * What this cannot see (TLS on a raw-TCP rule, a cidr rule matching the
 * connection's address), policy_decide() refuses per connection.
 */
static void
ld_unseen_requests(struct ld *L, const struct policy *p)
{
	unsigned char set[65536 / 8];
	const struct policy_rule *d, *a;
	const char *m;
	size_t i, k, j;

	for (i = 0; i < p->p_nrules && L->ld_nerr < POLICY_ERRORS_MAX; i++) {
		a = &p->p_rules[i];
		if (a->pr_action != POLICY_ACTION_ALLOW || a->pr_is_cidr ||
		    a->pr_proto != POLICY_PROTO_TLS || a->pr_tls != POLICY_TLS_SPLICE)
			continue;
		for (k = 0; k < p->p_nrules; k++) {
			d = &p->p_rules[k];
			if (d->pr_action != POLICY_ACTION_DENY)
				break;	/* every deny rule comes first */
			if (d->pr_is_cidr || (d->pr_nmethods == 0 &&
			    d->pr_npaths == 0) || d->pr_proto == POLICY_PROTO_HTTP ||
			    (m = ld_meet(d->pr_host, a->pr_host)) == NULL)
				continue;
			/* The ports both name (a deny rule without ports: all). */
			memset(set, 0, sizeof(set));
			for (j = 0; j < a->pr_nports; j++)
				if (d->pr_nports == 0 || bsearch(&a->pr_ports[j],
				    d->pr_ports, d->pr_nports, sizeof(*d->pr_ports),
				    ld_port_cmp) != NULL)
					set[a->pr_ports[j] / 8] |= (unsigned char)(1 <<
					    (a->pr_ports[j] % 8));
			if (!ld_decides(p, a, m, set))
				continue;
			ld_err_at(L, ld_node_of(L, a), "rules", (long)a->pr_index,
			    "rule \"%s\" splices %s, where deny rule \"%s\" of %s "
			    "refuses requests by method or path, which a spliced "
			    "connection never shows: inspect it (\"tls\": "
			    "\"inspect\"), or allow those names with an inspecting "
			    "rule before it", a->pr_id, a->pr_host, d->pr_id,
			    d->pr_file);
			break;
		}
	}
}

/* p_hash: one file's own; else the SHA-256 of their hashes, one a line. */
static int
ld_hash(struct policy *p)
{
	char *text;
	size_t i;
	int rv;

	if (p->p_nfiles == 1) {
		memcpy(p->p_hash, p->p_files[0]->ps_hash, sizeof(p->p_hash));
		return 0;
	}
	if ((text = malloc(p->p_nfiles * 65)) == NULL)
		return -1;
	for (i = 0; i < p->p_nfiles; i++) {
		memcpy(text + 65 * i, p->p_files[i]->ps_hash, 64);
		text[65 * i + 64] = '\n';
	}
	rv = pl_hash(text, p->p_nfiles * 65, p->p_hash);
	free(text);
	return rv;
}

/* The files of the loaded nodes as one policy (the nodes keep nothing of it). */
static struct policy *
ld_merge(struct ld *L, const size_t *tops, size_t ntops)
{
	struct policy *p;
	size_t i, total = 0;
	const char *top = L->ld_v[tops[0]].ln_src->ps_file;

	for (i = 0; i < L->ld_n; i++)
		total += L->ld_v[i].ln_pol->p_nrules;
	if (total > POLICY_LAYER_RULES_MAX) {
		char why[128];

		snprintf(why, sizeof(why), "more than %d rules in all its files",
		    POLICY_LAYER_RULES_MAX);
		pl_err_file(L->ld_errs, &L->ld_nerr, top, why);
		return NULL;
	}
	if ((p = calloc(1, sizeof(*p))) == NULL ||
	    (total > 0 && (p->p_rules = calloc(total, sizeof(*p->p_rules))) ==
	    NULL) ||
	    (p->p_files = calloc(L->ld_n, sizeof(*p->p_files))) == NULL ||
	    (p->p_name = strdup(L->ld_v[tops[0]].ln_pol->p_name)) == NULL ||
	    (p->p_file = strdup(top)) == NULL)
		goto oom;
	for (i = 0; i < ntops; i++)
		ld_emit(L, tops[i], POLICY_ACTION_DENY, p);
	for (i = 0; i < ntops; i++)
		ld_emit(L, tops[i], POLICY_ACTION_ALLOW, p);
	/* The rules are p's now (their strings with them). */
	for (i = 0; i < L->ld_n; i++) {
		free(L->ld_v[i].ln_pol->p_rules);
		L->ld_v[i].ln_pol->p_rules = NULL;
		L->ld_v[i].ln_pol->p_nrules = 0;
	}
	ld_top_keys(L, p);
	ld_unseen_requests(L, p);
	for (i = 0; i < L->ld_n; i++) {
		p->p_files[i] = L->ld_v[i].ln_src;
		L->ld_v[i].ln_src = NULL;
	}
	p->p_nfiles = L->ld_n;
	if (L->ld_nerr > 0) {
		policy_free(p);
		return NULL;
	}
	if (ld_hash(p) == -1)
		goto oom;
	return p;
 oom:
	policy_free(p);
	L->ld_oom = 1;
	return NULL;
}

/*
 * Loads files[0..n-1] (a policy, then extra layers) from the bundle (reading what
 * it lacks when L reads), and merges them unless only reading.
 */
static struct policy *
ld_layers(struct ld *L, const char *const *files, size_t n, int merge)
{
	struct policy *p = NULL;
	size_t tops[POLICY_FILES_MAX], ntops = 0, i;
	long k;

	for (i = 0; i < n && !L->ld_oom; i++) {
		if (L->ld_n >= POLICY_FILES_MAX) {
			char why[128];

			snprintf(why, sizeof(why), "more than %d files in one "
			    "policy", POLICY_FILES_MAX);
			pl_err_file(L->ld_errs, &L->ld_nerr, files[i], why);
			break;
		}
		k = ld_file(L, files[i], NULL, -1, 0, 0, (unsigned int)i);
		if (k >= 0)
			tops[ntops++] = (size_t)k;
		else if (k == -2)
			pl_err_file(L->ld_errs, &L->ld_nerr, files[i], "an extra "
			    "layer that is already a file of the policy");
	}
	if (merge && !L->ld_oom && L->ld_nerr == 0 && ntops == n)
		p = ld_merge(L, tops, ntops);
	if (L->ld_oom && L->ld_errs != NULL)
		pl_err_file(L->ld_errs, &L->ld_nerr, n > 0 ? files[0] : "(policy)",
		    "out of memory");
	ld_free(L);
	return p;
}

/* ---- the public loaders --------------------------------------------------- */

int
policy_bundle_read(struct policy_bundle *b, const char *file)
{
	struct ld L;
	int oom;

	memset(&L, 0, sizeof(L));
	L.ld_b = b;
	L.ld_rw = b;
	(void)ld_layers(&L, &file, 1, 0);
	oom = L.ld_oom;
	return oom ? -1 : 0;
}

struct policy *
policy_load_layers(const struct policy_bundle *b, const char *const *files,
    size_t n, struct policy_errors *errs)
{
	struct ld L;

	memset(&L, 0, sizeof(L));
	L.ld_b = b;
	L.ld_errs = errs;
	if (n == 0 || n > POLICY_FILES_MAX) {
		pl_err_file(errs, &L.ld_nerr, "(policy)", n == 0 ? "no file to "
		    "load" : "too many layers");
		return NULL;
	}
	return ld_layers(&L, files, n, 1);
}

struct policy *
policy_load_bundle(const struct policy_bundle *b, struct policy_errors *errs)
{
	const char *file;
	size_t nerr = 0;

	if (b == NULL || b->pb_n == 0) {
		pl_err_file(errs, &nerr, "(policy)", "no policy file was read");
		return NULL;
	}
	file = b->pb_v[0].pt_file;
	return policy_load_layers(b, &file, 1, errs);
}

struct policy *
policy_load_file(const char *file, struct policy_errors *errs)
{
	struct policy_bundle b = { NULL, 0 };
	struct policy *p = NULL;
	size_t nerr = 0;

	if (policy_bundle_read(&b, file) == -1)
		pl_err_file(errs, &nerr, file, "out of memory");
	else
		p = policy_load_bundle(&b, errs);
	policy_bundle_free(&b);
	return p;
}

struct policy *
policy_load_buf(const char *buf, size_t len, const char *name,
    struct policy_errors *errs)
{
	struct policy_bundle b = { NULL, 0 };
	struct policy *p = NULL;
	size_t nerr = 0;

	if (name == NULL)
		name = "(policy)";
	if (policy_bundle_add(&b, name, buf, len, NULL) == -1)
		pl_err_file(errs, &nerr, name, "out of memory");
	else if ((p = policy_load_bundle(&b, errs)) != NULL) {
		free(p->p_file);	/* no file: a buffer */
		p->p_file = NULL;
	}
	policy_bundle_free(&b);
	return p;
}
