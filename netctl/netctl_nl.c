/*
 * netctl/netctl_nl.c: the nfnetlink socket: atomic batches with per-object error
 * reports, the ruleset generation id, and dumps of our two tables.
 *
 * A batch is NFNL_MSG_BATCH_BEGIN, one message per object, NFNL_MSG_BATCH_END.  The
 * kernel applies all of it or none of it.  Every message carries NLM_F_ACK and its own
 * sequence number, and we keep, per sequence number, the description of the object it
 * carries, so an error ack is reported against the object that caused it.  The kernel
 * processes a batch synchronously inside sendmsg(), so by the time it returns every
 * ack is queued on our socket: we drain it without blocking.
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <libnftnl/chain.h>
#include <libnftnl/common.h>
#include <libnftnl/gen.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>

#include "netctl_int.h"

#define NC_BUFSZ	(1 << 20)	/* one batch; a sandbox's is a few KiB */

int
nc_nl_open(struct nc_nl *nl, char *err, size_t errlen)
{
	int one = 1, rcvbuf = 4 << 20;

	memset(nl, 0, sizeof(*nl));
	if ((nl->nn_sock = mnl_socket_open(NETLINK_NETFILTER)) == NULL) {
		nc_err_errno(err, errlen, errno, "opening a netfilter netlink "
		    "socket");
		return -1;
	}
	if (mnl_socket_bind(nl->nn_sock, 0, MNL_SOCKET_AUTOPID) == -1) {
		nc_err_errno(err, errlen, errno, "binding the netlink socket");
		nc_nl_close(nl);
		return -1;
	}
	nl->nn_portid = mnl_socket_get_portid(nl->nn_sock);
	nl->nn_seq = (uint32_t)time(NULL);
	/* Errors without the request echoed back, with the kernel's message. */
	(void)mnl_socket_setsockopt(nl->nn_sock, NETLINK_CAP_ACK, &one,
	    sizeof(one));
	(void)mnl_socket_setsockopt(nl->nn_sock, NETLINK_EXT_ACK, &one,
	    sizeof(one));
	/* Room for every ack of a large batch (best effort: needs privilege). */
	(void)setsockopt(mnl_socket_get_fd(nl->nn_sock), SOL_SOCKET,
	    SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf));
	return 0;
}

void
nc_nl_close(struct nc_nl *nl)
{
	if (nl->nn_sock != NULL)
		mnl_socket_close(nl->nn_sock);
	nl->nn_sock = NULL;
}

static int
nc_gen_cb(const struct nlmsghdr *nlh, void *arg)
{
	struct nftnl_gen *g;
	uint32_t *genid = arg;

	if ((g = nftnl_gen_alloc()) == NULL)
		return MNL_CB_ERROR;
	if (nftnl_gen_nlmsg_parse(nlh, g) == -1) {
		nftnl_gen_free(g);
		return MNL_CB_ERROR;
	}
	*genid = nftnl_gen_get_u32(g, NFTNL_GEN_ID);
	nftnl_gen_free(g);
	return MNL_CB_OK;
}

/* Sends one request and runs cb over every reply until done. */
static int
nc_nl_talk(struct nc_nl *nl, struct nlmsghdr *nlh, mnl_cb_t cb, void *arg)
{
	char *buf;
	ssize_t n;
	uint32_t seq = nlh->nlmsg_seq;
	int rv = -1, saved;

	if ((buf = malloc(MNL_SOCKET_BUFFER_SIZE * 4)) == NULL)
		return -1;
	if (mnl_socket_sendto(nl->nn_sock, nlh, nlh->nlmsg_len) == -1)
		goto out;
	for (;;) {
		n = mnl_socket_recvfrom(nl->nn_sock, buf,
		    MNL_SOCKET_BUFFER_SIZE * 4);
		if (n == -1)
			goto out;
		rv = mnl_cb_run(buf, (size_t)n, seq, nl->nn_portid, cb, arg);
		if (rv <= MNL_CB_STOP)
			break;
	}
	rv = rv == MNL_CB_STOP ? 0 : -1;
 out:
	saved = errno;
	free(buf);
	errno = saved;
	return rv == 0 ? 0 : -1;
}

int
nc_nl_genid(struct nc_nl *nl, uint32_t *genid, char *err, size_t errlen)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh;

	nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETGEN, AF_UNSPEC, NLM_F_ACK,
	    ++nl->nn_seq);
	if (nc_nl_talk(nl, nlh, nc_gen_cb, genid) == -1) {
		nc_err_errno(err, errlen, errno, "reading the ruleset "
		    "generation");
		return -1;
	}
	return 0;
}

