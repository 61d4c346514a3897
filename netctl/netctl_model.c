/*
 * netctl/netctl_model.c: the ruleset airlock installs, built as libnftnl objects.
 *
 * The same objects serve two purposes: they are serialised into batches
 * (netctl_nl.c) and compared with what the kernel holds (netctl_status.c), so what
 * "drift" means is exactly "differs from what this file builds".
 *
 * The ruleset, as `nft list table inet airlock` / `netdev airlock` shows it:
 *
 * table netdev airlock: L2, the first thing a sandbox's frame meets.
 *   chain sandbox_NAME: one per sandbox device, hook ingress device IFACE, priority
 *	-500, policy drop; its only rule is "jump l2_check".  A netdev base chain sees only
 *	the frames its own device receives, so the host's other traffic never meets a
 *	drop policy, and a frame's cost does not depend on how many sandboxes exist.
 *	(One chain per device rather than one chain with a device list: updating the
 *	device list of an existing netdev chain needs kernel 6.x features Debian 12's
 *	kernel lacks, and a per-device chain is one small object per sandbox.)
 *   chain l2_check: shared, keyed by interface through sets: a pinned MAC must be the
 *	frame's source MAC and ARP's sender MAC; IPv4 must come from the sandbox's own
 *	address (iifname . ip saddr in sandbox_src4); ARP must claim only that address.
 *	Anything else (IPv6, VLAN tags, other ethertypes) falls to "drop".
 *	This table exists because ARP and ether addresses cannot be filtered in inet.
 *
 * table inet airlock: L3/L4.  Its base chains have policy accept because they see the
 *   host's own traffic too (a busy production host); each dispatches packets from
 *   sandbox interfaces (iifname @sandbox_ifaces) into a regular chain that ends in an
 *   unconditional drop, so for a sandbox's packet drop is the policy everywhere.
 *   prerouting (raw, -300) -> sandbox_pre: runs before conntrack and nat: no IPv6,
 *	source address checked again (defence in depth, should netdev be flushed), TCP
 *	and DNS pass on to nat, ICMP echo only to the host address, all else dropped
 *	(other UDP, QUIC, ICMP).
 *   prerouting_nat (dstnat) -> sandbox_nat: UDP/TCP 53 redirect to dns_port, all other
 *	TCP redirect to proxy_port (SO_ORIGINAL_DST recovers the destination).  Redirect
 *	rewrites the destination to the primary address of the incoming interface: the
 *	sandbox's host address.
 *   input (filter) -> sandbox_in: after nat the packet must be addressed to the
 *	sandbox's own host address and to the proxy or DNS port (or be an echo);
 *	everything else addressed to the host is dropped (sshd on port 22 is unreachable
 *	because TCP to 22 was redirected to the proxy, and a packet that escaped nat,
 *	e.g. conntrack-invalid, is dropped here by its port).
 *   forward (filter): nothing from or to a sandbox interface is ever routed, so
 *	sandbox A can never reach sandbox B nor the outside directly.
 *   output (filter) -> airlockd_out: airlockd's own sockets (meta skuid) may not reach
 *	the floor (floor4/floor6 and any local address), defence in depth beneath the
 *	proxy's checks; the host's stub resolver on 127/8 port 53 is one exception
 *	because upstream names are resolved the way the host resolves them, and, with
 *	metrics_listen, the answers of that loopback listener (tcp sport, ct state
 *	established) the other.
 */
#include <arpa/inet.h>
#include <net/if_arp.h>
#include <netinet/in.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_conntrack_common.h>
#include <linux/netfilter/nf_nat.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter_ipv4.h>
#include <linux/rtnetlink.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libnftnl/chain.h>
#include <libnftnl/expr.h>
#include <libnftnl/rule.h>
#include <libnftnl/set.h>
#include <libnftnl/table.h>
#include <libnftnl/udata.h>

#include "netctl_int.h"

/* nftables datatype ids (nftables' include/datatype.h), so `nft list` prints types. */
#define NC_TYPE_IPADDR		7
#define NC_TYPE_IP6ADDR		8
#define NC_TYPE_ETHERADDR	9
#define NC_TYPE_IFNAME		41
#define NC_TYPE_BITS		6
#define NC_BYTEORDER_HOST	1	/* nftables' enum byteorder */
#define NC_CONCAT(a, b)		(((a) << NC_TYPE_BITS) | (b))

#define NC_IFNAMSIZ		16
#define NC_ETH_PAD		8	/* registers hold 4-byte words */

/* Set ids within one batch: lookups name the set and its id. */
enum {
	NC_ID_IFACES = 1,
	NC_ID_SRC4,
	NC_ID_HOST4,
	NC_ID_FLOOR4,
	NC_ID_FLOOR6,
	NC_ID_NSRC4,
	NC_ID_MAC,
	NC_ID_PINNED,
};

void
nc_model_init(struct nc_model *m)
{
	memset(m, 0, sizeof(*m));
}

static void
nc_obj_free(struct nc_obj *o)
{
	switch (o->no_type) {
	case NC_OBJ_TABLE:
		nftnl_table_free(o->no_o);
		break;
	case NC_OBJ_CHAIN:
		nftnl_chain_free(o->no_o);
		break;
	case NC_OBJ_SET:
	case NC_OBJ_ELEM:
		nftnl_set_free(o->no_o);
		break;
	case NC_OBJ_RULE:
		nftnl_rule_free(o->no_o);
		break;
	}
}

void
nc_model_free(struct nc_model *m)
{
	size_t i;

	for (i = 0; i < m->nm_n; i++)
		nc_obj_free(&m->nm_v[i]);
	free(m->nm_v);
	nc_model_init(m);
}

/* Takes ownership of o (freed on failure too). */
static int
nc_model_add(struct nc_model *m, enum nc_obj_type t, void *o,
    const char *fmt, ...)
{
	struct nc_obj *nv, obj;
	va_list ap;

	obj.no_type = t;
	obj.no_o = o;
	if (o == NULL) {
		errno = ENOMEM;
		return -1;
	}
	if (m->nm_n == m->nm_cap) {
		size_t cap = m->nm_cap ? m->nm_cap * 2 : 64;

		if ((nv = reallocarray(m->nm_v, cap, sizeof(*nv))) == NULL) {
			nc_obj_free(&obj);
			return -1;
		}
		m->nm_v = nv;
		m->nm_cap = cap;
	}
	va_start(ap, fmt);
	vsnprintf(obj.no_desc, sizeof(obj.no_desc), fmt, ap);
	va_end(ap);
	m->nm_v[m->nm_n++] = obj;
	return 0;
}

static const char *
nc_family_str(int family)
{
	return family == NFPROTO_NETDEV ? "netdev" : "inet";
}

