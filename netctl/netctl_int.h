/*
 * netctl/netctl_int.h: private to netctl/, grouped by the file that defines each function.
 */
#ifndef AIRLOCK_NETCTL_INT_H
#define AIRLOCK_NETCTL_INT_H

#include <stddef.h>
#include <stdint.h>

#include "netctl.h"	/* the public API (include/netctl.h) */

struct mnl_socket;
struct nftnl_chain;
struct nftnl_rule;
struct nftnl_set;
struct nftnl_table;

/* Set names (both tables use the same names for the same meaning). */
#define NC_SET_IFACES	"sandbox_ifaces"	/* inet: ifname */
#define NC_SET_SRC4	"sandbox_src4"		/* inet, netdev: ifname . ipv4_addr */
#define NC_SET_HOST4	"sandbox_host4"		/* inet: ifname . ipv4_addr */
#define NC_SET_MAC	"sandbox_mac"		/* netdev: ifname . ether_addr */
#define NC_SET_PINNED	"mac_pinned"		/* netdev: ifname */
#define NC_SET_FLOOR4	"floor4"		/* inet: ipv4_addr interval */
#define NC_SET_FLOOR6	"floor6"		/* inet: ipv6_addr interval */
#define NC_CHAIN_L2	"l2_check"		/* netdev: shared L2 checks */
#define NC_CHAIN_DEV_PREFIX "sandbox_"		/* netdev: sandbox_NAME, per device */

/* One kernel object that airlock installs: the unit of a batch and of a drift check. */
enum nc_obj_type {
	NC_OBJ_TABLE = 0,
	NC_OBJ_CHAIN,
	NC_OBJ_SET,
	NC_OBJ_RULE,
	NC_OBJ_ELEM,		/* o is an nftnl_set carrying exactly one element */
};

struct nc_obj {
	enum nc_obj_type no_type;
	void		*no_o;		/* nftnl_table/chain/set/rule, owned */
	char		 no_desc[160];	/* "chain inet airlock sandbox_pre" */
};

struct nc_model {
	struct nc_obj	*nm_v;
	size_t		 nm_n, nm_cap;
};

/* netctl_model.c: what airlock installs, as libnftnl objects. */
void	nc_model_init(struct nc_model *m);
void	nc_model_free(struct nc_model *m);
/* Both tables with chains, sets, floor elements and rules. Returns 0 or -1 (ENOMEM). */
int	nc_model_base(struct nc_model *m, const struct netctl_params *p);
/* One sandbox's elements, netdev chain and its rule. Returns 0 or -1. */
int	nc_model_sandbox(struct nc_model *m, const struct sandbox *sb);
/* Rule text for comparisons: expressions without counter values, plus the comment. */
int	nc_rule_digest(const struct nftnl_rule *r, char *buf, size_t len);
/* "al-x . 10.0.0.2" from an element key of a set of ours. */
void	nc_elem_fmt(const char *set, const void *key, size_t keylen, char *buf,
	    size_t len);
/* netdev chain name of a sandbox: "sandbox_NAME". */
void	nc_dev_chain_name(const char *name, char *buf, size_t len);

/* netctl_nl.c: the netlink socket, atomic batches and dumps. */
struct nc_nl {
	struct mnl_socket *nn_sock;
	uint32_t	 nn_portid;
	uint32_t	 nn_seq;
};

int	nc_nl_open(struct nc_nl *nl, char *err, size_t errlen);
void	nc_nl_close(struct nc_nl *nl);
/* The ruleset generation id (NFT_MSG_GETGEN). Returns 0 or -1. */
int	nc_nl_genid(struct nc_nl *nl, uint32_t *genid, char *err, size_t errlen);

enum nc_op {
	NC_OP_ADD = 0,
	NC_OP_DEL,
	NC_OP_FLUSH,		/* chain: delete all its rules */
};

struct nc_batch_item {
	enum nc_op	 bi_op;
	const struct nc_obj *bi_obj;
};

/*
 * Sends items as one batch (NFNL_MSG_BATCH_BEGIN..END, NLM_F_ACK on each message,
 * NLM_F_EXCL on additions) bound to genid when genid_set (the kernel refuses it
 * with ERESTART if the ruleset changed since), and reads every ack.  On error err
 * names the item the kernel rejected: "adding chain inet airlock x: File exists".
 * Returns 0, or -1 with errno from the first rejected item.
 */
int	nc_nl_batch(struct nc_nl *nl, const struct nc_batch_item *items, size_t n,
	    int genid_set, uint32_t genid, char *err, size_t errlen);

/* What a dump of our two tables holds (owned lists). */
struct nc_kernel {
	int		 nk_has_table[2];	/* [0] inet, [1] netdev */
	struct nftnl_chain **nk_chains;
	size_t		 nk_nchains;
	struct nftnl_rule **nk_rules;
	size_t		 nk_nrules;
	struct nftnl_set **nk_sets;		/* with their elements */
	size_t		 nk_nsets;
	uint32_t	 nk_genid;
};

/* Reads both tables (retrying while the generation moves). Returns 0 or -1. */
int	nc_kernel_read(struct nc_nl *nl, struct nc_kernel *k, char *err,
	    size_t errlen);
void	nc_kernel_free(struct nc_kernel *k);

/* netctl_status.c */
/* Drift of the base only (sandbox chains and elements ignored). Returns 0 or -1. */
int	nc_base_drift(const struct nc_kernel *k, const struct nc_model *base,
	    struct netctl_status *st);

/* netctl_link.c */
int	nc_link_exists(const char *ifname);
struct nlmsghdr;
/* One rtnetlink request with an ack.  Returns 0 or -1 with errno. */
int	nc_rtnl_talk(struct nlmsghdr *nlh);
/* First IPv4 address and prefix on ifname. Returns 0, or -1 (errno ENOENT). */
int	nc_link_ipv4(const char *ifname, const struct netaddr *want,
	    struct netaddr *addr, unsigned int *prefix);

/* netctl_sandbox.c */
/* Takes the state directory's lock (blocking). Returns the fd (close to release). */
int	nc_lock(const char *state_dir, char *err, size_t errlen);

/* netctl_status.c: every difference between the kernel and models[0..n) (base first). */
int	nc_full_drift(const struct nc_kernel *k, const struct nc_model *models,
	    size_t nmodels, struct netctl_status *st);

/* netctl_err.c */
/* "operation not permitted" etc. with a hint for EPERM. */
void	nc_err_errno(char *err, size_t errlen, int e, const char *fmt, ...)
	    __attribute__((format(printf, 4, 5)));

#endif
