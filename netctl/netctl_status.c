/*
 * netctl/netctl_status.c: the kernel's two airlock tables compared with what
 * netctl_model.c builds for the configuration and the sandbox records: "drift" is any
 * difference (a flushed or edited table, a missing or foreign element, chain or set).
 */
#include <netinet/in.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libnftnl/chain.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>

#include "netctl_int.h"

struct nc_cmp {
	struct netctl_status *st;
	int		 base_only;	/* compare the base only: ignore sandboxes */
	int		 fail;		/* out of memory */
};

static void
nc_drift(struct nc_cmp *c, const char *fmt, ...)
{
	struct netctl_status *st = c->st;
	char **nv, *line;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&line, fmt, ap) == -1) {
		va_end(ap);
		c->fail = 1;
		return;
	}
	va_end(ap);
	if ((nv = reallocarray(st->st_drift, st->st_ndrift + 1,
	    sizeof(*nv))) == NULL) {
		free(line);
		c->fail = 1;
		return;
	}
	nv[st->st_ndrift++] = line;
	st->st_drift = nv;
}

static const char *
nc_fam(uint32_t f)
{
	return f == NFPROTO_NETDEV ? "netdev" : "inet";
}

static const char *
nc_str(const char *s)
{
	return s != NULL ? s : "";
}

static struct nftnl_chain *
nc_kchain(const struct nc_kernel *k, uint32_t fam, const char *name,
    size_t *idx)
{
	size_t i;

	for (i = 0; i < k->nk_nchains; i++)
		if (nftnl_chain_get_u32(k->nk_chains[i], NFTNL_CHAIN_FAMILY) ==
		    fam && strcmp(nc_str(nftnl_chain_get_str(k->nk_chains[i],
		    NFTNL_CHAIN_NAME)), name) == 0) {
			*idx = i;
			return k->nk_chains[i];
		}
	return NULL;
}

static struct nftnl_set *
nc_kset(const struct nc_kernel *k, uint32_t fam, const char *name, size_t *idx)
{
	size_t i;

	for (i = 0; i < k->nk_nsets; i++)
		if (nftnl_set_get_u32(k->nk_sets[i], NFTNL_SET_FAMILY) == fam &&
		    strcmp(nc_str(nftnl_set_get_str(k->nk_sets[i],
		    NFTNL_SET_NAME)), name) == 0) {
			*idx = i;
			return k->nk_sets[i];
		}
	return NULL;
}

static int
nc_chain_attrs_equal(const struct nftnl_chain *a, const struct nftnl_chain *b)
{
	int base_a = nftnl_chain_is_set(a, NFTNL_CHAIN_HOOKNUM);
	int base_b = nftnl_chain_is_set(b, NFTNL_CHAIN_HOOKNUM);

	if (base_a != base_b)
		return 0;
	if (!base_a)
		return 1;
	if (nftnl_chain_get_u32(a, NFTNL_CHAIN_HOOKNUM) !=
	    nftnl_chain_get_u32(b, NFTNL_CHAIN_HOOKNUM) ||
	    nftnl_chain_get_s32(a, NFTNL_CHAIN_PRIO) !=
	    nftnl_chain_get_s32(b, NFTNL_CHAIN_PRIO) ||
	    nftnl_chain_get_u32(a, NFTNL_CHAIN_POLICY) !=
	    nftnl_chain_get_u32(b, NFTNL_CHAIN_POLICY) ||
	    strcmp(nc_str(nftnl_chain_get_str(a, NFTNL_CHAIN_TYPE)),
	    nc_str(nftnl_chain_get_str(b, NFTNL_CHAIN_TYPE))) != 0)
		return 0;
	if (nftnl_chain_is_set(a, NFTNL_CHAIN_DEV)) {
		/* The kernel may report a single device as a device array. */
		const char *want = nftnl_chain_get_str(a, NFTNL_CHAIN_DEV);
		const char *const *devs;

		if (nftnl_chain_is_set(b, NFTNL_CHAIN_DEV))
			return strcmp(want, nc_str(nftnl_chain_get_str(b,
			    NFTNL_CHAIN_DEV))) == 0;
		if (!nftnl_chain_is_set(b, NFTNL_CHAIN_DEVICES))
			return 0;
		devs = nftnl_chain_get_array(b, NFTNL_CHAIN_DEVICES);
		return devs != NULL && devs[0] != NULL &&
		    strcmp(devs[0], want) == 0 && devs[1] == NULL;
	}
	return 1;
}

