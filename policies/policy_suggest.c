/*
 * policies/policy_suggest.c: a minimal policy from what a sandbox was seen to do
 * (`airlock policy suggest`).  The caller feeds what it read from audit records, one
 * policy_seen each; policy_suggest_build() turns them into a policy document that
 * policy_load_buf() accepts (it is loaded before it is returned: a suggestion that
 * would not load is an error, never printed).
 *
 * What it suggests, and why so little:
 *   - one rule per destination (a name, or an address as a /32 or /128 cidr rule) and
 *     protocol, with exactly the ports seen;
 *   - TLS is spliced unless the destination was seen inspected; inspected and plain
 *     HTTP destinations get the methods seen and the paths seen as globs: a segment
 *     that looks like an identifier (digits, long hex, a UUID) becomes "*", and
 *     `siblings` or more paths under one parent become "parent/" and a star;
 *   - a wildcard "*.domain" only where at least `siblings` names below one
 *     registrable domain (libpsl) were seen with the same protocol and mode and no
 *     request checks, and no name below it without request checks was seen
 *     otherwise; never over a public suffix (the loader refuses one too);
 *   - never an address of the floor (netaddr_classify()), never a path that cannot be
 *     kept as a literal glob (one with '*' in it, or one the normaliser refuses):
 *     each is said in the notes instead.
 * Each rule's id says how many records it covers ("api.github.com-12-records").
 */
#include <sys/socket.h>

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "policy.h"

#define SG_PATHS_MAX	256	/* a rule's paths: the loader's limit */
#define SG_METHODS_MAX	32

struct sg_dest {
	char		 sd_host[HOSTNAME_MAX + 1];	/* "" for an address */
	struct netaddr	 sd_addr;
	enum policy_proto sd_proto;
	int		 sd_inspect;
	uint16_t	*sd_ports;
	size_t		 sd_nports;
	char		**sd_methods;
	size_t		 sd_nmethods;
	char		**sd_paths;
	size_t		 sd_npaths;
	unsigned long	 sd_records;
	int		 sd_merged;	/* folded into a wildcard */
};

struct policy_suggest {
	struct sg_dest	*ps_v;
	size_t		 ps_n;
	FILE		*ps_notes;
	int		 ps_nomem;
};

struct policy_suggest *
policy_suggest_new(FILE *notes)
{
	struct policy_suggest *s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	s->ps_notes = notes;
	return s;
}

