/*
 * include/netctl.h: sandbox interfaces and the nftables rules that force a sandbox's
 * traffic into airlockd.  Implemented in netctl/.
 *
 * Everything goes through libnftnl + libmnl (no nft binary, no libnftables) and every
 * change is one atomic netlink batch.  airlock owns exactly two tables, both named
 * "airlock": "inet airlock" (L3/L4: anti-spoofing, redirect to the proxy and DNS ports,
 * input/forward drops, airlockd's output floor) and "netdev airlock" (L2: one ingress
 * chain per sandbox device for source MAC/IP and ARP checks, which the inet family
 * cannot see).  No other table is ever read for writing or touched.
 *
 * Every function that can fail takes err/errlen and writes one line there (no
 * "airlock: " prefix, no newline), naming the object that failed, e.g.
 * "adding element al-x . 10.233.0.2 to set inet airlock sandbox_src4: File exists".
 * All need CAP_NET_ADMIN; without it they fail with a message saying so.
 */
#ifndef AIRLOCK_NETCTL_H
#define AIRLOCK_NETCTL_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "sandbox.h"

#define NETCTL_TABLE		"airlock"
#define NETCTL_TAP_PREFIX	"al-"

/* What the base ruleset depends on, taken from the configuration. */
struct netctl_params {
	uint16_t	np_proxy_port;
	uint16_t	np_dns_port;
	uid_t		np_airlockd_uid;	/* the output floor rule matches it */
	uint16_t	np_metrics_port;	/* metrics_listen's port, or 0 */
};

/*
 * Fills *p from the configuration.  The user (config "user", a name or a decimal uid)
 * must exist: the floor rule is part of the enforcement, so a missing user is an
 * error (fail closed), never a silently skipped rule.  Returns 0 or -1.
 */
int	netctl_params_from_config(const struct airlock_config *cfg,
	    struct netctl_params *p, char *err, size_t errlen);

/*
 * Kernel side only (no state directory).
 *
 * netctl_base_ensure(): creates both tables with their chains, sets and rules in one
 * batch when they are absent; when present, checks that they are exactly what these
 * parameters produce and fails ("drift") otherwise.  Returns 0 or -1.
 *
 * netctl_sandbox_install(): ensures the base, then adds the sandbox (set elements and
 * its netdev ingress chain) in one batch.  Returns 0 or -1; on -1 nothing changed.
 *
 * netctl_sandbox_uninstall(): removes whatever of the sandbox's objects exist, in one
 * batch; the base tables stay.  Returns 0 or -1.
 */
int	netctl_base_ensure(const struct netctl_params *p, char *err, size_t errlen);
int	netctl_sandbox_install(const struct netctl_params *p,
	    const struct sandbox *sb, char *err, size_t errlen);
int	netctl_sandbox_uninstall(const struct sandbox *sb, char *err,
	    size_t errlen);

/*
 * Taps (rtnetlink through libmnl, /dev/net/tun).  netctl_tap_create() makes a
 * persistent tap named ifname (which must not exist), owned by owner (or any user
 * when owner is (uid_t)-1), with "host peer guest/32" on it (the one route it makes
 * is guest/32 through the tap, none broader; host/prefix instead when guest is NULL)
 * and the link up; IPv6 is disabled on it.  Returns 0, or -1 with nothing left
 * behind.  netctl_tap_destroy() deletes it.
 */
int	netctl_tap_create(const char *ifname, uid_t owner,
	    const struct netaddr *host, const struct netaddr *guest,
	    unsigned int prefix, char *err, size_t errlen);
int	netctl_tap_destroy(const char *ifname, char *err, size_t errlen);

/*
 * Per-interface settings that hold without any nftables rule (netctl_harden.c):
 * IPv4 forwarding off and strict rp_filter on the sandbox's interface, IPv6
 * disabled on it, a guest/32 route through it.  netctl_link_harden() applies them
 * (errors name the interface); for an attached interface (SANDBOX_KIND_ATTACH) it
 * first keeps the previous values in STATE_DIR/sandboxes/NAME.link, and
 * netctl_link_restore() puts them back and removes the route if harden added it
 * (IPv6 addresses that disable_ipv6 removed do not come back).  For a tap airlock
 * made, restore does nothing: the tap is deleted.  Both return 0 or -1.
 */
int	netctl_link_harden(const char *state_dir, const struct sandbox *sb,
	    char *err, size_t errlen);
int	netctl_link_restore(const char *state_dir, const struct sandbox *sb,
	    char *err, size_t errlen);

/*
 * Whole operations: kernel and state directory kept consistent (rules are installed
 * before the record is written, and rolled back if the write fails).  Serialised by a
 * lock file in the state directory.
 */