/* Rules of one chain, in order. Returns the count; *v allocated (free()). */
static size_t
nc_rules_of(const struct nftnl_rule *const *rules, size_t n, uint32_t fam,
    const char *chain, const struct nftnl_rule ***v)
{
	size_t i, m = 0;

	*v = calloc(n + 1, sizeof(**v));
	if (*v == NULL)
		return 0;
	for (i = 0; i < n; i++)
		if (nftnl_rule_get_u32(rules[i], NFTNL_RULE_FAMILY) == fam &&
		    strcmp(nc_str(nftnl_rule_get_str(rules[i],
		    NFTNL_RULE_CHAIN)), chain) == 0)
			(*v)[m++] = rules[i];
	return m;
}

/* Every rule object of a model, as an array (borrowed pointers). */
static size_t
nc_model_rules(const struct nc_model *m, const struct nftnl_rule ***v)
{
	size_t i, n = 0;

	if ((*v = calloc(m->nm_n + 1, sizeof(**v))) == NULL)
		return 0;
	for (i = 0; i < m->nm_n; i++)
		if (m->nm_v[i].no_type == NC_OBJ_RULE)
			(*v)[n++] = m->nm_v[i].no_o;
	return n;
}

/* Compares one expected chain (and its rules) with the kernel's. Returns 1 if equal. */
static int
nc_cmp_chain(struct nc_cmp *c, const struct nc_kernel *k,
    const struct nftnl_chain *want, const struct nc_model *m, int *seen)
{
	const struct nftnl_rule **er = NULL, **kr = NULL, **all = NULL;
	char da[2048], db[2048];
	struct nftnl_chain *kc;
	const char *name = nftnl_chain_get_str(want, NFTNL_CHAIN_NAME);
	uint32_t fam = nftnl_chain_get_u32(want, NFTNL_CHAIN_FAMILY);
	size_t idx, ne, nk, nall, i;
	int equal = 1;

	if ((kc = nc_kchain(k, fam, name, &idx)) == NULL) {
		nc_drift(c, "chain %s airlock %s is missing", nc_fam(fam), name);
		return 0;
	}
	seen[idx] = 1;
	if (!nc_chain_attrs_equal(want, kc)) {
		nc_drift(c, "chain %s airlock %s: type, hook, priority, policy or "
		    "device changed", nc_fam(fam), name);
		equal = 0;
	}
	nall = nc_model_rules(m, &all);
	ne = nc_rules_of(all, nall, fam, name, &er);
	nk = nc_rules_of((const struct nftnl_rule *const *)k->nk_rules,
	    k->nk_nrules, fam, name, &kr);
	if (all == NULL || er == NULL || kr == NULL) {
		c->fail = 1;
		equal = 0;
		goto out;
	}
	if (ne != nk) {
		nc_drift(c, "chain %s airlock %s: %zu rules, airlock installs %zu",
		    nc_fam(fam), name, nk, ne);
		equal = 0;
		goto out;
	}
	for (i = 0; i < ne; i++) {
		nc_rule_digest(er[i], da, sizeof(da));
		nc_rule_digest(kr[i], db, sizeof(db));
		if (strcmp(da, db) != 0) {
			nc_drift(c, "chain %s airlock %s: rule %zu differs from "
			    "what airlock installs", nc_fam(fam), name, i + 1);
			equal = 0;
		}
	}
 out:
	free(all);
	free(er);
	free(kr);
	return equal;
}

static int
nc_elem_key_cb(struct nftnl_set_elem *e, void *arg)
{
	(void)e;
	(*(size_t *)arg)++;
	return 0;
}

struct nc_kelem {
	const void	*key;
	uint32_t	 len;
	uint32_t	 flags;
	int		 matched;
};

struct nc_kelems {
	struct nc_kelem	*v;
	size_t		 n;
};

static int
nc_kelem_cb(struct nftnl_set_elem *e, void *arg)
{
	struct nc_kelems *ke = arg;
	struct nc_kelem *x = &ke->v[ke->n];

	x->key = nftnl_set_elem_get(e, NFTNL_SET_ELEM_KEY, &x->len);
	x->flags = nftnl_set_elem_is_set(e, NFTNL_SET_ELEM_FLAGS) ?
	    nftnl_set_elem_get_u32(e, NFTNL_SET_ELEM_FLAGS) : 0;
	x->matched = 0;
	ke->n++;
	return 0;
}