static const char *
nc_op_verb(enum nc_op op)
{
	switch (op) {
	case NC_OP_ADD:
		return "adding";
	case NC_OP_DEL:
		return "deleting";
	case NC_OP_FLUSH:
		return "flushing";
	}
	return "?";
}

/* Appends the message of one item to the batch. */
static int
nc_batch_put(struct mnl_nlmsg_batch *b, const struct nc_batch_item *it,
    uint32_t seq)
{
	const struct nc_obj *o = it->bi_obj;
	struct nlmsghdr *nlh;
	uint16_t type = 0, flags = NLM_F_ACK;
	uint32_t family = 0;

	switch (o->no_type) {
	case NC_OBJ_TABLE:
		type = it->bi_op == NC_OP_ADD ? NFT_MSG_NEWTABLE :
		    NFT_MSG_DELTABLE;
		family = nftnl_table_get_u32(o->no_o, NFTNL_TABLE_FAMILY);
		break;
	case NC_OBJ_CHAIN:
		type = it->bi_op == NC_OP_ADD ? NFT_MSG_NEWCHAIN :
		    it->bi_op == NC_OP_FLUSH ? NFT_MSG_DELRULE : NFT_MSG_DELCHAIN;
		family = nftnl_chain_get_u32(o->no_o, NFTNL_CHAIN_FAMILY);
		break;
	case NC_OBJ_SET:
		type = it->bi_op == NC_OP_ADD ? NFT_MSG_NEWSET : NFT_MSG_DELSET;
		family = nftnl_set_get_u32(o->no_o, NFTNL_SET_FAMILY);
		break;
	case NC_OBJ_RULE:
		type = it->bi_op == NC_OP_ADD ? NFT_MSG_NEWRULE :
		    NFT_MSG_DELRULE;
		family = nftnl_rule_get_u32(o->no_o, NFTNL_RULE_FAMILY);
		break;
	case NC_OBJ_ELEM:
		type = it->bi_op == NC_OP_ADD ? NFT_MSG_NEWSETELEM :
		    NFT_MSG_DELSETELEM;
		family = nftnl_set_get_u32(o->no_o, NFTNL_SET_FAMILY);
		break;
	}
	if (it->bi_op == NC_OP_ADD) {
		/* EXCL: an object that already exists is an error, never merged. */
		flags |= NLM_F_CREATE | NLM_F_EXCL;
		if (o->no_type == NC_OBJ_RULE)
			flags = NLM_F_ACK | NLM_F_CREATE | NLM_F_APPEND;
	}
	nlh = nftnl_nlmsg_build_hdr(mnl_nlmsg_batch_current(b), type,
	    (uint16_t)family, flags, seq);
	switch (o->no_type) {
	case NC_OBJ_TABLE:
		nftnl_table_nlmsg_build_payload(nlh, o->no_o);
		break;
	case NC_OBJ_CHAIN:
		if (it->bi_op == NC_OP_FLUSH) {
			/* DELRULE naming only table and chain: all its rules. */
			mnl_attr_put_strz(nlh, NFTA_RULE_TABLE, NETCTL_TABLE);
			mnl_attr_put_strz(nlh, NFTA_RULE_CHAIN,
			    nftnl_chain_get_str(o->no_o, NFTNL_CHAIN_NAME));
		} else if (it->bi_op == NC_OP_DEL) {
			mnl_attr_put_strz(nlh, NFTA_CHAIN_TABLE, NETCTL_TABLE);
			mnl_attr_put_strz(nlh, NFTA_CHAIN_NAME,
			    nftnl_chain_get_str(o->no_o, NFTNL_CHAIN_NAME));
		} else
			nftnl_chain_nlmsg_build_payload(nlh, o->no_o);
		break;
	case NC_OBJ_SET:
		nftnl_set_nlmsg_build_payload(nlh, o->no_o);
		break;
	case NC_OBJ_RULE:
		nftnl_rule_nlmsg_build_payload(nlh, o->no_o);
		break;
	case NC_OBJ_ELEM:
		nftnl_set_elems_nlmsg_build_payload(nlh, o->no_o);
		break;
	}
	return mnl_nlmsg_batch_next(b) ? 0 : -1;
}

struct nc_ack {
	const struct nc_batch_item *items;
	size_t		 n;
	uint32_t	 seq0;		/* sequence number of items[0] */
	uint32_t	 begin_seq;
	int		 error;		/* first error (positive errno) */
	char		*err;
	size_t		 errlen;
	int		 acks;
};