/* A comment (rule, chain or table userdata: type 0 is the comment in all three). */
static int
nc_udata_comment(struct nftnl_udata_buf **out, const char *comment)
{
	struct nftnl_udata_buf *u;

	*out = NULL;
	if ((u = nftnl_udata_buf_alloc(NFTNL_UDATA_COMMENT_MAXLEN + 8)) == NULL)
		return -1;
	if (!nftnl_udata_put_strz(u, 0, comment)) {
		nftnl_udata_buf_free(u);
		errno = EINVAL;
		return -1;
	}
	*out = u;
	return 0;
}

static struct nftnl_table *
nc_table_new(int family)
{
	struct nftnl_udata_buf *u;
	struct nftnl_table *t;

	if ((t = nftnl_table_alloc()) == NULL)
		return NULL;
	nftnl_table_set_u32(t, NFTNL_TABLE_FAMILY, family);
	nftnl_table_set_str(t, NFTNL_TABLE_NAME, NETCTL_TABLE);
	if (nc_udata_comment(&u, "sandbox egress enforcement: managed by "
	    "'airlock sandbox' and 'airlock net'; do not edit") == 0) {
		nftnl_table_set_data(t, NFTNL_TABLE_USERDATA,
		    nftnl_udata_buf_data(u), nftnl_udata_buf_len(u));
		nftnl_udata_buf_free(u);
	}
	return t;
}

/* A chain; base chains when type != NULL.  dev: the netdev device, or NULL. */
static struct nftnl_chain *
nc_chain_new(int family, const char *name, const char *type, int hook,
    int prio, int policy, const char *dev, const char *comment)
{
	struct nftnl_udata_buf *u;
	struct nftnl_chain *c;

	if ((c = nftnl_chain_alloc()) == NULL)
		return NULL;
	nftnl_chain_set_u32(c, NFTNL_CHAIN_FAMILY, family);
	nftnl_chain_set_str(c, NFTNL_CHAIN_TABLE, NETCTL_TABLE);
	nftnl_chain_set_str(c, NFTNL_CHAIN_NAME, name);
	if (type != NULL) {
		nftnl_chain_set_str(c, NFTNL_CHAIN_TYPE, type);
		nftnl_chain_set_u32(c, NFTNL_CHAIN_HOOKNUM, hook);
		nftnl_chain_set_s32(c, NFTNL_CHAIN_PRIO, prio);
		nftnl_chain_set_u32(c, NFTNL_CHAIN_POLICY, policy);
		if (dev != NULL)
			nftnl_chain_set_str(c, NFTNL_CHAIN_DEV, dev);
	}
	if (comment != NULL && nc_udata_comment(&u, comment) == 0) {
		nftnl_chain_set_data(c, NFTNL_CHAIN_USERDATA,
		    nftnl_udata_buf_data(u), nftnl_udata_buf_len(u));
		nftnl_udata_buf_free(u);
	}
	return c;
}

static struct nftnl_set *
nc_set_new(int family, const char *name, uint32_t id, uint32_t type,
    uint32_t len, uint32_t flags)
{
	struct nftnl_set *s;

	if ((s = nftnl_set_alloc()) == NULL)
		return NULL;
	nftnl_set_set_u32(s, NFTNL_SET_FAMILY, family);
	nftnl_set_set_str(s, NFTNL_SET_TABLE, NETCTL_TABLE);
	nftnl_set_set_str(s, NFTNL_SET_NAME, name);
	nftnl_set_set_u32(s, NFTNL_SET_ID, id);
	nftnl_set_set_u32(s, NFTNL_SET_KEY_TYPE, type);
	nftnl_set_set_u32(s, NFTNL_SET_KEY_LEN, len);
	nftnl_set_set_u32(s, NFTNL_SET_FLAGS, flags);
	/*
	 * nft prints a key by the byte order recorded in the set's userdata; without
	 * it an ifname (a host-order string) would print reversed, i.e. as "".
	 */
	if (type == NC_TYPE_IFNAME) {
		struct nftnl_udata_buf *u;

		if ((u = nftnl_udata_buf_alloc(16)) != NULL) {
			nftnl_udata_put_u32(u, NFTNL_UDATA_SET_KEYBYTEORDER,
			    NC_BYTEORDER_HOST);
			nftnl_set_set_data(s, NFTNL_SET_USERDATA,
			    nftnl_udata_buf_data(u), nftnl_udata_buf_len(u));
			nftnl_udata_buf_free(u);
		}
	}
	return s;
}

/* The set object an element message is built from: family, table, set name. */
static struct nftnl_set *
nc_elemset_new(int family, const char *set)
{
	struct nftnl_set *s;

	if ((s = nftnl_set_alloc()) == NULL)
		return NULL;
	nftnl_set_set_u32(s, NFTNL_SET_FAMILY, family);
	nftnl_set_set_str(s, NFTNL_SET_TABLE, NETCTL_TABLE);
	nftnl_set_set_str(s, NFTNL_SET_NAME, set);
	return s;
}

static int
nc_elem_add(struct nftnl_set *s, const void *key, size_t len, uint32_t flags,
    const char *comment, int open_end)
{
	struct nftnl_udata_buf *u = NULL;
	struct nftnl_set_elem *e;

	if ((e = nftnl_set_elem_alloc()) == NULL)
		return -1;
	nftnl_set_elem_set(e, NFTNL_SET_ELEM_KEY, key, len);
	if (flags != 0)
		nftnl_set_elem_set_u32(e, NFTNL_SET_ELEM_FLAGS, flags);
	if (comment != NULL || open_end) {
		if ((u = nftnl_udata_buf_alloc(NFTNL_UDATA_COMMENT_MAXLEN + 16))
		    == NULL) {
			nftnl_set_elem_free(e);
			return -1;
		}
		/* Element udata: 0 comment, 1 flags (1: interval open to the end). */
		if (comment != NULL)
			nftnl_udata_put_strz(u, 0, comment);
		if (open_end)
			nftnl_udata_put_u32(u, 1, 1);
		nftnl_set_elem_set(e, NFTNL_SET_ELEM_USERDATA,
		    nftnl_udata_buf_data(u), nftnl_udata_buf_len(u));
		nftnl_udata_buf_free(u);
	}
	nftnl_set_elem_add(s, e);
	return 0;
}

/* Rule construction: each helper appends one expression; any failure marks the rule. */
struct nc_rb {
	struct nftnl_rule *r;
	int		 fail;
};

static void
nc_rb_expr(struct nc_rb *b, struct nftnl_expr *e)
{
	if (e == NULL) {
		b->fail = 1;
		return;
	}
	nftnl_rule_add_expr(b->r, e);
}