/*
 * Elements: every expected element of set (fam, name) must be in the kernel set, and
 * every element there must be expected.  owner[i] is the sandbox of models[i] (-1: base).
 */
static void
nc_cmp_elems(struct nc_cmp *c, struct nftnl_set *ks, uint32_t fam,
    const char *name, const struct nc_model *models, size_t nmodels)
{
	struct nc_kelems ke = { NULL, 0 };
	size_t cnt = 0, i, j, mi;
	char text[128];

	nftnl_set_elem_foreach(ks, nc_elem_key_cb, &cnt);
	if ((ke.v = calloc(cnt + 1, sizeof(*ke.v))) == NULL) {
		c->fail = 1;
		return;
	}
	nftnl_set_elem_foreach(ks, nc_kelem_cb, &ke);
	for (mi = 0; mi < nmodels; mi++) {
		const struct nc_model *m = &models[mi];
		struct netctl_sb_status *ss = mi == 0 ? NULL :
		    &c->st->st_sb[mi - 1];

		for (i = 0; i < m->nm_n; i++) {
			struct nftnl_set *es = m->nm_v[i].no_o;
			struct nftnl_set_elems_iter *it;
			struct nftnl_set_elem *e;

			if (m->nm_v[i].no_type != NC_OBJ_ELEM ||
			    nftnl_set_get_u32(es, NFTNL_SET_FAMILY) != fam ||
			    strcmp(nftnl_set_get_str(es, NFTNL_SET_NAME), name))
				continue;
			if ((it = nftnl_set_elems_iter_create(es)) == NULL) {
				c->fail = 1;
				break;
			}
			while ((e = nftnl_set_elems_iter_next(it)) != NULL) {
				uint32_t len, fl;
				const void *key = nftnl_set_elem_get(e,
				    NFTNL_SET_ELEM_KEY, &len);
				int found = 0;

				fl = nftnl_set_elem_is_set(e, NFTNL_SET_ELEM_FLAGS) ?
				    nftnl_set_elem_get_u32(e, NFTNL_SET_ELEM_FLAGS) :
				    0;
				if (ss != NULL)
					ss->ss_elems_expected++;
				for (j = 0; j < ke.n; j++)
					if (!ke.v[j].matched && ke.v[j].len == len &&
					    (ke.v[j].flags & NFT_SET_ELEM_INTERVAL_END)
					    == (fl & NFT_SET_ELEM_INTERVAL_END) &&
					    memcmp(ke.v[j].key, key, len) == 0) {
						ke.v[j].matched = found = 1;
						break;
					}
				if (found && ss != NULL)
					ss->ss_elems_present++;
				if (!found) {
					nc_elem_fmt(name, key, len, text,
					    sizeof(text));
					nc_drift(c, "set %s airlock %s: element %s%s"
					    " is missing%s%s%s", nc_fam(fam), name,
					    text, (fl & NFT_SET_ELEM_INTERVAL_END) ?
					    " (interval end)" : "",
					    ss ? " (sandbox " : "",
					    ss ? ss->ss_name : "", ss ? ")" : "");
				}
			}
			nftnl_set_elems_iter_destroy(it);
		}
	}
	for (j = 0; j < ke.n; j++) {
		if (ke.v[j].matched)
			continue;
		nc_elem_fmt(name, ke.v[j].key, ke.v[j].len, text, sizeof(text));
		nc_drift(c, "set %s airlock %s: element %s belongs to no sandbox",
		    nc_fam(fam), name, text);
	}
	free(ke.v);
}

static int
nc_set_attrs_equal(const struct nftnl_set *a, const struct nftnl_set *b)
{
	return nftnl_set_get_u32(a, NFTNL_SET_KEY_TYPE) ==
	    nftnl_set_get_u32(b, NFTNL_SET_KEY_TYPE) &&
	    nftnl_set_get_u32(a, NFTNL_SET_KEY_LEN) ==
	    nftnl_set_get_u32(b, NFTNL_SET_KEY_LEN) &&
	    nftnl_set_get_u32(a, NFTNL_SET_FLAGS) ==
	    nftnl_set_get_u32(b, NFTNL_SET_FLAGS);
}

