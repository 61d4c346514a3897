/*
 * netctl/netctl.c: installing and removing the base ruleset and one sandbox, each as
 * one atomic batch.  The folder: whole sandbox operations (netctl_sandbox.c), the
 * table guard (netctl_guard.c), per-interface settings (netctl_harden.c), this
 * file, the kernel's tables against the model (netctl_status.c), taps and their
 * links (netctl_link.c), the ruleset as libnftnl objects (netctl_model.c), the
 * nfnetlink socket (netctl_nl.c), and at the bottom the error texts every one of
 * them uses (netctl_err.c).
 */
#include <sys/types.h>

#include <arpa/inet.h>

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libnftnl/chain.h>
#include <libnftnl/set.h>

#include "netctl_int.h"

int
netctl_params_from_config(const struct airlock_config *cfg,
    struct netctl_params *p, char *err, size_t errlen)
{
	struct passwd *pw;
	const char *u = cfg->user;
	char *end;
	unsigned long v;

	memset(p, 0, sizeof(*p));
	p->np_proxy_port = cfg->proxy_port;
	p->np_dns_port = cfg->dns_port;
	p->np_metrics_port = cfg->metrics_on ? cfg->metrics_port : 0;
	if (p->np_proxy_port == 0 || p->np_dns_port == 0 ||
	    p->np_proxy_port == p->np_dns_port) {
		snprintf(err, errlen, "proxy_port and dns_port must be two "
		    "different non-zero ports");
		return -1;
	}
	if (u[0] >= '0' && u[0] <= '9') {
		errno = 0;
		v = strtoul(u, &end, 10);
		if (errno != 0 || *end != '\0' || v >= (unsigned long)(uid_t)-1) {
			snprintf(err, errlen, "user \"%s\": not a valid uid", u);
			return -1;
		}
		p->np_airlockd_uid = (uid_t)v;
		return 0;
	}
	/*
	 * Fail closed: the output rule that keeps airlockd off the floor matches this
	 * user; installing sandboxes without it would silently weaken enforcement.
	 */
	if ((pw = getpwnam(u)) == NULL) {
		snprintf(err, errlen, "user \"%s\" (airlockd's user, matched by the "
		    "output floor rule) does not exist: create it or set \"user\" "
		    "in the configuration", u);
		return -1;
	}
	p->np_airlockd_uid = pw->pw_uid;
	return 0;
}

int
netctl_pool_alloc(const struct netaddr_cidr *pool, const struct netaddr *used,
    size_t n, struct netaddr *host, struct netaddr *guest)
{
	uint32_t base, count, blk, a, x;
	size_t i;
	int busy;

	if (pool->nc_addr.na_family != AF_INET || pool->nc_prefix > 30) {
		errno = EINVAL;
		return -1;
	}
	base = ntohl(pool->nc_addr.na_u.v4.s_addr);
	count = pool->nc_prefix == 0 ? 0x40000000u :
	    (uint32_t)1 << (30 - pool->nc_prefix);	/* /30 blocks */
	for (blk = 0; blk < count; blk++) {
		a = base + blk * 4;
		busy = 0;
		for (i = 0; i < n && !busy; i++) {
			if (used[i].na_family != AF_INET)
				continue;
			x = ntohl(used[i].na_u.v4.s_addr);
			if (x >= a && x <= a + 3)
				busy = 1;
		}
		if (busy)
			continue;
		memset(host, 0, sizeof(*host));
		memset(guest, 0, sizeof(*guest));
		host->na_family = guest->na_family = AF_INET;
		host->na_u.v4.s_addr = htonl(a + 1);
		guest->na_u.v4.s_addr = htonl(a + 2);
		return 0;
	}
	errno = ENOSPC;
	return -1;
}

static int
nc_items_from(const struct nc_model *m, enum nc_op op,
    struct nc_batch_item **v, size_t *n)
{
	struct nc_batch_item *nv;
	size_t i;

	if ((nv = reallocarray(*v, *n + m->nm_n + 1, sizeof(*nv))) == NULL)
		return -1;
	*v = nv;
	for (i = 0; i < m->nm_n; i++) {
		nv[*n].bi_op = op;
		nv[*n].bi_obj = &m->nm_v[i];
		(*n)++;
	}
	return 0;
}

/*
 * Checks the base tables: both absent (*need = 1), or both present and as airlock
 * installs them (*need = 0).  Anything else is drift, an error.
 */
