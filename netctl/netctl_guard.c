/*
 * netctl/netctl_guard.c: noticing that airlock's tables were deleted or changed
 * (nftables events on a NETLINK_NETFILTER socket, multicast group NFNLGRP_NFTABLES)
 * and putting them back as the sandbox records say, in one atomic batch.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <netinet/in.h>

#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <libnftnl/table.h>

#include "netctl_int.h"

struct netctl_guard {
	struct mnl_socket *ng_sock;
};

struct netctl_guard *
netctl_guard_new(char *err, size_t errlen)
{
	struct netctl_guard *g;
	int grp = NFNLGRP_NFTABLES, big = 1 << 20;

	if ((g = calloc(1, sizeof(*g))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if ((g->ng_sock = mnl_socket_open2(NETLINK_NETFILTER,
	    SOCK_NONBLOCK | SOCK_CLOEXEC)) == NULL ||
	    mnl_socket_bind(g->ng_sock, 0, MNL_SOCKET_AUTOPID) == -1 ||
	    mnl_socket_setsockopt(g->ng_sock, NETLINK_ADD_MEMBERSHIP, &grp,
	    sizeof(grp)) == -1) {
		nc_err_errno(err, errlen, errno, "subscribing to nftables events");
		netctl_guard_free(g);
		return NULL;
	}
	/* A burst (nft -f of a big ruleset) may overrun it: ENOBUFS, then a check. */
	(void)setsockopt(mnl_socket_get_fd(g->ng_sock), SOL_SOCKET, SO_RCVBUF,
	    &big, sizeof(big));
	return g;
}

void
netctl_guard_free(struct netctl_guard *g)
{
	if (g == NULL)
		return;
	if (g->ng_sock != NULL)
		mnl_socket_close(g->ng_sock);
	free(g);
}

int
netctl_guard_fd(const struct netctl_guard *g)
{
	return mnl_socket_get_fd(g->ng_sock);
}

int
netctl_guard_drain(struct netctl_guard *g)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	ssize_t n;
	int events = 0;

	/*
	 * Any event counts: a flush deletes tables without naming a rule of ours, and
	 * a check reads only our two tables, so it is cheap to do one too many.
	 */
	for (;;) {
		n = recv(netctl_guard_fd(g), buf, sizeof(buf), MSG_DONTWAIT);
		if (n > 0) {
			events++;
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == ENOBUFS) {
			events++;	/* lost some: they mattered, maybe */
			continue;
		}
		break;
	}
	return events;
}

/*
 * The batch that puts everything back: delete whichever of our tables exists (with
 * all it holds), then add the base and every sandbox, as netctl installs them.
 */
static int
nc_restore_items(const struct nc_kernel *k, const struct nc_model *models,
    size_t nmodels, struct nc_batch_item **items, size_t *n)
{
	struct nc_batch_item *v;
	size_t total = 2, i, j;

	for (i = 0; i < nmodels; i++)
		total += models[i].nm_n;
	if ((v = calloc(total, sizeof(*v))) == NULL)
		return -1;
	*n = 0;
	for (j = 0; j < models[0].nm_n; j++) {
		const struct nc_obj *o = &models[0].nm_v[j];
		uint32_t fam;

		if (o->no_type != NC_OBJ_TABLE)
			continue;
		fam = nftnl_table_get_u32(o->no_o, NFTNL_TABLE_FAMILY);
		if (k->nk_has_table[fam == NFPROTO_INET ? 0 : 1]) {
			v[*n].bi_op = NC_OP_DEL;
			v[(*n)++].bi_obj = o;
		}
	}
	for (i = 0; i < nmodels; i++)
		for (j = 0; j < models[i].nm_n; j++) {
			v[*n].bi_op = NC_OP_ADD;
			v[(*n)++].bi_obj = &models[i].nm_v[j];
		}
	*items = v;
	return 0;
}

static void
nc_status_clear(struct netctl_status *st)
{
	size_t i;

	for (i = 0; i < st->st_ndrift; i++)
		free(st->st_drift[i]);
	free(st->st_drift);
	st->st_drift = NULL;
	st->st_ndrift = 0;
	memset(st->st_sb, 0, st->st_nsb * sizeof(*st->st_sb));
}