/*
 * models[0] is the base, models[1 + i] sandbox i (c->st->st_sb[i]).  With base_only,
 * sandbox chains and the elements of the sandbox sets are not compared.
 */
static void
nc_compare(struct nc_cmp *c, const struct nc_kernel *k,
    const struct nc_model *models, size_t nmodels)
{
	int *cseen = NULL, *sseen = NULL;
	size_t mi, i, idx;

	if ((cseen = calloc(k->nk_nchains + 1, sizeof(int))) == NULL ||
	    (sseen = calloc(k->nk_nsets + 1, sizeof(int))) == NULL) {
		c->fail = 1;
		goto out;
	}
	for (mi = 0; mi < nmodels; mi++) {
		const struct nc_model *m = &models[mi];

		for (i = 0; i < m->nm_n; i++) {
			const struct nc_obj *o = &m->nm_v[i];
			int eq;

			if (o->no_type != NC_OBJ_CHAIN)
				continue;
			eq = nc_cmp_chain(c, k, o->no_o, m, cseen);
			if (mi > 0)
				c->st->st_sb[mi - 1].ss_chain_ok = eq;
		}
	}
	for (i = 0; i < k->nk_nchains; i++) {
		const char *n = nc_str(nftnl_chain_get_str(k->nk_chains[i],
		    NFTNL_CHAIN_NAME));
		uint32_t fam = nftnl_chain_get_u32(k->nk_chains[i],
		    NFTNL_CHAIN_FAMILY);

		if (cseen[i])
			continue;
		if (c->base_only && fam == NFPROTO_NETDEV &&
		    strncmp(n, NC_CHAIN_DEV_PREFIX,
		    strlen(NC_CHAIN_DEV_PREFIX)) == 0)
			continue;
		nc_drift(c, "chain %s airlock %s is not one airlock installs",
		    nc_fam(fam), n);
	}
	/* Sets and their elements (sets exist only in the base). */
	for (i = 0; i < models[0].nm_n; i++) {
		const struct nc_obj *o = &models[0].nm_v[i];
		struct nftnl_set *ks;
		const char *name;
		uint32_t fam;

		if (o->no_type != NC_OBJ_SET)
			continue;
		name = nftnl_set_get_str(o->no_o, NFTNL_SET_NAME);
		fam = nftnl_set_get_u32(o->no_o, NFTNL_SET_FAMILY);
		if ((ks = nc_kset(k, fam, name, &idx)) == NULL) {
			nc_drift(c, "set %s airlock %s is missing", nc_fam(fam),
			    name);
			continue;
		}
		sseen[idx] = 1;
		if (!nc_set_attrs_equal(o->no_o, ks))
			nc_drift(c, "set %s airlock %s: type or flags changed",
			    nc_fam(fam), name);
		if (c->base_only && strcmp(name, NC_SET_FLOOR4) != 0 &&
		    strcmp(name, NC_SET_FLOOR6) != 0)
			continue;
		nc_cmp_elems(c, ks, fam, name, models, nmodels);
	}
	for (i = 0; i < k->nk_nsets; i++)
		if (!sseen[i])
			nc_drift(c, "set %s airlock %s is not one airlock installs",
			    nc_fam(nftnl_set_get_u32(k->nk_sets[i],
			    NFTNL_SET_FAMILY)), nc_str(nftnl_set_get_str(
			    k->nk_sets[i], NFTNL_SET_NAME)));
 out:
	free(cseen);
	free(sseen);
}

/* Rules a packet from sandbox sb meets, at most, on its way to the proxy. */
static int
nc_path_rules(const struct nc_kernel *k, const struct sandbox *sb)
{
	static const char *inet[] = { "prerouting", "sandbox_pre",
	    "prerouting_nat", "sandbox_nat", "input", "sandbox_in" };
	char dev[64];
	size_t i, j;
	int n = 0;

	nc_dev_chain_name(sb->sb_name, dev, sizeof(dev));
	for (i = 0; i < k->nk_nrules; i++) {
		const struct nftnl_rule *r = k->nk_rules[i];
		const char *ch = nc_str(nftnl_rule_get_str(r, NFTNL_RULE_CHAIN));

		if (nftnl_rule_get_u32(r, NFTNL_RULE_FAMILY) == NFPROTO_NETDEV) {
			if (strcmp(ch, dev) == 0 || strcmp(ch, NC_CHAIN_L2) == 0)
				n++;
			continue;
		}
		for (j = 0; j < sizeof(inet) / sizeof(inet[0]); j++)
			if (strcmp(ch, inet[j]) == 0)
				n++;
	}
	return n;
}