static void
nc_meta(struct nc_rb *b, uint32_t key, uint32_t dreg)
{
	struct nftnl_expr *e = nftnl_expr_alloc("meta");

	if (e != NULL) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_META_KEY, key);
		nftnl_expr_set_u32(e, NFTNL_EXPR_META_DREG, dreg);
	}
	nc_rb_expr(b, e);
}

static void
nc_payload(struct nc_rb *b, uint32_t base, uint32_t off, uint32_t len,
    uint32_t dreg)
{
	struct nftnl_expr *e = nftnl_expr_alloc("payload");

	if (e != NULL) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_BASE, base);
		nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_OFFSET, off);
		nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_LEN, len);
		nftnl_expr_set_u32(e, NFTNL_EXPR_PAYLOAD_DREG, dreg);
	}
	nc_rb_expr(b, e);
}

static void
nc_cmp(struct nc_rb *b, uint32_t sreg, const void *data, size_t len)
{
	struct nftnl_expr *e = nftnl_expr_alloc("cmp");

	if (e != NULL) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_SREG, sreg);
		nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_OP, NFT_CMP_EQ);
		nftnl_expr_set(e, NFTNL_EXPR_CMP_DATA, data, len);
	}
	nc_rb_expr(b, e);
}

static void
nc_cmp_u8(struct nc_rb *b, uint8_t v)
{
	nc_cmp(b, NFT_REG_1, &v, sizeof(v));
}

/* meta load KEY; cmp eq v (one byte: nfproto, l4proto) */
static void
nc_meta_is(struct nc_rb *b, uint32_t key, uint8_t v)
{
	nc_meta(b, key, NFT_REG_1);
	nc_cmp_u8(b, v);
}

static void
nc_lookup(struct nc_rb *b, uint32_t sreg, const char *set, uint32_t id,
    int inv)
{
	struct nftnl_expr *e = nftnl_expr_alloc("lookup");

	if (e != NULL) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_SREG, sreg);
		nftnl_expr_set_str(e, NFTNL_EXPR_LOOKUP_SET, set);
		nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_SET_ID, id);
		/* Flags always set: the kernel's dump has them, so digests match. */
		nftnl_expr_set_u32(e, NFTNL_EXPR_LOOKUP_FLAGS,
		    inv ? NFT_LOOKUP_F_INV : 0);
	}
	nc_rb_expr(b, e);
}

static void
nc_counter(struct nc_rb *b)
{
	nc_rb_expr(b, nftnl_expr_alloc("counter"));
}

static void
nc_verdict(struct nc_rb *b, int verdict, const char *chain)
{
	struct nftnl_expr *e = nftnl_expr_alloc("immediate");

	if (e != NULL) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_VERDICT);
		nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_VERDICT, verdict);
		if (chain != NULL)
			nftnl_expr_set_str(e, NFTNL_EXPR_IMM_CHAIN, chain);
	}
	nc_rb_expr(b, e);
}

/* redirect to :port (the port in network byte order in register 1) */
static void
nc_redirect(struct nc_rb *b, uint16_t port)
{
	struct nftnl_expr *e;
	uint16_t nport = htons(port);

	if ((e = nftnl_expr_alloc("immediate")) != NULL) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_IMM_DREG, NFT_REG_1);
		nftnl_expr_set(e, NFTNL_EXPR_IMM_DATA, &nport, sizeof(nport));
	}
	nc_rb_expr(b, e);
	if ((e = nftnl_expr_alloc("redir")) != NULL) {
		/* max = min, as the kernel reports it back. */
		nftnl_expr_set_u32(e, NFTNL_EXPR_REDIR_REG_PROTO_MIN, NFT_REG_1);
		nftnl_expr_set_u32(e, NFTNL_EXPR_REDIR_REG_PROTO_MAX, NFT_REG_1);
		nftnl_expr_set_u32(e, NFTNL_EXPR_REDIR_FLAGS,
		    NF_NAT_RANGE_PROTO_SPECIFIED);
	}
	nc_rb_expr(b, e);
}

/* th dport == port (after an l4proto match) */
static void
nc_dport_is(struct nc_rb *b, uint16_t port)
{
	uint16_t nport = htons(port);

	nc_payload(b, NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2, NFT_REG_1);
	nc_cmp(b, NFT_REG_1, &nport, sizeof(nport));
}

/* th sport == port (after an l4proto match) */
static void
nc_sport_is(struct nc_rb *b, uint16_t port)
{
	uint16_t nport = htons(port);

	nc_payload(b, NFT_PAYLOAD_TRANSPORT_HEADER, 0, 2, NFT_REG_1);
	nc_cmp(b, NFT_REG_1, &nport, sizeof(nport));
}

/* ct state established: the state's bit in register 1, then != 0 */
static void
nc_ct_established(struct nc_rb *b)
{
	struct nftnl_expr *e;
	uint32_t mask = NF_CT_STATE_BIT(IP_CT_ESTABLISHED), zero = 0;

	if ((e = nftnl_expr_alloc("ct")) != NULL) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_CT_KEY, NFT_CT_STATE);
		nftnl_expr_set_u32(e, NFTNL_EXPR_CT_DREG, NFT_REG_1);
	}
	nc_rb_expr(b, e);
	if ((e = nftnl_expr_alloc("bitwise")) != NULL) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_SREG, NFT_REG_1);
		nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_DREG, NFT_REG_1);
		nftnl_expr_set_u32(e, NFTNL_EXPR_BITWISE_LEN, sizeof(mask));
		nftnl_expr_set(e, NFTNL_EXPR_BITWISE_MASK, &mask, sizeof(mask));
		nftnl_expr_set(e, NFTNL_EXPR_BITWISE_XOR, &zero, sizeof(zero));
	}
	nc_rb_expr(b, e);
	if ((e = nftnl_expr_alloc("cmp")) != NULL) {
		nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_SREG, NFT_REG_1);
		nftnl_expr_set_u32(e, NFTNL_EXPR_CMP_OP, NFT_CMP_NEQ);
		nftnl_expr_set(e, NFTNL_EXPR_CMP_DATA, &zero, sizeof(zero));
	}
	nc_rb_expr(b, e);
}

/* "iifname . <payload> @set": ifname in register 1 (16 bytes), the field in 2. */
static void
nc_iif_concat(struct nc_rb *b, uint32_t base, uint32_t off, uint32_t len,
    const char *set, uint32_t id, int inv)
{
	nc_meta(b, NFT_META_IIFNAME, NFT_REG_1);
	nc_payload(b, base, off, len, NFT_REG_2);
	nc_lookup(b, NFT_REG_1, set, id, inv);
}

static void
nc_iif_in(struct nc_rb *b, uint32_t key, const char *set, uint32_t id)
{
	nc_meta(b, key, NFT_REG_1);
	nc_lookup(b, NFT_REG_1, set, id, 0);
}