/* One NLMSG_ERROR: an ack (0) or the error of the message with that seq. */
static void
nc_ack_one(struct nc_ack *a, const struct nlmsghdr *nlh)
{
	const struct nlmsgerr *e;
	const struct nlattr *attr;
	const char *kmsg = NULL;
	uint32_t seq;
	size_t hdr;

	if (nlh->nlmsg_len < NLMSG_HDRLEN + sizeof(*e))
		return;
	e = mnl_nlmsg_get_payload(nlh);
	a->acks++;
	if (e->error == 0 || a->error != 0)
		return;
	a->error = -e->error;
	seq = e->msg.nlmsg_seq;
	/* With NETLINK_EXT_ACK the kernel may add a message after the header. */
	if (nlh->nlmsg_flags & NLM_F_ACK_TLVS) {
		hdr = sizeof(*e);
		if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
			hdr += e->msg.nlmsg_len - NLMSG_HDRLEN;
		mnl_attr_for_each(attr, nlh, hdr) {
			if (mnl_attr_get_type(attr) == NLMSGERR_ATTR_MSG &&
			    mnl_attr_validate(attr, MNL_TYPE_NUL_STRING) == 0)
				kmsg = mnl_attr_get_str(attr);
		}
	}
	if (seq >= a->seq0 && seq - a->seq0 < a->n) {
		const struct nc_batch_item *it = &a->items[seq - a->seq0];

		nc_err_errno(a->err, a->errlen, a->error, "%s %s%s%s%s",
		    nc_op_verb(it->bi_op), it->bi_obj->no_desc,
		    kmsg ? " (" : "", kmsg ? kmsg : "", kmsg ? ")" : "");
	} else if (a->error == ERESTART || a->error == EINTR)
		snprintf(a->err, a->errlen, "the ruleset changed while "
		    "airlock was reading it; nothing was applied");
	else
		nc_err_errno(a->err, a->errlen, a->error, "netlink batch");
}

int
nc_nl_batch(struct nc_nl *nl, const struct nc_batch_item *items, size_t n,
    int genid_set, uint32_t genid, char *err, size_t errlen)
{
	struct mnl_nlmsg_batch *b = NULL;
	struct nc_ack a;
	struct nlmsghdr *nlh, *beg;
	char *buf = NULL, *rbuf = NULL;
	ssize_t r;
	size_t i;
	int rv = -1, saved = 0, left;

	memset(&a, 0, sizeof(a));
	if ((buf = malloc(NC_BUFSZ)) == NULL ||
	    (rbuf = malloc(MNL_SOCKET_BUFFER_SIZE * 4)) == NULL) {
		saved = ENOMEM;
		nc_err_errno(err, errlen, ENOMEM, "netlink batch");
		goto out;
	}
	if ((b = mnl_nlmsg_batch_start(buf, NC_BUFSZ)) == NULL) {
		saved = ENOMEM;
		nc_err_errno(err, errlen, ENOMEM, "netlink batch");
		goto out;
	}
	a.begin_seq = ++nl->nn_seq;
	beg = nftnl_batch_begin(mnl_nlmsg_batch_current(b), a.begin_seq);
	/*
	 * Read-modify-write: the batch carries the generation the caller read; the
	 * kernel refuses it (ERESTART) if anything changed the ruleset since.
	 */
	if (genid_set)
		mnl_attr_put_u32(beg, NFNL_BATCH_GENID, htonl(genid));
	mnl_nlmsg_batch_next(b);
	a.items = items;
	a.n = n;
	a.seq0 = nl->nn_seq + 1;
	a.err = err;
	a.errlen = errlen;
	for (i = 0; i < n; i++) {
		if (nc_batch_put(b, &items[i], ++nl->nn_seq) == -1) {
			saved = E2BIG;
			snprintf(err, errlen, "batch too large at %s",
			    items[i].bi_obj->no_desc);
			goto out;
		}
	}
	nftnl_batch_end(mnl_nlmsg_batch_current(b), ++nl->nn_seq);
	if (!mnl_nlmsg_batch_next(b)) {
		saved = E2BIG;
		snprintf(err, errlen, "batch too large");
		goto out;
	}
	if (mnl_socket_sendto(nl->nn_sock, mnl_nlmsg_batch_head(b),
	    mnl_nlmsg_batch_size(b)) == -1) {
		saved = errno;
		nc_err_errno(err, errlen, errno, "sending the netlink batch");
		goto out;
	}
	/* Every ack is queued by now (see the top of this file). */
	for (;;) {
		r = recv(mnl_socket_get_fd(nl->nn_sock), rbuf,
		    MNL_SOCKET_BUFFER_SIZE * 4, MSG_DONTWAIT);
		if (r == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			saved = errno;
			nc_err_errno(err, errlen, errno, "reading netlink acks");
			goto out;
		}
		nlh = (struct nlmsghdr *)rbuf;
		left = (int)r;
		while (mnl_nlmsg_ok(nlh, left)) {
			if (nlh->nlmsg_type == NLMSG_ERROR)
				nc_ack_one(&a, nlh);
			nlh = mnl_nlmsg_next(nlh, &left);
		}
	}
	if (a.error != 0) {
		saved = a.error;
		goto out;
	}
	if ((size_t)a.acks < n) {
		saved = EPROTO;
		snprintf(err, errlen, "netlink batch: %d of %zu acks received",
		    a.acks, n);
		goto out;
	}
	rv = 0;
 out:
	free(buf);
	free(rbuf);
	if (b != NULL)
		mnl_nlmsg_batch_stop(b);
	errno = saved;
	return rv;
}

