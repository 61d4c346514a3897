/*
 * netctl/netctl_sandbox.c: whole sandbox operations (create, attach, destroy), keeping
 * the kernel and the record in the state directory consistent.
 *
 * Order, and why: checks first (nothing made yet); then the tap (create only); then
 * the rules in one batch; the record last.  A failure at any step undoes the steps
 * before it, so no partial state is left.  The record is written last because it is
 * what airlockd and `sandbox ls` trust: a record always means "rules are installed".
 * Concurrent airlock commands are serialised by an flock on STATE_DIR/sandboxes/.lock
 * (the /30 allocation reads every record, then writes one).
 */
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "netctl_int.h"
#include "policy.h"

/* Takes the state directory's lock. Returns the fd (close to release) or -1. */
int
nc_lock(const char *state_dir, char *err, size_t errlen)
{
	char path[PATH_MAX];
	int fd;

	if (mkdir(state_dir, 0700) == -1 && errno != EEXIST) {
		nc_err_errno(err, errlen, errno, "creating %s", state_dir);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/sandboxes", state_dir);
	if (mkdir(path, 0700) == -1 && errno != EEXIST) {
		nc_err_errno(err, errlen, errno, "creating %s", path);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/sandboxes/.lock", state_dir);
	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) == -1) {
		nc_err_errno(err, errlen, errno, "opening %s", path);
		return -1;
	}
	if (flock(fd, LOCK_EX) == -1) {
		nc_err_errno(err, errlen, errno, "locking %s", path);
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * The checks every new sandbox goes through: privilege (one netlink round trip, so a
 * missing CAP_NET_ADMIN is reported before anything else), name, policy, record.
 */
static int
nc_new_checks(const struct airlock_config *cfg, const struct netctl_request *req,
    struct netctl_params *p, struct sandbox *sb, char *err, size_t errlen)
{
	struct policy_errors errs = { NULL, 0 };
	struct policy *pol;
	struct sandbox old;
	struct nc_nl nl;
	uint32_t gen;
	char line[512];

	if (nc_nl_open(&nl, err, errlen) == -1)
		return -1;
	if (nc_nl_genid(&nl, &gen, err, errlen) == -1) {
		nc_nl_close(&nl);
		return -1;
	}
	nc_nl_close(&nl);
	memset(sb, 0, sizeof(*sb));
	if (!sandbox_name_is_valid(req->nr_name)) {
		snprintf(err, errlen, "invalid sandbox name \"%s\": 1 to %d of "
		    "a-z, 0-9 and '-', not starting with '-'", req->nr_name,
		    SANDBOX_NAME_MAX);
		return -1;
	}
	snprintf(sb->sb_name, sizeof(sb->sb_name), "%s", req->nr_name);
	if (netctl_params_from_config(cfg, p, err, errlen) == -1)
		return -1;
	if (req->nr_policy == NULL) {
		snprintf(err, errlen, "a policy is required (--policy FILE)");
		return -1;
	}
	/*
	 * Checked where airlockd will read it: at its real path, which is what the
	 * record keeps, so that its bases are found from the same folder.
	 */
	if (realpath(req->nr_policy, sb->sb_policy) == NULL) {
		nc_err_errno(err, errlen, errno, "policy %s", req->nr_policy);
		return -1;
	}
	if ((pol = policy_load_file(sb->sb_policy, &errs)) == NULL) {
		if (errs.n > 0) {
			policy_error_fmt(&errs.v[0], line, sizeof(line));
			snprintf(err, errlen, "policy %s: %s%s", req->nr_policy,
			    line, errs.n > 1 ? " (and more: airlock policy "
			    "check)" : "");
		} else
			snprintf(err, errlen, "policy %s: cannot be loaded",
			    req->nr_policy);
		policy_errors_free(&errs);
		return -1;
	}
	snprintf(sb->sb_policy_hash, sizeof(sb->sb_policy_hash), "%s",
	    pol->p_hash);
	policy_free(pol);
	policy_errors_free(&errs);
	if (sandbox_load(cfg->state_dir, sb->sb_name, &old) == 0 ||
	    errno != ENOENT) {
		snprintf(err, errlen, "sandbox %s already exists", sb->sb_name);
		return -1;
	}
	sb->sb_created = (long long)time(NULL);
	return 0;
}

/* Every address in use: records' host and guest addresses, the host's own IPv4. */
static int
nc_used_addrs(const struct sandbox *v, size_t n, struct netaddr **out,
    size_t *nout)
{
	struct ifaddrs *ifa = NULL, *i;
	struct netaddr *u;
	size_t cnt = 0, k;

	if (getifaddrs(&ifa) == -1)
		return -1;
	for (i = ifa; i != NULL; i = i->ifa_next)
		cnt++;
	if ((u = calloc(2 * n + cnt + 1, sizeof(*u))) == NULL) {
		freeifaddrs(ifa);
		return -1;
	}
	*nout = 0;
	for (k = 0; k < n; k++) {
		u[(*nout)++] = v[k].sb_host_ip;
		u[(*nout)++] = v[k].sb_guest_ip;
	}
	for (i = ifa; i != NULL; i = i->ifa_next)
		if (i->ifa_addr != NULL && i->ifa_addr->sa_family == AF_INET &&
		    netaddr_from_sockaddr(i->ifa_addr, &u[*nout], NULL) == 0)
			(*nout)++;
	freeifaddrs(ifa);
	*out = u;
	return 0;
}

/* Rules, then the record; rules rolled back if the record cannot be written. */
static int
nc_commit(const struct airlock_config *cfg, const struct netctl_params *p,
    const struct sandbox *sb, char *err, size_t errlen)
{
	char e2[256];

	if (netctl_sandbox_install(p, sb, err, errlen) == -1)
		return -1;
	if (sandbox_save(cfg->state_dir, sb) == -1) {
		nc_err_errno(err, errlen, errno, "writing the record of sandbox "
		    "%s in %s", sb->sb_name, cfg->state_dir);
		if (netctl_sandbox_uninstall(sb, e2, sizeof(e2)) == -1)
			log_warnx("rolling back the rules of %s: %s", sb->sb_name,
			    e2);
		return -1;
	}
	return 0;
}

static int
nc_owner(const char *owner, uid_t *uid, char *err, size_t errlen)
{
	struct passwd *pw;
	char *end;
	unsigned long v;

	*uid = (uid_t)-1;
	if (owner == NULL)
		return 0;
	if (owner[0] >= '0' && owner[0] <= '9') {
		errno = 0;
		v = strtoul(owner, &end, 10);
		if (errno == 0 && *end == '\0' && v < (unsigned long)(uid_t)-1) {
			*uid = (uid_t)v;
			return 0;
		}
	} else if ((pw = getpwnam(owner)) != NULL) {
		*uid = pw->pw_uid;
		return 0;
	}
	snprintf(err, errlen, "owner \"%s\": no such user", owner);
	return -1;
}

int
netctl_sandbox_create(const struct airlock_config *cfg,
    const struct netctl_request *req, struct sandbox *out, char *err,
    size_t errlen)
{
	struct netctl_params p;
	struct sandbox sb, old, *all = NULL;
	struct netaddr *used = NULL;
	size_t nused = 0;
	char e2[256];
	uid_t owner;
	int lock = -1, nall, rv = -1, tap = 0;

	if (nc_new_checks(cfg, req, &p, &sb, err, errlen) == -1)
		return -1;
	if (nc_owner(req->nr_owner, &owner, err, errlen) == -1)
		return -1;
	if ((lock = nc_lock(cfg->state_dir, err, errlen)) == -1)
		return -1;
	/* Again under the lock: another command may have made it meanwhile. */
	if (sandbox_load(cfg->state_dir, sb.sb_name, &old) == 0 ||
	    errno != ENOENT) {
		snprintf(err, errlen, "sandbox %s already exists", sb.sb_name);
		goto out;
	}
	sb.sb_kind = SANDBOX_KIND_TAP;
	snprintf(sb.sb_iface, sizeof(sb.sb_iface), "%s%s", NETCTL_TAP_PREFIX,
	    sb.sb_name);
	if (nc_link_exists(sb.sb_iface)) {
		snprintf(err, errlen, "interface %s already exists", sb.sb_iface);
		goto out;
	}
	if ((nall = sandbox_list(cfg->state_dir, &all)) == -1) {
		nc_err_errno(err, errlen, errno, "reading the sandbox records");
		goto out;
	}
	if (nc_used_addrs(all, (size_t)nall, &used, &nused) == -1) {
		nc_err_errno(err, errlen, errno, "listing addresses");
		goto out;
	}
	if (netctl_pool_alloc(&cfg->address_pool, used, nused, &sb.sb_host_ip,
	    &sb.sb_guest_ip) == -1) {
		char a[NETADDR_STRLEN];

		netaddr_fmt(&cfg->address_pool.nc_addr, a, sizeof(a));
		if (errno == ENOSPC)
			snprintf(err, errlen, "address pool %s/%u is full", a,
			    cfg->address_pool.nc_prefix);
		else
			snprintf(err, errlen, "address pool %s/%u: must be IPv4 "
			    "and hold at least one /30", a,
			    cfg->address_pool.nc_prefix);
		goto out;
	}
	sb.sb_prefix = 30;
	if (netctl_tap_create(sb.sb_iface, owner, &sb.sb_host_ip, &sb.sb_guest_ip,
	    sb.sb_prefix, err, errlen) == -1)
		goto out;
	tap = 1;
	/* Before the rules: the tap must keep the VM in without them. */
	if (netctl_link_harden(cfg->state_dir, &sb, err, errlen) == -1)
		goto out;
	if (nc_commit(cfg, &p, &sb, err, errlen) == -1)
		goto out;
	tap = 0;
	if (out != NULL)
		*out = sb;
	rv = 0;
 out:
	if (tap && netctl_tap_destroy(sb.sb_iface, e2, sizeof(e2)) == -1)
		log_warnx("rolling back tap %s: %s", sb.sb_iface, e2);
	free(used);
	free(all);
	if (lock != -1)
		close(lock);
	return rv;
}

/* Lower-case "aa:bb:cc:dd:ee:ff", or -1. */
static int
nc_mac_norm(const char *in, char *out, size_t len)
{
	unsigned int v[6];
	char end;

	if (strlen(in) != 17 || sscanf(in, "%2x:%2x:%2x:%2x:%2x:%2x%c", &v[0],
	    &v[1], &v[2], &v[3], &v[4], &v[5], &end) != 6)
		return -1;
	if (v[0] & 1)
		return -1;	/* multicast/broadcast is never a VM's source */
	snprintf(out, len, "%02x:%02x:%02x:%02x:%02x:%02x", v[0] & 0xffu,
	    v[1] & 0xffu, v[2] & 0xffu, v[3] & 0xffu, v[4] & 0xffu,
	    v[5] & 0xffu);
	return 0;
}

int
netctl_sandbox_attach(const struct airlock_config *cfg,
    const struct netctl_request *req, struct sandbox *out, char *err,
    size_t errlen)
{
	struct netctl_params p;
	struct sandbox sb, old, *all = NULL;
	struct netaddr *used = NULL, tmp;
	unsigned int prefix;
	size_t nused = 0, i;
	char a[NETADDR_STRLEN], e2[256];
	int lock = -1, nall, rv = -1;

	if (nc_new_checks(cfg, req, &p, &sb, err, errlen) == -1)
		return -1;
	sb.sb_kind = SANDBOX_KIND_ATTACH;
	if (req->nr_iface == NULL || strlen(req->nr_iface) >= IF_NAMESIZE ||
	    req->nr_iface[0] == '\0') {
		snprintf(err, errlen, "an interface name is required (--iface)");
		return -1;
	}
	snprintf(sb.sb_iface, sizeof(sb.sb_iface), "%s", req->nr_iface);
	if (!nc_link_exists(sb.sb_iface)) {
		snprintf(err, errlen, "interface %s does not exist", sb.sb_iface);
		return -1;
	}
	if (req->nr_guest_ip == NULL ||
	    netaddr_parse(req->nr_guest_ip, &sb.sb_guest_ip) == -1 ||
	    sb.sb_guest_ip.na_family != AF_INET) {
		snprintf(err, errlen, "invalid guest IP \"%s\" (an IPv4 address)",
		    req->nr_guest_ip ? req->nr_guest_ip : "");
		return -1;
	}
	if (req->nr_host_ip != NULL) {
		if (netaddr_parse(req->nr_host_ip, &tmp) == -1 ||
		    tmp.na_family != AF_INET) {
			snprintf(err, errlen, "invalid host IP \"%s\" (an IPv4 "
			    "address)", req->nr_host_ip);
			return -1;
		}
		if (nc_link_ipv4(sb.sb_iface, &tmp, &sb.sb_host_ip, &prefix) ==
		    -1) {
			snprintf(err, errlen, "host IP %s is not an address of %s",
			    req->nr_host_ip, sb.sb_iface);
			return -1;
		}
	} else if (nc_link_ipv4(sb.sb_iface, NULL, &sb.sb_host_ip, &prefix) ==
	    -1) {
		snprintf(err, errlen, "interface %s has no IPv4 address: give "
		    "--host-ip after adding one", sb.sb_iface);
		return -1;
	}
	sb.sb_prefix = prefix;
	if (netaddr_equal(&sb.sb_host_ip, &sb.sb_guest_ip)) {
		snprintf(err, errlen, "guest IP %s is the host's address",
		    req->nr_guest_ip);
		return -1;
	}
	if (req->nr_mac != NULL &&
	    nc_mac_norm(req->nr_mac, sb.sb_mac, sizeof(sb.sb_mac)) == -1) {
		snprintf(err, errlen, "invalid MAC \"%s\" (aa:bb:cc:dd:ee:ff, "
		    "unicast)", req->nr_mac);
		return -1;
	}
	if ((lock = nc_lock(cfg->state_dir, err, errlen)) == -1)
		return -1;
	if (sandbox_load(cfg->state_dir, sb.sb_name, &old) == 0 ||
	    errno != ENOENT) {
		snprintf(err, errlen, "sandbox %s already exists", sb.sb_name);
		goto out;
	}
	if ((nall = sandbox_list(cfg->state_dir, &all)) == -1) {
		nc_err_errno(err, errlen, errno, "reading the sandbox records");
		goto out;
	}
	for (i = 0; i < (size_t)nall; i++) {
		if (strcmp(all[i].sb_iface, sb.sb_iface) == 0) {
			snprintf(err, errlen, "interface %s is already used by "
			    "sandbox %s", sb.sb_iface, all[i].sb_name);
			goto out;
		}
	}
	if (nc_used_addrs(all, (size_t)nall, &used, &nused) == -1) {
		nc_err_errno(err, errlen, errno, "listing addresses");
		goto out;
	}
	for (i = 0; i < nused; i++)
		if (netaddr_equal(&used[i], &sb.sb_guest_ip)) {
			snprintf(err, errlen, "address already in use: %s",
			    netaddr_fmt(&sb.sb_guest_ip, a, sizeof(a)));
			goto out;
		}
	if (netctl_link_harden(cfg->state_dir, &sb, err, errlen) == -1)
		goto out;
	if (nc_commit(cfg, &p, &sb, err, errlen) == -1) {
		if (netctl_link_restore(cfg->state_dir, &sb, e2, sizeof(e2)) == -1)
			log_warnx("rolling back the settings of %s: %s",
			    sb.sb_iface, e2);
		goto out;
	}
	if (out != NULL)
		*out = sb;
	rv = 0;
 out:
	free(used);
	free(all);
	if (lock != -1)
		close(lock);
	return rv;
}

int
netctl_sandbox_destroy(const struct airlock_config *cfg, const char *name,
    enum sandbox_kind kind, char *err, size_t errlen)
{
	struct sandbox sb;
	struct nc_nl nl;
	uint32_t gen;
	int lock = -1, rv = -1;

	if (!sandbox_name_is_valid(name)) {
		snprintf(err, errlen, "invalid sandbox name \"%s\"", name);
		return -1;
	}
	if (nc_nl_open(&nl, err, errlen) == -1)
		return -1;
	if (nc_nl_genid(&nl, &gen, err, errlen) == -1) {
		nc_nl_close(&nl);
		return -1;
	}
	nc_nl_close(&nl);
	if ((lock = nc_lock(cfg->state_dir, err, errlen)) == -1)
		return -1;
	if (sandbox_load(cfg->state_dir, name, &sb) == -1) {
		if (errno == ENOENT)
			snprintf(err, errlen, "no sandbox named %s", name);
		else
			nc_err_errno(err, errlen, errno, "reading the record of "
			    "sandbox %s", name);
		goto out;
	}
	if (sb.sb_kind != kind) {
		snprintf(err, errlen, "sandbox %s was made by '%s': remove it "
		    "with '%s'", name, sb.sb_kind == SANDBOX_KIND_TAP ?
		    "airlock sandbox create" : "airlock net attach",
		    sb.sb_kind == SANDBOX_KIND_TAP ? "airlock sandbox destroy" :
		    "airlock net detach");
		goto out;
	}
	/* Rules first: a sandbox without rules has no path at all, never an open one. */
	if (netctl_sandbox_uninstall(&sb, err, errlen) == -1)
		goto out;
	if (netctl_link_restore(cfg->state_dir, &sb, err, errlen) == -1)
		goto out;
	if (sb.sb_kind == SANDBOX_KIND_TAP &&
	    netctl_tap_destroy(sb.sb_iface, err, errlen) == -1)
		goto out;
	if (sandbox_remove(cfg->state_dir, name) == -1) {
		nc_err_errno(err, errlen, errno, "removing the record of %s", name);
		goto out;
	}
	rv = 0;
 out:
	close(lock);
	return rv;
}