static void
nc_iiftype_ether(struct nc_rb *b)
{
	uint16_t t = ARPHRD_ETHER;

	nc_meta(b, NFT_META_IIFTYPE, NFT_REG_1);
	nc_cmp(b, NFT_REG_1, &t, sizeof(t));
}

static void
nc_ethertype_is(struct nc_rb *b, uint16_t type)
{
	uint16_t nt = htons(type);

	nc_iiftype_ether(b);
	nc_payload(b, NFT_PAYLOAD_LL_HEADER, 12, 2, NFT_REG_1);
	nc_cmp(b, NFT_REG_1, &nt, sizeof(nt));
}

/* icmp type echo-request (IPv4) */
static void
nc_icmp_echo(struct nc_rb *b)
{
	nc_meta_is(b, NFT_META_NFPROTO, NFPROTO_IPV4);
	nc_meta_is(b, NFT_META_L4PROTO, IPPROTO_ICMP);
	nc_payload(b, NFT_PAYLOAD_TRANSPORT_HEADER, 0, 1, NFT_REG_1);
	nc_cmp_u8(b, 8);
}

static struct nc_rb
nc_rb_begin(int family, const char *chain)
{
	struct nc_rb b;

	b.fail = 0;
	if ((b.r = nftnl_rule_alloc()) == NULL) {
		b.fail = 1;
		return b;
	}
	nftnl_rule_set_u32(b.r, NFTNL_RULE_FAMILY, family);
	nftnl_rule_set_str(b.r, NFTNL_RULE_TABLE, NETCTL_TABLE);
	nftnl_rule_set_str(b.r, NFTNL_RULE_CHAIN, chain);
	return b;
}

/* Ends the rule with its comment and adds it to the model. */
static int
nc_rb_end(struct nc_model *m, struct nc_rb *b, const char *comment)
{
	struct nftnl_udata_buf *u;
	const char *chain;
	int family;

	if (b->r == NULL)
		return -1;
	if (comment != NULL && !b->fail) {
		if (nc_udata_comment(&u, comment) == -1)
			b->fail = 1;
		else {
			nftnl_rule_set_data(b->r, NFTNL_RULE_USERDATA,
			    nftnl_udata_buf_data(u), nftnl_udata_buf_len(u));
			nftnl_udata_buf_free(u);
		}
	}
	if (b->fail) {
		nftnl_rule_free(b->r);
		errno = ENOMEM;
		return -1;
	}
	chain = nftnl_rule_get_str(b->r, NFTNL_RULE_CHAIN);
	family = (int)nftnl_rule_get_u32(b->r, NFTNL_RULE_FAMILY);
	return nc_model_add(m, NC_OBJ_RULE, b->r, "rule in chain %s airlock %s "
	    "(\"%s\")", nc_family_str(family), chain,
	    comment != NULL ? comment : "");
}

#define NC_CHAIN(m, fam, name, type, hook, prio, pol, dev, comment)	\
	nc_model_add((m), NC_OBJ_CHAIN, nc_chain_new((fam), (name), (type), \
	    (hook), (prio), (pol), (dev), (comment)), "chain %s airlock %s", \
	    nc_family_str(fam), (name))

#define NC_SET(m, fam, name, id, type, len, flags)			\
	nc_model_add((m), NC_OBJ_SET, nc_set_new((fam), (name), (id),	\
	    (type), (len), (flags)), "set %s airlock %s", nc_family_str(fam), \
	    (name))

struct nc_range {
	const char	*r_start;	/* inclusive */
	const char	*r_end;		/* exclusive; NULL: to the end of the space */
};

/*
 * The floor for airlockd's own sockets (the output rule that matches its user): 0/8,
 * loopback, link-local (all of 169.254/16, with the metadata address), the other
 * metadata addresses (Alibaba 100.100.100.200, Azure 168.63.129.16), multicast,
 * reserved and broadcast (224/3, to the end).  Local addresses are matched by "fib daddr type local".
 */
static const struct nc_range nc_floor4[] = {
	{ "0.0.0.0", "1.0.0.0" },
	{ "100.100.100.200", "100.100.100.201" },
	{ "127.0.0.0", "128.0.0.0" },
	{ "168.63.129.16", "168.63.129.17" },
	{ "169.254.0.0", "169.255.0.0" },
	{ "224.0.0.0", NULL },
};
static const struct nc_range nc_floor6[] = {
	{ "::", "::2" },			/* unspecified, loopback */
	{ "fd00:ec2::254", "fd00:ec2::255" },	/* AWS metadata */
	{ "fe80::", "fec0::" },			/* link-local */
	{ "ff00::", NULL },			/* multicast */
};

static int
nc_model_floor(struct nc_model *m, const char *set, int af,
    const struct nc_range *r, size_t n)
{
	unsigned char a[16], z[16];
	struct nftnl_set *s;
	size_t i, len = af == AF_INET ? 4 : 16;

	if ((s = nc_elemset_new(NFPROTO_INET, set)) == NULL)
		return -1;
	for (i = 0; i < n; i++) {
		if (inet_pton(af, r[i].r_start, a) != 1)
			goto fail;
		if (nc_elem_add(s, a, len, 0, NULL, r[i].r_end == NULL) == -1)
			goto fail;
		if (r[i].r_end == NULL)
			continue;
		if (inet_pton(af, r[i].r_end, z) != 1)
			goto fail;
		if (nc_elem_add(s, z, len, NFT_SET_ELEM_INTERVAL_END, NULL, 0)
		    == -1)
			goto fail;
	}
	return nc_model_add(m, NC_OBJ_ELEM, s, "elements of set inet airlock %s",
	    set);
 fail:
	nftnl_set_free(s);
	errno = EINVAL;
	return -1;
}

