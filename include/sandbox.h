/*
 * include/sandbox.h: the sandbox record kept in the state directory
 * (STATE_DIR/sandboxes/NAME.json, 0600), the one truth that netctl, airlockd and vmm
 * share about a sandbox.  Implemented in lib/sandbox.c.
 */
#ifndef AIRLOCK_SANDBOX_H
#define AIRLOCK_SANDBOX_H

#include <limits.h>
#include <net/if.h>
#include <stddef.h>
#include <stdint.h>

#include "netaddr.h"

#define SANDBOX_NAME_MAX	11	/* "al-" + name must fit IFNAMSIZ - 1 */

enum sandbox_kind {
	SANDBOX_KIND_TAP = 0,	/* airlock sandbox create: airlock made the tap */
	SANDBOX_KIND_ATTACH,	/* airlock net attach: someone else's interface */
};

struct sandbox {
	char		sb_name[SANDBOX_NAME_MAX + 1];
	enum sandbox_kind sb_kind;
	char		sb_iface[IF_NAMESIZE];
	struct netaddr	sb_host_ip;
	struct netaddr	sb_guest_ip;
	unsigned int	sb_prefix;		/* 30 for pool allocations */
	char		sb_mac[18];		/* "" when not pinned */
	char		sb_policy[PATH_MAX];	/* absolute path of the policy file */
	char		sb_policy_hash[65];
	long long	sb_created;		/* unix seconds */
};

/*
 * Sandbox names: 1..SANDBOX_NAME_MAX of [a-z0-9-], starting with a letter or digit.
 * Returns 1 if valid.
 */
int	sandbox_name_is_valid(const char *name);

/* Reads STATE_DIR/sandboxes/NAME.json.  Returns 0, or -1 (errno ENOENT if absent). */
int	sandbox_load(const char *state_dir, const char *name, struct sandbox *sb);
/* Writes it atomically (temp file + rename), 0600.  Returns 0 or -1. */
int	sandbox_save(const char *state_dir, const struct sandbox *sb);
/*
 * STATE_DIR/approvals/NAME.json, the sandbox's approvals file (`airlock approve
 * ... --always`): an ordinary policy file, merged after the sandbox's policy as an
 * extra layer (policy_load_layers()).  0, or -1 (name invalid or path too long).
 */
int	sandbox_approvals_path(const char *state_dir, const char *name, char *buf,
	    size_t len);
/*
 * The id of an approval of name (normalised) on port (0: not known, a DNS query)
 * for sandbox: SANDBOX_APPROVAL_ID_LEN hex digits of a SipHash under a fixed key,
 * the same in airlockd and the CLI and across restarts (a name, not a secret).
 */
#define SANDBOX_APPROVAL_ID_LEN	10
void	sandbox_approval_id(const char *sandbox, const char *name, uint16_t port,
	    char id[SANDBOX_APPROVAL_ID_LEN + 1]);
/* Removes the record.  Returns 0 or -1. */
int	sandbox_remove(const char *state_dir, const char *name);
/*
 * Every record, sorted by name.  Returns the count and *out (free with free()), or -1.
 */
int	sandbox_list(const char *state_dir, struct sandbox **out);

#endif