static int
nc_base_check(const struct nc_kernel *k, const struct nc_model *base, int *need,
    char *err, size_t errlen)
{
	struct netctl_status st;
	size_t i;
	int rv = -1;

	*need = 0;
	if (!k->nk_has_table[0] && !k->nk_has_table[1]) {
		*need = 1;
		return 0;
	}
	memset(&st, 0, sizeof(st));
	if (!k->nk_has_table[0] || !k->nk_has_table[1]) {
		snprintf(err, errlen, "table %s airlock exists without table %s "
		    "airlock (drift: see 'airlock net status')",
		    k->nk_has_table[0] ? "inet" : "netdev",
		    k->nk_has_table[0] ? "netdev" : "inet");
		return -1;
	}
	if (nc_base_drift(k, base, &st) == -1) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if (st.st_ndrift > 0) {
		snprintf(err, errlen, "the airlock tables differ from what airlock "
		    "installs (%s%s); see 'airlock net status'", st.st_drift[0],
		    st.st_ndrift > 1 ? ", ..." : "");
		goto out;
	}
	rv = 0;
 out:
	for (i = 0; i < st.st_ndrift; i++)
		free(st.st_drift[i]);
	free(st.st_drift);
	return rv;
}

/*
 * One read-modify-write: read the tables at generation G, let build() make the
 * batch from what it read (into *items, *n; -1 with err set stops), send it bound
 * to G.  If anything else changed the ruleset in between the kernel refuses the
 * batch (ERESTART) and we start again from the read.  *items stays the caller's.
 */
static int
nc_rmw(struct nc_nl *nl, int (*build)(const struct nc_kernel *, void *,
    struct nc_batch_item **, size_t *, char *, size_t), void *arg,
    struct nc_batch_item **items, char *err, size_t errlen)
{
	struct nc_kernel k;
	size_t n;
	int tries, rv = -1, have_k = 0;

	memset(&k, 0, sizeof(k));
	for (tries = 0; tries < 3; tries++) {
		if (have_k)
			nc_kernel_free(&k);
		if (nc_kernel_read(nl, &k, err, errlen) == -1)
			goto out;
		have_k = 1;
		n = 0;
		if (build(&k, arg, items, &n, err, errlen) == -1)
			goto out;
		if (n == 0) {
			rv = 0;
			goto out;
		}
		if (nc_nl_batch(nl, *items, n, 1, k.nk_genid, err, errlen) == 0) {
			rv = 0;
			goto out;
		}
		if (errno != ERESTART && errno != EINTR)
			goto out;
	}
 out:
	if (have_k)
		nc_kernel_free(&k);
	return rv;
}

struct nc_install_arg {
	const struct nc_model	*base;
	const struct nc_model	*sbm;
};

/* nc_rmw() build for nc_install: the base when missing, then the sandbox. */
static int
nc_install_build(const struct nc_kernel *k, void *arg,
    struct nc_batch_item **items, size_t *n, char *err, size_t errlen)
{
	const struct nc_install_arg *a = arg;
	int need;

	if (nc_base_check(k, a->base, &need, err, errlen) == -1)
		return -1;
	free(*items);
	*items = NULL;
	/* The base and the first sandbox go in the same batch. */
	if ((need && nc_items_from(a->base, NC_OP_ADD, items, n) == -1) ||
	    nc_items_from(a->sbm, NC_OP_ADD, items, n) == -1) {
		nc_err_errno(err, errlen, errno, "building the batch");
		return -1;
	}
	return 0;
}

static int
nc_install(const struct netctl_params *p, const struct sandbox *sb, char *err,
    size_t errlen)
{
	struct nc_batch_item *items = NULL;
	struct nc_model base, sbm;
	struct nc_install_arg a = { &base, &sbm };
	struct nc_nl nl;
	int rv = -1;

	nc_model_init(&base);
	nc_model_init(&sbm);
	if (nc_nl_open(&nl, err, errlen) == -1)
		return -1;
	if (nc_model_base(&base, p) == -1 ||
	    (sb != NULL && nc_model_sandbox(&sbm, sb) == -1)) {
		nc_err_errno(err, errlen, errno, "building the ruleset");
		goto out;
	}
	rv = nc_rmw(&nl, nc_install_build, &a, &items, err, errlen);
 out:
	free(items);
	nc_model_free(&base);
	nc_model_free(&sbm);
	nc_nl_close(&nl);
	return rv;
}

int
netctl_base_ensure(const struct netctl_params *p, char *err, size_t errlen)
{
	return nc_install(p, NULL, err, errlen);
}