static int
nc_model_netdev(struct nc_model *m)
{
	const int f = NFPROTO_NETDEV;
	struct nc_rb b;

	if (nc_model_add(m, NC_OBJ_TABLE, nc_table_new(f),
	    "table netdev airlock") == -1 ||
	    NC_SET(m, f, NC_SET_SRC4, NC_ID_NSRC4,
	    NC_CONCAT(NC_TYPE_IFNAME, NC_TYPE_IPADDR), NC_IFNAMSIZ + 4, 0) == -1 ||
	    NC_SET(m, f, NC_SET_MAC, NC_ID_MAC,
	    NC_CONCAT(NC_TYPE_IFNAME, NC_TYPE_ETHERADDR),
	    NC_IFNAMSIZ + NC_ETH_PAD, 0) == -1 ||
	    NC_SET(m, f, NC_SET_PINNED, NC_ID_PINNED, NC_TYPE_IFNAME,
	    NC_IFNAMSIZ, 0) == -1 ||
	    NC_CHAIN(m, f, NC_CHAIN_L2, NULL, 0, 0, 0, NULL,
	    "L2 checks shared by every sandbox device (sandbox_* chains jump "
	    "here)") == -1)
		return -1;

	b = nc_rb_begin(f, NC_CHAIN_L2);
	nc_iif_in(&b, NFT_META_IIFNAME, NC_SET_PINNED, NC_ID_PINNED);
	nc_iiftype_ether(&b);
	nc_iif_concat(&b, NFT_PAYLOAD_LL_HEADER, 6, 6, NC_SET_MAC, NC_ID_MAC, 1);
	nc_counter(&b);
	nc_verdict(&b, NF_DROP, NULL);
	if (nc_rb_end(m, &b, "source MAC is not the sandbox's own") == -1)
		return -1;

	b = nc_rb_begin(f, NC_CHAIN_L2);
	nc_iif_in(&b, NFT_META_IIFNAME, NC_SET_PINNED, NC_ID_PINNED);
	nc_ethertype_is(&b, 0x0806);
	nc_iif_concat(&b, NFT_PAYLOAD_NETWORK_HEADER, 8, 6, NC_SET_MAC,
	    NC_ID_MAC, 1);
	nc_counter(&b);
	nc_verdict(&b, NF_DROP, NULL);
	if (nc_rb_end(m, &b, "ARP sender MAC is not the sandbox's own") == -1)
		return -1;

	b = nc_rb_begin(f, NC_CHAIN_L2);
	nc_ethertype_is(&b, 0x0800);
	nc_iif_concat(&b, NFT_PAYLOAD_NETWORK_HEADER, 12, 4, NC_SET_SRC4,
	    NC_ID_NSRC4, 0);
	nc_verdict(&b, NF_ACCEPT, NULL);
	if (nc_rb_end(m, &b, "IPv4 from the sandbox's own address") == -1)
		return -1;

	b = nc_rb_begin(f, NC_CHAIN_L2);
	nc_ethertype_is(&b, 0x0806);
	{
		/* arp htype 1 ptype ip (0x0800), hlen 6 plen 4 */
		static const uint8_t htp[4] = { 0x00, 0x01, 0x08, 0x00 };
		static const uint8_t hp[2] = { 6, 4 };

		nc_payload(&b, NFT_PAYLOAD_NETWORK_HEADER, 0, 4, NFT_REG_1);
		nc_cmp(&b, NFT_REG_1, htp, sizeof(htp));
		nc_payload(&b, NFT_PAYLOAD_NETWORK_HEADER, 4, 2, NFT_REG_1);
		nc_cmp(&b, NFT_REG_1, hp, sizeof(hp));
	}
	nc_iif_concat(&b, NFT_PAYLOAD_NETWORK_HEADER, 14, 4, NC_SET_SRC4,
	    NC_ID_NSRC4, 0);
	nc_verdict(&b, NF_ACCEPT, NULL);
	if (nc_rb_end(m, &b, "ARP only for the sandbox's own address") == -1)
		return -1;

	b = nc_rb_begin(f, NC_CHAIN_L2);
	nc_counter(&b);
	nc_verdict(&b, NF_DROP, NULL);
	return nc_rb_end(m, &b,
	    "anything else: IPv6, other ethertypes, spoofed sources");
}

/* "iifname @sandbox_ifaces jump CHAIN" */
static int
nc_dispatch(struct nc_model *m, const char *from, const char *to)
{
	struct nc_rb b = nc_rb_begin(NFPROTO_INET, from);

	nc_iif_in(&b, NFT_META_IIFNAME, NC_SET_IFACES, NC_ID_IFACES);
	nc_verdict(&b, NFT_JUMP, to);
	return nc_rb_end(m, &b, "packets from sandbox interfaces");
}

static int
nc_final_drop(struct nc_model *m, const char *chain, const char *comment)
{
	struct nc_rb b = nc_rb_begin(NFPROTO_INET, chain);

	nc_counter(&b);
	nc_verdict(&b, NF_DROP, NULL);
	return nc_rb_end(m, &b, comment);
}