static void
sg_strv_free(char **v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void
policy_suggest_free(struct policy_suggest *s)
{
	size_t i;

	if (s == NULL)
		return;
	for (i = 0; i < s->ps_n; i++) {
		free(s->ps_v[i].sd_ports);
		sg_strv_free(s->ps_v[i].sd_methods, s->ps_v[i].sd_nmethods);
		sg_strv_free(s->ps_v[i].sd_paths, s->ps_v[i].sd_npaths);
	}
	free(s->ps_v);
	free(s);
}

static void __attribute__((format(printf, 2, 3)))
sg_note(struct policy_suggest *s, const char *fmt, ...)
{
	va_list ap;

	if (s->ps_notes == NULL)
		return;
	fputs("note: ", s->ps_notes);
	va_start(ap, fmt);
	vfprintf(s->ps_notes, fmt, ap);
	va_end(ap);
	fputc('\n', s->ps_notes);
}

/* Adds str to the set v (a copy); 0, or -1 when out of memory. */
static int
sg_strv_add(char ***v, size_t *n, const char *str)
{
	char **nv, *c;
	size_t i;

	for (i = 0; i < *n; i++)
		if (strcmp((*v)[i], str) == 0)
			return 0;
	if ((c = strdup(str)) == NULL)
		return -1;
	if ((nv = realloc(*v, (*n + 1) * sizeof(*nv))) == NULL) {
		free(c);
		return -1;
	}
	nv[(*n)++] = c;
	*v = nv;
	return 0;
}

static int
sg_has_port(const struct sg_dest *d, uint16_t port)
{
	size_t i;

	for (i = 0; i < d->sd_nports; i++)
		if (d->sd_ports[i] == port)
			return 1;
	return 0;
}

static int
sg_port_add(struct sg_dest *d, uint16_t port)
{
	uint16_t *np;

	if (sg_has_port(d, port))
		return 0;
	if ((np = realloc(d->sd_ports, (d->sd_nports + 1) * sizeof(*np))) == NULL)
		return -1;
	np[d->sd_nports++] = port;
	d->sd_ports = np;
	return 0;
}

static struct sg_dest *
sg_dest_get(struct policy_suggest *s, const char *host, const struct netaddr *a,
    enum policy_proto proto)
{
	struct sg_dest *d, *nv;
	size_t i;

	for (i = 0; i < s->ps_n; i++) {
		d = &s->ps_v[i];
		if (d->sd_proto != proto)
			continue;
		if (host != NULL ? strcmp(d->sd_host, host) == 0 :
		    d->sd_host[0] == '\0' && netaddr_equal(&d->sd_addr, a))
			return d;
	}
	if ((nv = realloc(s->ps_v, (s->ps_n + 1) * sizeof(*nv))) == NULL)
		return NULL;
	s->ps_v = nv;
	d = &nv[s->ps_n++];
	memset(d, 0, sizeof(*d));
	if (host != NULL)
		memcpy(d->sd_host, host, strlen(host) + 1);
	else
		d->sd_addr = *a;
	d->sd_proto = proto;
	return d;
}

static int
sg_method_ok(const char *m)
{
	size_t i;

	for (i = 0; m[i] != '\0'; i++)
		if (!isupper((unsigned char)m[i]) && m[i] != '-' && m[i] != '_')
			return 0;
	return i > 0 && i <= 32;
}

int
policy_suggest_add(struct policy_suggest *s, const struct policy_seen *w)
{
	char norm[POLICY_PATH_MAX], abuf[64];
	struct policy_seen w4;
	struct netaddr v4;
	const char *why;
	struct sg_dest *d;

	if (w->pw_host == NULL) {
		/* an IPv6 address embedding an IPv4 one is that address (as decided) */
		if (netaddr_embedded_v4(w->pw_addr, &v4)) {
			w4 = *w;
			w4.pw_addr = &v4;
			w = &w4;
		}
		if (netaddr_classify(w->pw_addr, &why) == NETADDR_FLOOR) {
			sg_note(s, "%s:%u left out: the floor refuses it (%s)",
			    netaddr_fmt(w->pw_addr, abuf, sizeof(abuf)),
			    (unsigned)w->pw_port, why);
			return 0;
		}
	}
	if ((d = sg_dest_get(s, w->pw_host, w->pw_addr, w->pw_proto)) == NULL ||
	    sg_port_add(d, w->pw_port) == -1)
		goto nomem;
	d->sd_records++;
	/* an address has no name to mint a leaf for: spliced, no request checks */
	if (w->pw_host == NULL)
		return 0;
	/* inspection is TLS's; request checks need inspection or plain HTTP */
	if (w->pw_inspect && w->pw_proto == POLICY_PROTO_TLS)
		d->sd_inspect = 1;
	if (w->pw_method == NULL || w->pw_path == NULL ||
	    w->pw_proto == POLICY_PROTO_TCP ||
	    (w->pw_proto == POLICY_PROTO_TLS && !w->pw_inspect))
		return 0;
	if (sg_method_ok(w->pw_method) && d->sd_nmethods < SG_METHODS_MAX &&
	    sg_strv_add(&d->sd_methods, &d->sd_nmethods, w->pw_method) == -1)
		goto nomem;
	if (strchr(w->pw_path, '*') != NULL ||
	    policy_path_normalize(w->pw_path, strlen(w->pw_path), norm,
	    sizeof(norm)) == -1 || strlen(norm) > POLICY_GLOB_MAX) {
		sg_note(s, "%s: a path left out (it cannot be a literal glob): "
		    "requests like it stay refused", w->pw_host != NULL ?
		    w->pw_host : netaddr_fmt(w->pw_addr, abuf, sizeof(abuf)));
		return 0;
	}
	if (sg_strv_add(&d->sd_paths, &d->sd_npaths, norm) == -1)
		goto nomem;
	return 0;
 nomem:
	s->ps_nomem = 1;
	return -1;
}

/* 1 if a path segment [p, e) looks like an identifier: digits, long hex, a UUID. */
static int
sg_seg_is_id(const char *p, const char *e)
{
	size_t n = (size_t)(e - p), i, hex = 0, dig = 0, dash = 0;

	for (i = 0; i < n; i++) {
		if (isdigit((unsigned char)p[i]))
			dig++;
		else if (isxdigit((unsigned char)p[i]))
			hex++;
		else if (p[i] == '-')
			dash++;
		else
			return 0;
	}
	if (n > 0 && dig == n)
		return 1;
	if (dash == 0 && n >= 12 && dig > 0)
		return 1;		/* a hex id, a commit hash */
	return n == 36 && dash == 4;	/* a UUID */
}

/* path with identifier-like segments as "*", into out (at most POLICY_GLOB_MAX). */
static void
sg_path_glob(const char *path, char *out, size_t outlen)
{
	const char *p = path, *e;
	size_t o = 0, n;

	while (*p == '/' && o + 1 < outlen) {
		out[o++] = '/';
		p++;
		if ((e = strchr(p, '/')) == NULL)
			e = p + strlen(p);
		if (sg_seg_is_id(p, e) && e > p) {
			if (o + 1 < outlen)
				out[o++] = '*';
		} else {
			n = (size_t)(e - p);
			if (o + n >= outlen)
				n = outlen - o - 1;
			memcpy(out + o, p, n);
			o += n;
		}
		p = e;
	}
	out[o] = '\0';
}

static int
sg_strcmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int
sg_portcmp(const void *a, const void *b)
{
	return (int)*(const uint16_t *)a - (int)*(const uint16_t *)b;
}

/*
 * The destination's paths as globs: identifiers as "*", then `siblings` or more
 * under one parent as "parent/" and a star.  Replaces d->sd_paths.
 */
static int
sg_paths_generalise(struct sg_dest *d, unsigned siblings)
{
	char glob[POLICY_GLOB_MAX + 1], parent[POLICY_GLOB_MAX + 1], **v = NULL;
	char **out = NULL;
	size_t n = 0, nout = 0, i, j, kids, plen;
	const char *slash;

	for (i = 0; i < d->sd_npaths; i++) {
		sg_path_glob(d->sd_paths[i], glob, sizeof(glob));
		if (sg_strv_add(&v, &n, glob) == -1)
			goto nomem;
	}
	if (n > 0)
		qsort(v, n, sizeof(*v), sg_strcmp);
	for (i = 0; i < n; i++) {
		slash = strrchr(v[i], '/');
		plen = (size_t)(slash - v[i]);
		memcpy(parent, v[i], plen);
		parent[plen] = '\0';
		/* sorted: the paths of one parent with no deeper segment are adjacent */
		for (kids = 0, j = i; j < n; j++) {
			if (strncmp(v[j], v[i], plen + 1) != 0)
				break;
			if (strchr(v[j] + plen + 1, '/') == NULL)
				kids++;
		}
		if (siblings > 0 && kids >= siblings && plen + 2 <= POLICY_GLOB_MAX) {
			memcpy(glob, parent, plen);
			memcpy(glob + plen, "/*", 3);
			if (sg_strv_add(&out, &nout, glob) == -1)
				goto nomem;
			/* skip the parent's direct children; deeper ones stay */
			for (j = i; j < n && strncmp(v[j], v[i], plen + 1) == 0; j++)
				if (strchr(v[j] + plen + 1, '/') != NULL &&
				    sg_strv_add(&out, &nout, v[j]) == -1)
					goto nomem;
			i = j - 1;
		} else if (sg_strv_add(&out, &nout, v[i]) == -1)
			goto nomem;
	}
	sg_strv_free(d->sd_paths, d->sd_npaths);
	sg_strv_free(v, n);
	if (nout > 0)
		qsort(out, nout, sizeof(*out), sg_strcmp);
	d->sd_paths = out;
	d->sd_npaths = nout;
	return 0;
 nomem:
	sg_strv_free(v, n);
	sg_strv_free(out, nout);
	return -1;
}

/*
 * Folds the names below one registrable domain into "*.domain" where `siblings` or
 * more of them share protocol and mode and none has request checks.
 */
static int
sg_wildcards(struct policy_suggest *s, unsigned siblings)
{
	char reg[HOSTNAME_MAX + 1], other[HOSTNAME_MAX + 1];
	char pat[HOSTNAME_MAX + 1];
	struct sg_dest *d, *o, *w;
	size_t i, j, k, n0 = s->ps_n, count;

	if (siblings == 0)
		return 0;
	for (i = 0; i < n0; i++) {
		d = &s->ps_v[i];
		if (d->sd_merged || d->sd_host[0] == '\0' || d->sd_npaths > 0 ||
		    hostname_registrable(d->sd_host, reg) == -1 ||
		    strcmp(reg, d->sd_host) == 0)
			continue;
		for (count = 0, j = i; j < n0; j++) {
			o = &s->ps_v[j];
			if (!o->sd_merged && o->sd_host[0] != '\0' &&
			    o->sd_npaths == 0 && o->sd_proto == d->sd_proto &&
			    o->sd_inspect == d->sd_inspect &&
			    hostname_registrable(o->sd_host, other) == 0 &&
			    strcmp(other, reg) == 0 && strcmp(o->sd_host, reg) != 0)
				count++;
		}
		if (count < siblings)
			continue;
		/* names below it seen otherwise: no wildcard for the domain at all */
		for (j = 0; j < n0; j++) {
			o = &s->ps_v[j];
			if (!o->sd_merged && o->sd_host[0] != '\0' &&
			    o->sd_npaths == 0 && (o->sd_proto != d->sd_proto ||
			    o->sd_inspect != d->sd_inspect) &&
			    hostname_registrable(o->sd_host, other) == 0 &&
			    strcmp(other, reg) == 0 && strcmp(o->sd_host, reg) != 0)
				break;
		}
		if (j < n0) {
			sg_note(s, "%s: names below it were seen with different "
			    "protocols or modes: no wildcard", reg);
			continue;
		}
		if (strlen(reg) + 2 > HOSTNAME_MAX)
			continue;
		if (snprintf(pat, sizeof(pat), "*.%s", reg) >= (int)sizeof(pat) ||
		    hostname_pattern_normalize(pat, strlen(pat), pat) != HOSTNAME_OK)
			continue;	/* over a public suffix: never */
		if ((w = sg_dest_get(s, pat, NULL, d->sd_proto)) == NULL)
			return -1;
		d = &s->ps_v[i];	/* sg_dest_get may have moved the array */
		w->sd_inspect = d->sd_inspect;
		for (j = i; j < n0; j++) {
			o = &s->ps_v[j];
			if (o->sd_merged || o->sd_host[0] == '\0' || o->sd_npaths > 0 ||
			    o->sd_proto != d->sd_proto ||
			    o->sd_inspect != d->sd_inspect ||
			    hostname_registrable(o->sd_host, other) == -1 ||
			    strcmp(other, reg) != 0 || strcmp(o->sd_host, reg) == 0)
				continue;
			o->sd_merged = 1;
			w->sd_records += o->sd_records;
			for (k = 0; k < o->sd_nports; k++)
				if (sg_port_add(w, o->sd_ports[k]) == -1)
					return -1;
			for (k = 0; k < o->sd_nmethods; k++)
				if (sg_strv_add(&w->sd_methods, &w->sd_nmethods,
				    o->sd_methods[k]) == -1)
					return -1;
		}
		sg_note(s, "%s: %zu names below %s seen: one wildcard rule", pat,
		    count, reg);
	}
	return 0;
}

static int
sg_same_dest(const struct sg_dest *a, const struct sg_dest *b)
{
	if (a->sd_host[0] != '\0' || b->sd_host[0] != '\0')
		return strcmp(a->sd_host, b->sd_host) == 0;
	return netaddr_equal(&a->sd_addr, &b->sd_addr);
}

static void
sg_port_remove(struct sg_dest *d, uint16_t port)
{
	size_t i;

	for (i = 0; i < d->sd_nports; i++)
		if (d->sd_ports[i] == port) {
			d->sd_ports[i] = d->sd_ports[--d->sd_nports];
			return;
		}
}

/*
 * A rule matches on host and port alone (the protocol is checked after), so one
 * destination and port seen with two protocols can have one rule only: the
 * protocol seen more often keeps the port (TLS on a tie), and the notes say so.
 */
static void
sg_protocol_conflicts(struct policy_suggest *s)
{
	char abuf[64];
	struct sg_dest *a, *b, *lose;
	size_t i, j, k;

	for (i = 0; i < s->ps_n; i++)
		for (j = i + 1; j < s->ps_n; j++) {
			a = &s->ps_v[i];
			b = &s->ps_v[j];
			if (a->sd_proto == b->sd_proto || !sg_same_dest(a, b))
				continue;
			for (k = 0; k < a->sd_nports; k++) {
				if (!sg_has_port(b, a->sd_ports[k]))
					continue;
				if (a->sd_records != b->sd_records)
					lose = a->sd_records < b->sd_records ? a : b;
				else
					lose = a->sd_proto == POLICY_PROTO_TLS ? b : a;
				sg_note(s, "%s:%u seen as %s and as %s: only %s "
				    "suggested", a->sd_host[0] != '\0' ? a->sd_host :
				    netaddr_fmt(&a->sd_addr, abuf, sizeof(abuf)),
				    (unsigned)a->sd_ports[k],
				    policy_proto_str(a->sd_proto),
				    policy_proto_str(b->sd_proto),
				    policy_proto_str(lose == a ? b->sd_proto :
				    a->sd_proto));
				sg_port_remove(lose, a->sd_ports[k]);
				if (lose == a)
					k--;	/* a's port k was replaced */
			}
			if (a->sd_nports == 0)
				a->sd_merged = 1;
			if (b->sd_nports == 0)
				b->sd_merged = 1;
		}
}

/* "api.github.com-12-records", at most 64 bytes of [A-Za-z0-9._-]. */
static void
sg_rule_id(const struct sg_dest *d, unsigned dup, char *id, size_t idlen)
{
	char label[HOSTNAME_MAX + 8], tail[64], nth[16] = "";
	size_t i, max;

	if (d->sd_host[0] == '*')
		snprintf(label, sizeof(label), "any%s", d->sd_host + 1);
	else if (d->sd_host[0] != '\0')
		snprintf(label, sizeof(label), "%s", d->sd_host);
	else
		netaddr_fmt(&d->sd_addr, label, sizeof(label));
	for (i = 0; label[i] != '\0'; i++)
		if (!isalnum((unsigned char)label[i]) && label[i] != '.' &&
		    label[i] != '-')
			label[i] = '_';
	if (dup > 0)	/* two labels the same once cut: the later ones numbered */
		snprintf(nth, sizeof(nth), "-%u", dup + 1);
	snprintf(tail, sizeof(tail), "%s%s-%lu-record%s%s",
	    d->sd_proto == POLICY_PROTO_TLS ? "" : "-",
	    d->sd_proto == POLICY_PROTO_TLS ? "" : policy_proto_str(d->sd_proto),
	    d->sd_records, d->sd_records == 1 ? "" : "s", nth);
	max = idlen - 1 < 64 ? idlen - 1 : 64;
	if (strlen(label) + strlen(tail) > max)
		label[max - strlen(tail)] = '\0';
	if (snprintf(id, idlen, "%s%s", label, tail) < 0)
		id[0] = '\0';	/* cut to fit above: never */
}

static int
sg_destcmp(const void *a, const void *b)
{
	const struct sg_dest *x = a, *y = b;

	/* exact names before wildcards: a wildcard first could shadow one */
	if ((x->sd_host[0] == '*') != (y->sd_host[0] == '*'))
		return x->sd_host[0] == '*' ? 1 : -1;
	if (x->sd_records != y->sd_records)
		return x->sd_records > y->sd_records ? -1 : 1;
	if (strcmp(x->sd_host, y->sd_host) != 0)
		return strcmp(x->sd_host, y->sd_host);
	return (int)x->sd_proto - (int)y->sd_proto;
}

static json_t *
sg_rule_json(const struct sg_dest *d, char ***ids, size_t *nids)
{
	char id[65], cidr[80], abuf[64];
	json_t *r, *a, *http;
	unsigned dup = 0;
	size_t i;

	for (;;) {
		sg_rule_id(d, dup, id, sizeof(id));
		for (i = 0; i < *nids; i++)
			if (strcmp((*ids)[i], id) == 0)
				break;
		if (i == *nids)
			break;
		dup++;
	}
	if (sg_strv_add(ids, nids, id) == -1)
		return NULL;
	if ((r = json_object()) == NULL)
		return NULL;
	json_object_set_new(r, "id", json_string(id));
	if (d->sd_host[0] != '\0')
		json_object_set_new(r, "host", json_string(d->sd_host));
	else {
		snprintf(cidr, sizeof(cidr), "%s/%d",
		    netaddr_fmt(&d->sd_addr, abuf, sizeof(abuf)),
		    d->sd_addr.na_family == AF_INET ? 32 : 128);
		json_object_set_new(r, "cidr", json_string(cidr));
	}
	a = json_array();
	for (i = 0; i < d->sd_nports; i++)
		json_array_append_new(a, json_integer(d->sd_ports[i]));
	json_object_set_new(r, "ports", a);
	if (d->sd_proto != POLICY_PROTO_TLS)
		json_object_set_new(r, "protocol",
		    json_string(policy_proto_str(d->sd_proto)));
	else
		json_object_set_new(r, "tls", json_string(d->sd_inspect ?
		    "inspect" : "splice"));
	if ((d->sd_proto == POLICY_PROTO_HTTP || d->sd_inspect) &&
	    (d->sd_nmethods > 0 || d->sd_npaths > 0)) {
		http = json_object();
		if (d->sd_nmethods > 0) {
			a = json_array();
			for (i = 0; i < d->sd_nmethods; i++)
				json_array_append_new(a,
				    json_string(d->sd_methods[i]));
			json_object_set_new(http, "methods", a);
		}
		if (d->sd_npaths > 0) {
			a = json_array();
			for (i = 0; i < d->sd_npaths; i++)
				json_array_append_new(a, json_string(d->sd_paths[i]));
			json_object_set_new(http, "paths", a);
		}
		json_object_set_new(r, "http", http);
	}
	return r;
}

char *
policy_suggest_build(struct policy_suggest *s, const char *name, unsigned siblings,
    char *err, size_t errlen)
{
	struct policy_errors errs = { NULL, 0 };
	struct policy *p;
	struct sg_dest *d;
	json_t *doc, *rules, *r;
	char *text, **ids = NULL;
	size_t i, nids = 0;

	if (s->ps_nomem) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	for (i = 0; i < s->ps_n; i++) {
		d = &s->ps_v[i];
		if (d->sd_npaths > 0 &&
		    sg_paths_generalise(d, siblings) == -1) {
			snprintf(err, errlen, "out of memory");
			return NULL;
		}
		if (d->sd_npaths > SG_PATHS_MAX) {
			sg_note(s, "%s: %zu paths: no path check suggested",
			    d->sd_host, d->sd_npaths);
			sg_strv_free(d->sd_paths, d->sd_npaths);
			d->sd_paths = NULL;
			d->sd_npaths = 0;
		}
		if (d->sd_nmethods > 0)
			qsort(d->sd_methods, d->sd_nmethods, sizeof(char *),
			    sg_strcmp);
	}
	sg_protocol_conflicts(s);
	if (sg_wildcards(s, siblings) == -1) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	sg_protocol_conflicts(s);	/* two wildcards of one domain, too */
	if (s->ps_n > 0)
		qsort(s->ps_v, s->ps_n, sizeof(*s->ps_v), sg_destcmp);
	doc = json_object();
	rules = json_array();
	for (i = 0; i < s->ps_n && json_array_size(rules) < POLICY_RULES_MAX; i++) {
		d = &s->ps_v[i];
		if (d->sd_merged)
			continue;
		qsort(d->sd_ports, d->sd_nports, sizeof(*d->sd_ports), sg_portcmp);
		if ((r = sg_rule_json(d, &ids, &nids)) == NULL ||
		    json_array_append_new(rules, r) == -1) {
			sg_strv_free(ids, nids);
			json_decref(doc);
			json_decref(rules);
			snprintf(err, errlen, "out of memory");
			return NULL;
		}
	}
	sg_strv_free(ids, nids);
	json_object_set_new(doc, "policy", json_string(name));
	json_object_set_new(doc, "mode", json_string("enforce"));
	json_object_set_new(doc, "rules", rules);
	text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(doc);
	if (text == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	/* The suggestion must be a policy the loader takes, as it is printed. */
	if ((p = policy_load_buf(text, strlen(text), "suggestion", &errs)) == NULL) {
		if (errs.n > 0)
			policy_error_fmt(&errs.v[0], err, errlen);
		else
			snprintf(err, errlen, "the suggestion does not load");
		policy_errors_free(&errs);
		free(text);
		return NULL;
	}
	policy_free(p);
	return text;
}