int
netctl_sandbox_install(const struct netctl_params *p, const struct sandbox *sb,
    char *err, size_t errlen)
{
	return nc_install(p, sb, err, errlen);
}

struct nc_has {
	const void	*key;
	uint32_t	 len;
	int		 found;
};

static int
nc_has_cb(struct nftnl_set_elem *e, void *arg)
{
	struct nc_has *h = arg;
	uint32_t len;
	const void *key = nftnl_set_elem_get(e, NFTNL_SET_ELEM_KEY, &len);

	if (len == h->len && memcmp(key, h->key, len) == 0)
		h->found = 1;
	return 0;
}

/* Is the one element of model object o present in the kernel? */
static int
nc_elem_present(const struct nc_kernel *k, const struct nc_obj *o)
{
	struct nftnl_set *es = o->no_o;
	struct nftnl_set_elems_iter *it;
	struct nftnl_set_elem *e;
	struct nc_has h;
	uint32_t fam = nftnl_set_get_u32(es, NFTNL_SET_FAMILY);
	const char *name = nftnl_set_get_str(es, NFTNL_SET_NAME);
	size_t i;

	if ((it = nftnl_set_elems_iter_create(es)) == NULL)
		return 0;
	e = nftnl_set_elems_iter_next(it);
	memset(&h, 0, sizeof(h));
	if (e != NULL)
		h.key = nftnl_set_elem_get(e, NFTNL_SET_ELEM_KEY, &h.len);
	for (i = 0; e != NULL && i < k->nk_nsets; i++) {
		struct nftnl_set *ks = k->nk_sets[i];

		if (nftnl_set_get_u32(ks, NFTNL_SET_FAMILY) == fam &&
		    strcmp(nftnl_set_get_str(ks, NFTNL_SET_NAME), name) == 0)
			nftnl_set_elem_foreach(ks, nc_has_cb, &h);
	}
	nftnl_set_elems_iter_destroy(it);
	return h.found;
}

static int
nc_chain_present(const struct nc_kernel *k, const struct nc_obj *o)
{
	uint32_t fam = nftnl_chain_get_u32(o->no_o, NFTNL_CHAIN_FAMILY);
	const char *name = nftnl_chain_get_str(o->no_o, NFTNL_CHAIN_NAME);
	size_t i;

	for (i = 0; i < k->nk_nchains; i++)
		if (nftnl_chain_get_u32(k->nk_chains[i], NFTNL_CHAIN_FAMILY) ==
		    fam && strcmp(nftnl_chain_get_str(k->nk_chains[i],
		    NFTNL_CHAIN_NAME), name) == 0)
			return 1;
	return 0;
}

/*
 * nc_rmw() build for netctl_sandbox_uninstall: only what is there (a drifted table
 * may lack some of it), so that removal converges; a chain is flushed, then deleted.
 * *items has room for two items per object.
 */
static int
nc_uninstall_build(const struct nc_kernel *k, void *arg,
    struct nc_batch_item **items, size_t *n, char *err, size_t errlen)
{
	const struct nc_model *sbm = arg;
	struct nc_batch_item *v = *items;
	size_t i;

	for (i = 0; i < sbm->nm_n; i++) {
		const struct nc_obj *o = &sbm->nm_v[i];

		if (o->no_type == NC_OBJ_ELEM && nc_elem_present(k, o)) {
			v[*n].bi_op = NC_OP_DEL;
			v[(*n)++].bi_obj = o;
		} else if (o->no_type == NC_OBJ_CHAIN && nc_chain_present(k, o)) {
			v[*n].bi_op = NC_OP_FLUSH;
			v[(*n)++].bi_obj = o;
			v[*n].bi_op = NC_OP_DEL;
			v[(*n)++].bi_obj = o;
		}
	}
	return 0;
}

int
netctl_sandbox_uninstall(const struct sandbox *sb, char *err, size_t errlen)
{
	struct nc_batch_item *items = NULL;
	struct nc_model sbm;
	struct nc_nl nl;
	int rv = -1;

	nc_model_init(&sbm);
	if (nc_nl_open(&nl, err, errlen) == -1)
		return -1;
	if (nc_model_sandbox(&sbm, sb) == -1 ||
	    (items = calloc(sbm.nm_n * 2 + 1, sizeof(*items))) == NULL) {
		nc_err_errno(err, errlen, errno, "building the ruleset");
		goto out;
	}
	rv = nc_rmw(&nl, nc_uninstall_build, &sbm, &items, err, errlen);
 out:
	free(items);
	nc_model_free(&sbm);
	nc_nl_close(&nl);
	return rv;
}