struct netctl_request {
	const char	*nr_name;
	const char	*nr_policy;	/* file; checked with policy_load_file() */
	const char	*nr_owner;	/* create: tap owner (user name or uid), or NULL */
	const char	*nr_iface;	/* attach: existing interface */
	const char	*nr_guest_ip;	/* attach */
	const char	*nr_host_ip;	/* attach: NULL = the interface's IPv4 address */
	const char	*nr_mac;	/* attach: NULL = MAC not pinned */
};

/* airlock sandbox create / net attach.  On success fills *out (may be NULL). */
int	netctl_sandbox_create(const struct airlock_config *cfg,
	    const struct netctl_request *req, struct sandbox *out, char *err,
	    size_t errlen);
int	netctl_sandbox_attach(const struct airlock_config *cfg,
	    const struct netctl_request *req, struct sandbox *out, char *err,
	    size_t errlen);
/*
 * airlock sandbox destroy / net detach: rules, then (for a tap sandbox) the tap, then
 * the record.  kind is the kind the command expects (destroy refuses an attached
 * sandbox and detach a created one, so that neither deletes what the other made).
 */
int	netctl_sandbox_destroy(const struct airlock_config *cfg, const char *name,
	    enum sandbox_kind kind, char *err, size_t errlen);

/*
 * Allocation of a sandbox /30 from pool: the first /30 (network and broadcast
 * addresses unused, as on any /30) holding none of the n addresses in used (every
 * record's host and guest address, and the host's own addresses).  Pure function.
 * Returns 0 with host (.1) and guest (.2) filled, or -1 (errno ENOSPC: pool full,
 * EINVAL: pool not IPv4 or smaller than a /30).
 */
int	netctl_pool_alloc(const struct netaddr_cidr *pool,
	    const struct netaddr *used, size_t n, struct netaddr *host,
	    struct netaddr *guest);

/* Status and drift: the kernel's tables compared with the records. */
struct netctl_sb_status {
	char		ss_name[SANDBOX_NAME_MAX + 1];
	char		ss_iface[IF_NAMESIZE];
	int		ss_iface_exists;
	int		ss_elems_expected;
	int		ss_elems_present;
	int		ss_chain_ok;	/* its netdev ingress chain is as installed */
	int		ss_path_rules;	/* rules on its packet path (TCP to proxy) */
};

struct netctl_status {
	int		st_inet_table;		/* table inet airlock exists */
	int		st_netdev_table;	/* table netdev airlock exists */
	uint32_t	st_genid;		/* ruleset generation that was read */
	int		st_rules;		/* rules in both tables */
	int		st_chains;
	struct netctl_sb_status *st_sb;
	size_t		st_nsb;
	char		**st_drift;		/* one line per difference */
	size_t		st_ndrift;
};

/*
 * Reads both tables and compares them with what the records and the parameters
 * produce.  Returns the status (release with netctl_status_free()), or NULL with err.
 */
struct netctl_status *netctl_status_get(const struct netctl_params *p,
	    const struct sandbox *sbs, size_t nsb, char *err, size_t errlen);
void	netctl_status_free(struct netctl_status *st);

/*
 * The guard (netctl_guard.c): airlockd's root "netwatch" child keeps the tables in
 * place.  netctl_guard_new() opens a NETLINK_NETFILTER socket subscribed to the
 * NFNLGRP_NFTABLES group (every ruleset change of this network namespace); returns
 * it (release with netctl_guard_free()) or NULL with err.  netctl_guard_fd() is the
 * fd to poll; netctl_guard_drain() reads every pending event without blocking and
 * returns how many there were (an overrun counts as one).
 *
 * netctl_guard_check(): under the state directory's lock, compares both tables with
 * the base and every recorded sandbox whose interface exists (none: nothing to
 * guard) and, on any difference, deletes whichever airlock table exists and
 * installs everything again in one batch bound to the generation it read.  Fills *r
 * (nr_drift 0: all was in place).  Returns 0, or -1 with err (reinstall failed).
 */
struct netctl_guard;
struct netctl_guard *netctl_guard_new(char *err, size_t errlen);
void	netctl_guard_free(struct netctl_guard *g);
int	netctl_guard_fd(const struct netctl_guard *g);
int	netctl_guard_drain(struct netctl_guard *g);

struct netctl_restore {
	int		nr_sandboxes;	/* sandboxes guarded */
	int		nr_drift;	/* differences found (0: all in place) */
	char		nr_found[200];	/* the first, "table inet airlock is missing" */
	int		nr_reinstalled;	/* 1: the tables were installed again */
};

int	netctl_guard_check(const struct airlock_config *cfg,
	    struct netctl_restore *r, char *err, size_t errlen);

#endif