static int
nc_model_inet(struct nc_model *m, const struct netctl_params *p)
{
	const int f = NFPROTO_INET;
	struct nc_rb b;
	uint32_t uid = (uint32_t)p->np_airlockd_uid;
	uint32_t local = RTN_LOCAL;

	if (nc_model_add(m, NC_OBJ_TABLE, nc_table_new(f),
	    "table inet airlock") == -1 ||
	    NC_SET(m, f, NC_SET_IFACES, NC_ID_IFACES, NC_TYPE_IFNAME,
	    NC_IFNAMSIZ, 0) == -1 ||
	    NC_SET(m, f, NC_SET_SRC4, NC_ID_SRC4,
	    NC_CONCAT(NC_TYPE_IFNAME, NC_TYPE_IPADDR), NC_IFNAMSIZ + 4, 0) == -1 ||
	    NC_SET(m, f, NC_SET_HOST4, NC_ID_HOST4,
	    NC_CONCAT(NC_TYPE_IFNAME, NC_TYPE_IPADDR), NC_IFNAMSIZ + 4, 0) == -1 ||
	    NC_SET(m, f, NC_SET_FLOOR4, NC_ID_FLOOR4, NC_TYPE_IPADDR, 4,
	    NFT_SET_INTERVAL) == -1 ||
	    NC_SET(m, f, NC_SET_FLOOR6, NC_ID_FLOOR6, NC_TYPE_IP6ADDR, 16,
	    NFT_SET_INTERVAL) == -1 ||
	    nc_model_floor(m, NC_SET_FLOOR4, AF_INET, nc_floor4,
	    sizeof(nc_floor4) / sizeof(nc_floor4[0])) == -1 ||
	    nc_model_floor(m, NC_SET_FLOOR6, AF_INET6, nc_floor6,
	    sizeof(nc_floor6) / sizeof(nc_floor6[0])) == -1)
		return -1;

	if (NC_CHAIN(m, f, "prerouting", "filter", NF_INET_PRE_ROUTING,
	    NF_IP_PRI_RAW, NF_ACCEPT, NULL,
	    "before conntrack and nat; the host's own traffic passes") == -1 ||
	    NC_CHAIN(m, f, "sandbox_pre", NULL, 0, 0, 0, NULL,
	    "what a sandbox may send at all") == -1 ||
	    NC_CHAIN(m, f, "prerouting_nat", "nat", NF_INET_PRE_ROUTING,
	    NF_IP_PRI_NAT_DST, NF_ACCEPT, NULL, NULL) == -1 ||
	    NC_CHAIN(m, f, "sandbox_nat", NULL, 0, 0, 0, NULL,
	    "TCP to the proxy, DNS to the DNS responder") == -1 ||
	    NC_CHAIN(m, f, "input", "filter", NF_INET_LOCAL_IN,
	    NF_IP_PRI_FILTER, NF_ACCEPT, NULL, NULL) == -1 ||
	    NC_CHAIN(m, f, "sandbox_in", NULL, 0, 0, 0, NULL,
	    "what a sandbox may reach on the host, after nat") == -1 ||
	    NC_CHAIN(m, f, "forward", "filter", NF_INET_FORWARD,
	    NF_IP_PRI_FILTER, NF_ACCEPT, NULL,
	    "the host routes no packet of a sandbox") == -1 ||
	    NC_CHAIN(m, f, "output", "filter", NF_INET_LOCAL_OUT,
	    NF_IP_PRI_FILTER, NF_ACCEPT, NULL, NULL) == -1 ||
	    NC_CHAIN(m, f, "airlockd_out", NULL, 0, 0, 0, NULL,
	    "airlockd's upstream connections never reach the floor") == -1)
		return -1;

	/* prerouting -> sandbox_pre */
	if (nc_dispatch(m, "prerouting", "sandbox_pre") == -1)
		return -1;
	b = nc_rb_begin(f, "sandbox_pre");
	nc_meta_is(&b, NFT_META_NFPROTO, NFPROTO_IPV6);
	nc_counter(&b);
	nc_verdict(&b, NF_DROP, NULL);
	if (nc_rb_end(m, &b, "no IPv6") == -1)
		return -1;
	b = nc_rb_begin(f, "sandbox_pre");
	nc_meta_is(&b, NFT_META_NFPROTO, NFPROTO_IPV4);
	nc_iif_concat(&b, NFT_PAYLOAD_NETWORK_HEADER, 12, 4, NC_SET_SRC4,
	    NC_ID_SRC4, 1);
	nc_counter(&b);
	nc_verdict(&b, NF_DROP, NULL);
	if (nc_rb_end(m, &b, "source is not the sandbox's own address") == -1)
		return -1;
	b = nc_rb_begin(f, "sandbox_pre");
	nc_meta_is(&b, NFT_META_L4PROTO, IPPROTO_TCP);
	nc_verdict(&b, NF_ACCEPT, NULL);
	if (nc_rb_end(m, &b, "TCP: redirected to the proxy") == -1)
		return -1;
	b = nc_rb_begin(f, "sandbox_pre");
	nc_meta_is(&b, NFT_META_L4PROTO, IPPROTO_UDP);
	nc_dport_is(&b, 53);
	nc_verdict(&b, NF_ACCEPT, NULL);
	if (nc_rb_end(m, &b, "DNS: redirected to the DNS responder") == -1)
		return -1;
	b = nc_rb_begin(f, "sandbox_pre");
	nc_icmp_echo(&b);
	nc_iif_concat(&b, NFT_PAYLOAD_NETWORK_HEADER, 16, 4, NC_SET_HOST4,
	    NC_ID_HOST4, 0);
	nc_verdict(&b, NF_ACCEPT, NULL);
	if (nc_rb_end(m, &b, "ping to the sandbox's host address") == -1)
		return -1;
	if (nc_final_drop(m, "sandbox_pre",
	    "anything else: other UDP (QUIC too), ICMP, other protocols") == -1)
		return -1;

	/* prerouting_nat -> sandbox_nat */
	if (nc_dispatch(m, "prerouting_nat", "sandbox_nat") == -1)
		return -1;
	b = nc_rb_begin(f, "sandbox_nat");
	nc_meta_is(&b, NFT_META_L4PROTO, IPPROTO_UDP);
	nc_dport_is(&b, 53);
	nc_redirect(&b, p->np_dns_port);
	if (nc_rb_end(m, &b, "DNS to airlockd's DNS responder") == -1)
		return -1;
	b = nc_rb_begin(f, "sandbox_nat");
	nc_meta_is(&b, NFT_META_L4PROTO, IPPROTO_TCP);
	nc_dport_is(&b, 53);
	nc_redirect(&b, p->np_dns_port);
	if (nc_rb_end(m, &b, "DNS over TCP to airlockd's DNS responder") == -1)
		return -1;
	b = nc_rb_begin(f, "sandbox_nat");
	nc_meta_is(&b, NFT_META_L4PROTO, IPPROTO_TCP);
	nc_redirect(&b, p->np_proxy_port);
	if (nc_rb_end(m, &b, "TCP to any address and port: to the proxy") == -1)
		return -1;
	b = nc_rb_begin(f, "sandbox_nat");
	nc_icmp_echo(&b);
	nc_verdict(&b, NF_ACCEPT, NULL);
	if (nc_rb_end(m, &b, "ping to the host address (checked in "
	    "sandbox_pre)") == -1)
		return -1;
	if (nc_final_drop(m, "sandbox_nat", "nothing else") == -1)
		return -1;

	/* input -> sandbox_in */
	if (nc_dispatch(m, "input", "sandbox_in") == -1)
		return -1;
	b = nc_rb_begin(f, "sandbox_in");
	nc_meta_is(&b, NFT_META_NFPROTO, NFPROTO_IPV6);
	nc_counter(&b);
	nc_verdict(&b, NF_DROP, NULL);
	if (nc_rb_end(m, &b, "no IPv6") == -1)
		return -1;
	b = nc_rb_begin(f, "sandbox_in");
	nc_meta_is(&b, NFT_META_NFPROTO, NFPROTO_IPV4);
	nc_iif_concat(&b, NFT_PAYLOAD_NETWORK_HEADER, 16, 4, NC_SET_HOST4,
	    NC_ID_HOST4, 1);
	nc_counter(&b);
	nc_verdict(&b, NF_DROP, NULL);
	if (nc_rb_end(m, &b, "only the host address on the sandbox's own "
	    "interface") == -1)
		return -1;
	b = nc_rb_begin(f, "sandbox_in");
	nc_meta_is(&b, NFT_META_L4PROTO, IPPROTO_TCP);
	nc_dport_is(&b, p->np_proxy_port);
	nc_verdict(&b, NF_ACCEPT, NULL);
	if (nc_rb_end(m, &b, "the proxy") == -1)
		return -1;
	b = nc_rb_begin(f, "sandbox_in");
	nc_meta_is(&b, NFT_META_L4PROTO, IPPROTO_UDP);
	nc_dport_is(&b, p->np_dns_port);
	nc_verdict(&b, NF_ACCEPT, NULL);
	if (nc_rb_end(m, &b, "the DNS responder") == -1)
		return -1;
	b = nc_rb_begin(f, "sandbox_in");
	nc_meta_is(&b, NFT_META_L4PROTO, IPPROTO_TCP);
	nc_dport_is(&b, p->np_dns_port);
	nc_verdict(&b, NF_ACCEPT, NULL);
	if (nc_rb_end(m, &b, "the DNS responder over TCP") == -1)
		return -1;
	b = nc_rb_begin(f, "sandbox_in");
	nc_icmp_echo(&b);
	nc_verdict(&b, NF_ACCEPT, NULL);
	if (nc_rb_end(m, &b, "ping") == -1)
		return -1;
	if (nc_final_drop(m, "sandbox_in",
	    "any other port of the host (ssh too)") == -1)
		return -1;

	/* forward */
	b = nc_rb_begin(f, "forward");
	nc_iif_in(&b, NFT_META_IIFNAME, NC_SET_IFACES, NC_ID_IFACES);
	nc_counter(&b);
	nc_verdict(&b, NF_DROP, NULL);
	if (nc_rb_end(m, &b, "nothing from a sandbox is routed") == -1)
		return -1;
	b = nc_rb_begin(f, "forward");
	nc_iif_in(&b, NFT_META_OIFNAME, NC_SET_IFACES, NC_ID_IFACES);
	nc_counter(&b);
	nc_verdict(&b, NF_DROP, NULL);
	if (nc_rb_end(m, &b, "nothing is routed into a sandbox") == -1)
		return -1;

	/* output -> airlockd_out */
	b = nc_rb_begin(f, "output");
	nc_meta(&b, NFT_META_SKUID, NFT_REG_1);
	nc_cmp(&b, NFT_REG_1, &uid, sizeof(uid));
	nc_verdict(&b, NFT_JUMP, "airlockd_out");
	if (nc_rb_end(m, &b, "sockets of airlockd's user") == -1)
		return -1;
	/*
	 * metrics_listen (a loopback address only): the answers of its listener to a
	 * scraper on the host.  Established connections only, and only from that
	 * port: airlockd opens none of its own from it (its filter has no bind).
	 */
	if (p->np_metrics_port != 0) {
		b = nc_rb_begin(f, "airlockd_out");
		nc_meta_is(&b, NFT_META_L4PROTO, IPPROTO_TCP);
		nc_sport_is(&b, p->np_metrics_port);
		nc_ct_established(&b);
		nc_verdict(&b, NF_ACCEPT, NULL);
		if (nc_rb_end(m, &b, "the metrics listener's answers") == -1)
			return -1;
	}
	b = nc_rb_begin(f, "airlockd_out");
	nc_meta_is(&b, NFT_META_NFPROTO, NFPROTO_IPV4);
	nc_payload(&b, NFT_PAYLOAD_NETWORK_HEADER, 16, 1, NFT_REG_1);
	nc_cmp_u8(&b, 127);
	nc_meta_is(&b, NFT_META_L4PROTO, IPPROTO_UDP);
	nc_dport_is(&b, 53);
	nc_verdict(&b, NF_ACCEPT, NULL);
	if (nc_rb_end(m, &b, "the host's stub resolver") == -1)
		return -1;
	b = nc_rb_begin(f, "airlockd_out");
	nc_meta_is(&b, NFT_META_NFPROTO, NFPROTO_IPV4);
	nc_payload(&b, NFT_PAYLOAD_NETWORK_HEADER, 16, 1, NFT_REG_1);
	nc_cmp_u8(&b, 127);
	nc_meta_is(&b, NFT_META_L4PROTO, IPPROTO_TCP);
	nc_dport_is(&b, 53);
	nc_verdict(&b, NF_ACCEPT, NULL);
	if (nc_rb_end(m, &b, "the host's stub resolver over TCP") == -1)
		return -1;
	b = nc_rb_begin(f, "airlockd_out");
	nc_meta_is(&b, NFT_META_NFPROTO, NFPROTO_IPV4);
	nc_payload(&b, NFT_PAYLOAD_NETWORK_HEADER, 16, 4, NFT_REG_1);
	nc_lookup(&b, NFT_REG_1, NC_SET_FLOOR4, NC_ID_FLOOR4, 0);
	nc_counter(&b);
	nc_verdict(&b, NF_DROP, NULL);
	if (nc_rb_end(m, &b, "the IPv4 floor") == -1)
		return -1;
	b = nc_rb_begin(f, "airlockd_out");
	nc_meta_is(&b, NFT_META_NFPROTO, NFPROTO_IPV6);
	nc_payload(&b, NFT_PAYLOAD_NETWORK_HEADER, 24, 16, NFT_REG_1);
	nc_lookup(&b, NFT_REG_1, NC_SET_FLOOR6, NC_ID_FLOOR6, 0);
	nc_counter(&b);
	nc_verdict(&b, NF_DROP, NULL);
	if (nc_rb_end(m, &b, "the IPv6 floor") == -1)
		return -1;
	b = nc_rb_begin(f, "airlockd_out");
	{
		struct nftnl_expr *e = nftnl_expr_alloc("fib");

		if (e != NULL) {
			nftnl_expr_set_u32(e, NFTNL_EXPR_FIB_FLAGS,
			    NFTA_FIB_F_DADDR);
			nftnl_expr_set_u32(e, NFTNL_EXPR_FIB_RESULT,
			    NFT_FIB_RESULT_ADDRTYPE);
			nftnl_expr_set_u32(e, NFTNL_EXPR_FIB_DREG, NFT_REG_1);
		}
		nc_rb_expr(&b, e);
	}
	nc_cmp(&b, NFT_REG_1, &local, sizeof(local));
	nc_counter(&b);
	nc_verdict(&b, NF_DROP, NULL);
	return nc_rb_end(m, &b, "the host's own addresses");
}