/* Dumps. */

struct nc_dump {
	struct nc_kernel *k;
	int		 what;		/* NFT_MSG_GET* */
	int		 family;
};

static int
nc_push(void ***v, size_t *n, void *o)
{
	void **nv;

	if ((nv = reallocarray(*v, *n + 1, sizeof(**v))) == NULL)
		return -1;
	nv[(*n)++] = o;
	*v = nv;
	return 0;
}

static int
nc_dump_cb(const struct nlmsghdr *nlh, void *arg)
{
	struct nc_dump *d = arg;
	struct nftnl_table *t;
	struct nftnl_chain *c;
	struct nftnl_rule *r;
	struct nftnl_set *s;

	switch (d->what) {
	case NFT_MSG_GETTABLE:
		if ((t = nftnl_table_alloc()) == NULL)
			return MNL_CB_ERROR;
		if (nftnl_table_nlmsg_parse(nlh, t) == 0 &&
		    strcmp(nftnl_table_get_str(t, NFTNL_TABLE_NAME),
		    NETCTL_TABLE) == 0)
			d->k->nk_has_table[d->family == NFPROTO_NETDEV] = 1;
		nftnl_table_free(t);
		break;
	case NFT_MSG_GETCHAIN:
		if ((c = nftnl_chain_alloc()) == NULL)
			return MNL_CB_ERROR;
		if (nftnl_chain_nlmsg_parse(nlh, c) == -1 ||
		    strcmp(nftnl_chain_get_str(c, NFTNL_CHAIN_TABLE),
		    NETCTL_TABLE) != 0) {
			nftnl_chain_free(c);
			break;
		}
		if (nc_push((void ***)&d->k->nk_chains, &d->k->nk_nchains, c)
		    == -1) {
			nftnl_chain_free(c);
			return MNL_CB_ERROR;
		}
		break;
	case NFT_MSG_GETRULE:
		if ((r = nftnl_rule_alloc()) == NULL)
			return MNL_CB_ERROR;
		if (nftnl_rule_nlmsg_parse(nlh, r) == -1 ||
		    strcmp(nftnl_rule_get_str(r, NFTNL_RULE_TABLE),
		    NETCTL_TABLE) != 0) {
			nftnl_rule_free(r);
			break;
		}
		if (nc_push((void ***)&d->k->nk_rules, &d->k->nk_nrules, r)
		    == -1) {
			nftnl_rule_free(r);
			return MNL_CB_ERROR;
		}
		break;
	case NFT_MSG_GETSET:
		if ((s = nftnl_set_alloc()) == NULL)
			return MNL_CB_ERROR;
		if (nftnl_set_nlmsg_parse(nlh, s) == -1 ||
		    strcmp(nftnl_set_get_str(s, NFTNL_SET_TABLE),
		    NETCTL_TABLE) != 0) {
			nftnl_set_free(s);
			break;
		}
		if (nc_push((void ***)&d->k->nk_sets, &d->k->nk_nsets, s) == -1) {
			nftnl_set_free(s);
			return MNL_CB_ERROR;
		}
		break;
	}
	return MNL_CB_OK;
}