int
nc_base_drift(const struct nc_kernel *k, const struct nc_model *base,
    struct netctl_status *st)
{
	struct nc_cmp c = { st, 1, 0 };

	nc_compare(&c, k, base, 1);
	return c.fail ? -1 : 0;
}

int
nc_full_drift(const struct nc_kernel *k, const struct nc_model *models,
    size_t nmodels, struct netctl_status *st)
{
	struct nc_cmp c = { st, 0, 0 };

	if (!k->nk_has_table[0])
		nc_drift(&c, "table inet airlock is missing");
	if (!k->nk_has_table[1])
		nc_drift(&c, "table netdev airlock is missing");
	nc_compare(&c, k, models, nmodels);
	return c.fail ? -1 : 0;
}

void
netctl_status_free(struct netctl_status *st)
{
	size_t i;

	if (st == NULL)
		return;
	for (i = 0; i < st->st_ndrift; i++)
		free(st->st_drift[i]);
	free(st->st_drift);
	free(st->st_sb);
	free(st);
}

struct netctl_status *
netctl_status_get(const struct netctl_params *p, const struct sandbox *sbs,
    size_t nsb, char *err, size_t errlen)
{
	struct netctl_status *st = NULL;
	struct nc_model *models = NULL;
	struct nc_kernel k;
	struct nc_cmp c;
	struct nc_nl nl;
	size_t i;
	int ok = 0, have_k = 0, have_nl = 0;

	memset(&k, 0, sizeof(k));
	if ((st = calloc(1, sizeof(*st))) == NULL ||
	    (st->st_sb = calloc(nsb + 1, sizeof(*st->st_sb))) == NULL ||
	    (models = calloc(nsb + 1, sizeof(*models))) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (i = 0; i <= nsb; i++)
		nc_model_init(&models[i]);
	if (nc_model_base(&models[0], p) == -1) {
		nc_err_errno(err, errlen, errno, "building the base ruleset");
		goto out;
	}
	for (i = 0; i < nsb; i++) {
		struct netctl_sb_status *ss = &st->st_sb[i];

		snprintf(ss->ss_name, sizeof(ss->ss_name), "%s", sbs[i].sb_name);
		snprintf(ss->ss_iface, sizeof(ss->ss_iface), "%s",
		    sbs[i].sb_iface);
		ss->ss_iface_exists = nc_link_exists(sbs[i].sb_iface);
		if (nc_model_sandbox(&models[i + 1], &sbs[i]) == -1) {
			nc_err_errno(err, errlen, errno, "building the rules of "
			    "sandbox %s", sbs[i].sb_name);
			goto out;
		}
	}
	st->st_nsb = nsb;
	if (nc_nl_open(&nl, err, errlen) == -1)
		goto out;
	have_nl = 1;
	if (nc_kernel_read(&nl, &k, err, errlen) == -1)
		goto out;
	have_k = 1;
	st->st_inet_table = k.nk_has_table[0];
	st->st_netdev_table = k.nk_has_table[1];
	st->st_genid = k.nk_genid;
	st->st_rules = (int)k.nk_nrules;
	st->st_chains = (int)k.nk_nchains;
	memset(&c, 0, sizeof(c));
	c.st = st;
	if (!k.nk_has_table[0] && !k.nk_has_table[1] && nsb == 0) {
		ok = 1;		/* nothing installed, nothing recorded */
		goto out;
	}
	if (!k.nk_has_table[0])
		nc_drift(&c, "table inet airlock is missing");
	if (!k.nk_has_table[1])
		nc_drift(&c, "table netdev airlock is missing");
	nc_compare(&c, &k, models, nsb + 1);
	for (i = 0; i < nsb; i++)
		st->st_sb[i].ss_path_rules = nc_path_rules(&k, &sbs[i]);
	if (c.fail) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	ok = 1;
 out:
	if (have_k)
		nc_kernel_free(&k);
	if (have_nl)
		nc_nl_close(&nl);
	if (models != NULL) {
		for (i = 0; i <= nsb; i++)
			nc_model_free(&models[i]);
		free(models);
	}
	if (!ok) {
		netctl_status_free(st);
		return NULL;
	}
	return st;
}