int
nc_model_base(struct nc_model *m, const struct netctl_params *p)
{
	if (nc_model_inet(m, p) == -1 || nc_model_netdev(m) == -1)
		return -1;
	return 0;
}

void
nc_dev_chain_name(const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s", NC_CHAIN_DEV_PREFIX, name);
}

/* One element keyed by ifname (. field): an nftnl_set with that element. */
static int
nc_model_elem(struct nc_model *m, int family, const char *set,
    const struct sandbox *sb, const void *field, size_t flen, size_t padded)
{
	unsigned char key[NC_IFNAMSIZ + 16];
	char comment[64], text[96];
	struct nftnl_set *s;

	memset(key, 0, sizeof(key));
	memcpy(key, sb->sb_iface, strnlen(sb->sb_iface, NC_IFNAMSIZ - 1));
	if (field != NULL)
		memcpy(key + NC_IFNAMSIZ, field, flen);
	snprintf(comment, sizeof(comment), "sandbox %s", sb->sb_name);
	if ((s = nc_elemset_new(family, set)) == NULL)
		return -1;
	if (nc_elem_add(s, key, NC_IFNAMSIZ + padded, 0, comment, 0) == -1) {
		nftnl_set_free(s);
		return -1;
	}
	nc_elem_fmt(set, key, NC_IFNAMSIZ + padded, text, sizeof(text));
	return nc_model_add(m, NC_OBJ_ELEM, s, "element %s in set %s airlock %s",
	    text, nc_family_str(family), set);
}