static int
nc_dump(struct nc_nl *nl, struct nc_kernel *k, int what, int family)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nc_dump d = { k, what, family };
	struct nlmsghdr *nlh;
	struct nftnl_rule *r;
	struct nftnl_chain *c;
	struct nftnl_set *s;
	int rv;

	nlh = nftnl_nlmsg_build_hdr(buf, (uint16_t)what, (uint16_t)family,
	    NLM_F_DUMP, ++nl->nn_seq);
	/* Ask the kernel for our table only where it can filter. */
	switch (what) {
	case NFT_MSG_GETRULE:
		if ((r = nftnl_rule_alloc()) == NULL)
			return -1;
		nftnl_rule_set_str(r, NFTNL_RULE_TABLE, NETCTL_TABLE);
		nftnl_rule_nlmsg_build_payload(nlh, r);
		nftnl_rule_free(r);
		break;
	case NFT_MSG_GETCHAIN:
		if ((c = nftnl_chain_alloc()) == NULL)
			return -1;
		nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, NETCTL_TABLE);
		nftnl_chain_nlmsg_build_payload(nlh, c);
		nftnl_chain_free(c);
		break;
	case NFT_MSG_GETSET:
		if ((s = nftnl_set_alloc()) == NULL)
			return -1;
		nftnl_set_set_str(s, NFTNL_SET_TABLE, NETCTL_TABLE);
		nftnl_set_nlmsg_build_payload(nlh, s);
		nftnl_set_free(s);
		break;
	}
	rv = nc_nl_talk(nl, nlh, nc_dump_cb, &d);
	/* A table that does not exist yet is not an error for a dump. */
	if (rv == -1 && errno == ENOENT)
		rv = 0;
	return rv;
}

static int
nc_elem_dump_cb(const struct nlmsghdr *nlh, void *arg)
{
	struct nftnl_set *s = arg;

	return nftnl_set_elems_nlmsg_parse(nlh, s) == -1 ? MNL_CB_ERROR :
	    MNL_CB_OK;
}

static int
nc_dump_elems(struct nc_nl *nl, struct nftnl_set *s)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh;

	nlh = nftnl_nlmsg_build_hdr(buf, NFT_MSG_GETSETELEM,
	    (uint16_t)nftnl_set_get_u32(s, NFTNL_SET_FAMILY), NLM_F_DUMP,
	    ++nl->nn_seq);
	nftnl_set_elems_nlmsg_build_payload(nlh, s);
	return nc_nl_talk(nl, nlh, nc_elem_dump_cb, s);
}

void
nc_kernel_free(struct nc_kernel *k)
{
	size_t i;

	for (i = 0; i < k->nk_nchains; i++)
		nftnl_chain_free(k->nk_chains[i]);
	for (i = 0; i < k->nk_nrules; i++)
		nftnl_rule_free(k->nk_rules[i]);
	for (i = 0; i < k->nk_nsets; i++)
		nftnl_set_free(k->nk_sets[i]);
	free(k->nk_chains);
	free(k->nk_rules);
	free(k->nk_sets);
	memset(k, 0, sizeof(*k));
}

static int
nc_kernel_read_once(struct nc_nl *nl, struct nc_kernel *k)
{
	static const int fams[2] = { NFPROTO_INET, NFPROTO_NETDEV };
	static const int what[4] = { NFT_MSG_GETTABLE, NFT_MSG_GETCHAIN,
	    NFT_MSG_GETSET, NFT_MSG_GETRULE };
	size_t i, j;

	for (i = 0; i < 2; i++)
		for (j = 0; j < 4; j++)
			if (nc_dump(nl, k, what[j], fams[i]) == -1)
				return -1;
	for (i = 0; i < k->nk_nsets; i++)
		if (nc_dump_elems(nl, k->nk_sets[i]) == -1)
			return -1;
	return 0;
}

int
nc_kernel_read(struct nc_nl *nl, struct nc_kernel *k, char *err,
    size_t errlen)
{
	uint32_t before, after;
	int tries;

	memset(k, 0, sizeof(*k));
	for (tries = 0; tries < 5; tries++) {
		if (nc_nl_genid(nl, &before, err, errlen) == -1)
			return -1;
		if (nc_kernel_read_once(nl, k) == -1) {
			nc_err_errno(err, errlen, errno, "listing the airlock "
			    "tables");
			nc_kernel_free(k);
			return -1;
		}
		if (nc_nl_genid(nl, &after, err, errlen) == -1) {
			nc_kernel_free(k);
			return -1;
		}
		/* A consistent picture: nothing changed while we read. */
		if (before == after) {
			k->nk_genid = after;
			return 0;
		}
		nc_kernel_free(k);
	}
	snprintf(err, errlen, "the ruleset kept changing while airlock read it");
	return -1;
}