/* Check and restore for the sandboxes in sbs (their interfaces exist). */
static int
nc_restore(const struct netctl_params *p, const struct sandbox *sbs, size_t nsb,
    struct netctl_restore *r, char *err, size_t errlen)
{
	struct nc_batch_item *items = NULL;
	struct nc_model *models = NULL;
	struct netctl_status st;
	struct nc_kernel k;
	struct nc_nl nl;
	size_t i, n;
	int tries, rv = -1, have_k = 0, have_nl = 0;

	memset(&k, 0, sizeof(k));
	memset(&st, 0, sizeof(st));
	if ((st.st_sb = calloc(nsb + 1, sizeof(*st.st_sb))) == NULL ||
	    (models = calloc(nsb + 1, sizeof(*models))) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	st.st_nsb = nsb;
	for (i = 0; i <= nsb; i++)
		nc_model_init(&models[i]);
	if (nc_model_base(&models[0], p) == -1) {
		nc_err_errno(err, errlen, errno, "building the base ruleset");
		goto out;
	}
	for (i = 0; i < nsb; i++)
		if (nc_model_sandbox(&models[i + 1], &sbs[i]) == -1) {
			nc_err_errno(err, errlen, errno, "building the rules of "
			    "sandbox %s", sbs[i].sb_name);
			goto out;
		}
	if (nc_nl_open(&nl, err, errlen) == -1)
		goto out;
	have_nl = 1;
	for (tries = 0; tries < 3; tries++) {
		if (have_k)
			nc_kernel_free(&k);
		have_k = 0;
		nc_status_clear(&st);
		free(items);
		items = NULL;
		if (nc_kernel_read(&nl, &k, err, errlen) == -1)
			goto out;
		have_k = 1;
		if (nc_full_drift(&k, models, nsb + 1, &st) == -1) {
			snprintf(err, errlen, "out of memory");
			goto out;
		}
		if (st.st_ndrift == 0) {
			rv = 0;
			goto out;
		}
		if (r->nr_drift == 0) {
			r->nr_drift = (int)st.st_ndrift;
			snprintf(r->nr_found, sizeof(r->nr_found), "%s",
			    st.st_drift[0]);
		}
		if (nc_restore_items(&k, models, nsb + 1, &items, &n) == -1) {
			snprintf(err, errlen, "out of memory");
			goto out;
		}
		/* Bound to the generation read: a change in between means read again. */
		if (nc_nl_batch(&nl, items, n, 1, k.nk_genid, err, errlen) == 0) {
			r->nr_reinstalled = 1;
			rv = 0;
			goto out;
		}
		if (errno != ERESTART && errno != EINTR)
			goto out;
	}
 out:
	free(items);
	if (have_k)
		nc_kernel_free(&k);
	if (have_nl)
		nc_nl_close(&nl);
	nc_status_clear(&st);
	free(st.st_sb);
	if (models != NULL) {
		for (i = 0; i <= nsb; i++)
			nc_model_free(&models[i]);
		free(models);
	}
	return rv;
}

int
netctl_guard_check(const struct airlock_config *cfg, struct netctl_restore *r,
    char *err, size_t errlen)
{
	struct netctl_params p;
	struct sandbox *all = NULL;
	struct stat sb;
	char path[PATH_MAX];
	size_t live = 0, i;
	int lock = -1, nall, rv = -1;

	memset(r, 0, sizeof(*r));
	/* No sandbox was ever made here: nothing to guard (and nothing to create). */
	if (snprintf(path, sizeof(path), "%s/sandboxes", cfg->state_dir) >=
	    (int)sizeof(path) || (stat(path, &sb) == -1 && errno == ENOENT))
		return 0;
	if (netctl_params_from_config(cfg, &p, err, errlen) == -1)
		return -1;
	/* Records and rules change together under this lock (netctl_sandbox.c). */
	if ((lock = nc_lock(cfg->state_dir, err, errlen)) == -1)
		return -1;
	if ((nall = sandbox_list(cfg->state_dir, &all)) == -1) {
		nc_err_errno(err, errlen, errno, "reading the sandbox records");
		goto out;
	}
	/*
	 * A sandbox whose interface is gone has nothing left to keep in (and its
	 * netdev chain could not be added); with none left there is nothing to guard.
	 */
	for (i = 0; i < (size_t)nall; i++)
		if (nc_link_exists(all[i].sb_iface))
			all[live++] = all[i];
	r->nr_sandboxes = (int)live;
	if (live == 0) {
		rv = 0;
		goto out;
	}
	rv = nc_restore(&p, all, live, r, err, errlen);
 out:
	free(all);
	close(lock);
	return rv;
}