/* "aa:bb:cc:dd:ee:ff" -> 6 bytes. */
static int
nc_mac_parse(const char *s, uint8_t mac[6])
{
	unsigned int v[6];
	char end;
	int i;

	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &v[0], &v[1], &v[2], &v[3],
	    &v[4], &v[5], &end) != 6)
		return -1;
	for (i = 0; i < 6; i++)
		mac[i] = (uint8_t)v[i];
	return 0;
}

int
nc_model_sandbox(struct nc_model *m, const struct sandbox *sb)
{
	char chain[64], comment[96];
	uint8_t mac[NC_ETH_PAD];
	struct nc_rb b;

	memset(mac, 0, sizeof(mac));
	if (sb->sb_mac[0] != '\0' && nc_mac_parse(sb->sb_mac, mac) == -1) {
		errno = EINVAL;
		return -1;
	}
	if (nc_model_elem(m, NFPROTO_INET, NC_SET_IFACES, sb, NULL, 0, 0) == -1 ||
	    nc_model_elem(m, NFPROTO_INET, NC_SET_SRC4, sb,
	    &sb->sb_guest_ip.na_u.v4, 4, 4) == -1 ||
	    nc_model_elem(m, NFPROTO_INET, NC_SET_HOST4, sb,
	    &sb->sb_host_ip.na_u.v4, 4, 4) == -1 ||
	    nc_model_elem(m, NFPROTO_NETDEV, NC_SET_SRC4, sb,
	    &sb->sb_guest_ip.na_u.v4, 4, 4) == -1)
		return -1;
	if (sb->sb_mac[0] != '\0' &&
	    (nc_model_elem(m, NFPROTO_NETDEV, NC_SET_PINNED, sb, NULL, 0, 0)
	    == -1 ||
	    nc_model_elem(m, NFPROTO_NETDEV, NC_SET_MAC, sb, mac, 6,
	    NC_ETH_PAD) == -1))
		return -1;
	nc_dev_chain_name(sb->sb_name, chain, sizeof(chain));
	snprintf(comment, sizeof(comment), "sandbox %s: every frame its "
	    "device sends", sb->sb_name);
	if (NC_CHAIN(m, NFPROTO_NETDEV, chain, "filter", NF_NETDEV_INGRESS,
	    -500, NF_DROP, sb->sb_iface, comment) == -1)
		return -1;
	b = nc_rb_begin(NFPROTO_NETDEV, chain);
	nc_verdict(&b, NFT_JUMP, NC_CHAIN_L2);
	return nc_rb_end(m, &b, NULL);
}

void
nc_elem_fmt(const char *set, const void *key, size_t keylen, char *buf,
    size_t len)
{
	const unsigned char *k = key;
	char ifname[NC_IFNAMSIZ + 1], a[INET6_ADDRSTRLEN];

	if (strcmp(set, NC_SET_FLOOR4) == 0 && keylen == 4) {
		inet_ntop(AF_INET, k, a, sizeof(a));
		snprintf(buf, len, "%s", a);
		return;
	}
	if (strcmp(set, NC_SET_FLOOR6) == 0 && keylen == 16) {
		inet_ntop(AF_INET6, k, a, sizeof(a));
		snprintf(buf, len, "%s", a);
		return;
	}
	if (keylen < NC_IFNAMSIZ) {
		snprintf(buf, len, "(%zu-byte key)", keylen);
		return;
	}
	memcpy(ifname, k, NC_IFNAMSIZ);
	ifname[NC_IFNAMSIZ] = '\0';
	if (keylen == NC_IFNAMSIZ)
		snprintf(buf, len, "%s", ifname);
	else if (keylen == NC_IFNAMSIZ + 4) {
		inet_ntop(AF_INET, k + NC_IFNAMSIZ, a, sizeof(a));
		snprintf(buf, len, "%s . %s", ifname, a);
	} else if (keylen == NC_IFNAMSIZ + NC_ETH_PAD) {
		k += NC_IFNAMSIZ;
		snprintf(buf, len, "%s . %02x:%02x:%02x:%02x:%02x:%02x", ifname,
		    k[0], k[1], k[2], k[3], k[4], k[5]);
	} else
		snprintf(buf, len, "%s . (%zu bytes)", ifname,
		    keylen - NC_IFNAMSIZ);
}

struct nc_digest {
	char	*buf;
	size_t	 len, off;
};

static int
nc_digest_expr(struct nftnl_expr *e, void *arg)
{
	struct nc_digest *d = arg;
	const char *name = nftnl_expr_get_str(e, NFTNL_EXPR_NAME);
	int n;

	if (d->off >= d->len)
		return 0;
	/* Counter values change with traffic: only the counter's presence counts. */
	if (name != NULL && strcmp(name, "counter") == 0)
		n = snprintf(d->buf + d->off, d->len - d->off, "[counter]");
	else {
		n = snprintf(d->buf + d->off, d->len - d->off, "[%s ",
		    name ? name : "?");
		if (n > 0 && (size_t)n < d->len - d->off) {
			d->off += (size_t)n;
			n = nftnl_expr_snprintf(d->buf + d->off, d->len - d->off,
			    e, NFTNL_OUTPUT_DEFAULT, 0);
			if (n > 0 && (size_t)n < d->len - d->off) {
				d->off += (size_t)n;
				n = snprintf(d->buf + d->off, d->len - d->off,
				    "]");
			}
		}
	}
	if (n > 0)
		d->off += (size_t)n;
	if (d->off > d->len)
		d->off = d->len;
	return 0;
}

int
nc_rule_digest(const struct nftnl_rule *r, char *buf, size_t len)
{
	struct nc_digest d = { buf, len, 0 };
	const void *ud;
	uint32_t udlen = 0;

	if (len == 0)
		return -1;
	buf[0] = '\0';
	/* nftnl_expr_foreach() takes a non-const rule but does not modify it. */
	nftnl_expr_foreach((struct nftnl_rule *)(uintptr_t)r, nc_digest_expr, &d);
	if (nftnl_rule_is_set(r, NFTNL_RULE_USERDATA) &&
	    (ud = nftnl_rule_get_data(r, NFTNL_RULE_USERDATA, &udlen)) != NULL &&
	    d.off < len) {
		/* The comment: TLV type 0, length, NUL-terminated text. */
		const unsigned char *u = ud;

		if (udlen > 2 && u[0] == 0 && (uint32_t)u[1] + 2 <= udlen)
			snprintf(buf + d.off, len - d.off, " comment \"%.*s\"",
			    (int)u[1], (const char *)u + 2);
	}
	return 0;
}
