/*
 * netctl/netctl_harden.c: the per-interface settings that keep a VM in even when
 * nftables holds no airlock rule at all (a flushed ruleset): written through
 * /proc/sys/net of the namespace the command runs in, and a route to the guest.
 *
 *   net.ipv4.conf.IF.forwarding = 0	the host routes no packet that arrives on IF,
 *					whatever ip_forward says (ip_route_input_slow()
 *					checks the input device's forwarding flag)
 *   net.ipv4.conf.IF.rp_filter = 1	strict reverse path: a source whose route
 *					back is not IF is dropped
 *   net.ipv6.conf.IF.disable_ipv6 = 1	no IPv6 on IF at all (per-interface IPv6
 *					"forwarding" does not stop forwarding)
 *   route GUEST/32 dev IF		the guest's address is reachable through IF
 *					only (a tap airlock makes gets HOST peer GUEST/32,
 *					so no broader route exists either); not on a link
 *					that is down (the kernel refuses it): a warning
 *
 * An interface someone else made (net attach) gets the same settings, and its
 * previous values are kept in STATE_DIR/sandboxes/NAME.link (0600) so that detach
 * puts them back; the route is removed on detach only if attach added it.
 */
#include <sys/stat.h>
#include <sys/types.h>

#include <arpa/inet.h>
#include <linux/rtnetlink.h>
#include <net/if.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libmnl/libmnl.h>

#include "log.h"
#include "netctl_int.h"

enum nc_knob {
	NC_KNOB_FWD4 = 0,
	NC_KNOB_RPF,
	NC_KNOB_NOV6,
	NC_KNOB_N,
};

static const struct {
	const char	*dir;		/* /proc/sys/net/DIR/IF/KNOB */
	const char	*knob;
	const char	*value;
	int		 optional;	/* absent file is fine (no IPv6) */
} nc_knobs[NC_KNOB_N] = {
	[NC_KNOB_FWD4] = { "ipv4/conf", "forwarding", "0", 0 },
	[NC_KNOB_RPF] = { "ipv4/conf", "rp_filter", "1", 0 },
	[NC_KNOB_NOV6] = { "ipv6/conf", "disable_ipv6", "1", 1 },
};

static void
nc_knob_path(const char *ifname, int k, char *buf, size_t len)
{
	snprintf(buf, len, "/proc/sys/net/%s/%s/%s", nc_knobs[k].dir, ifname,
	    nc_knobs[k].knob);
}

/* Reads one knob ("" if optional and absent).  0 or -1 with errno. */
static int
nc_knob_get(const char *ifname, int k, char *buf, size_t len)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	nc_knob_path(ifname, k, path, sizeof(path));
	buf[0] = '\0';
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return errno == ENOENT && nc_knobs[k].optional ? 0 : -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static int
nc_knob_set(const char *ifname, int k, const char *v, char *err, size_t errlen)
{
	char path[PATH_MAX];
	size_t l = strlen(v);
	int fd, e;

	if (v[0] == '\0')
		return 0;	/* optional knob that does not exist */
	nc_knob_path(ifname, k, path, sizeof(path));
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) == -1) {
		if (errno == ENOENT && nc_knobs[k].optional)
			return 0;
		goto error;
	}
	if (write(fd, v, l) != (ssize_t)l) {
		e = errno;
		close(fd);
		errno = e;
		goto error;
	}
	close(fd);
	return 0;
 error:
	nc_err_errno(err, errlen, errno, "interface %s: writing %s to %s", ifname,
	    v, path);
	return -1;
}

/* RTM_NEWROUTE / RTM_DELROUTE of GUEST/32 dev IF.  0 or -1 with errno. */
static int
nc_route_guest(int type, const struct sandbox *sb, unsigned int ifindex)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh;
	struct rtmsg *rtm;
	uint32_t oif = ifindex;

	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = (uint16_t)type;
	nlh->nlmsg_flags = type == RTM_NEWROUTE ? NLM_F_CREATE | NLM_F_EXCL : 0;
	rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	rtm->rtm_family = AF_INET;
	rtm->rtm_dst_len = 32;
	rtm->rtm_table = RT_TABLE_MAIN;
	rtm->rtm_protocol = RTPROT_STATIC;
	rtm->rtm_scope = RT_SCOPE_LINK;
	rtm->rtm_type = RTN_UNICAST;
	mnl_attr_put(nlh, RTA_DST, 4, &sb->sb_guest_ip.na_u.v4);
	mnl_attr_put_u32(nlh, RTA_OIF, oif);
	return nc_rtnl_talk(nlh);
}

static void
nc_saved_path(const char *state_dir, const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s/sandboxes/%s.link", state_dir, name);
}

int
netctl_link_harden(const char *state_dir, const struct sandbox *sb, char *err,
    size_t errlen)
{
	char old[NC_KNOB_N][32], path[PATH_MAX], ga[NETADDR_STRLEN];
	unsigned int ifindex;
	int k, added = 0, fd = -1;
	FILE *f = NULL;

	if ((ifindex = if_nametoindex(sb->sb_iface)) == 0) {
		nc_err_errno(err, errlen, errno, "interface %s", sb->sb_iface);
		return -1;
	}
	for (k = 0; k < NC_KNOB_N; k++)
		if (nc_knob_get(sb->sb_iface, k, old[k], sizeof(old[k])) == -1) {
			nc_err_errno(err, errlen, errno, "interface %s: reading "
			    "%s/%s", sb->sb_iface, nc_knobs[k].dir,
			    nc_knobs[k].knob);
			return -1;
		}
	/*
	 * A link that is down takes no route (ENETDOWN).  The route only narrows
	 * where the guest's address leads; forwarding off is what keeps the VM in,
	 * so a down interface gets the rest and a warning.
	 */
	if (nc_route_guest(RTM_NEWROUTE, sb, ifindex) == 0)
		added = 1;
	else if (errno == ENETDOWN)
		log_warnx("interface %s is down: no %s/32 route through it",
		    sb->sb_iface, netaddr_fmt(&sb->sb_guest_ip, ga, sizeof(ga)));
	else if (errno != EEXIST) {
		nc_err_errno(err, errlen, errno, "interface %s: adding route "
		    "%s/32 dev %s", sb->sb_iface, netaddr_fmt(&sb->sb_guest_ip,
		    ga, sizeof(ga)), sb->sb_iface);
		return -1;
	}
	if (sb->sb_kind == SANDBOX_KIND_ATTACH) {
		/* What detach puts back: written before anything is changed. */
		nc_saved_path(state_dir, sb->sb_name, path, sizeof(path));
		if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
		    0600)) == -1 || (f = fdopen(fd, "w")) == NULL) {
			nc_err_errno(err, errlen, errno, "writing %s", path);
			if (fd != -1)
				close(fd);
			goto error;
		}
		fprintf(f, "%s\n%s\n%s\n%d\n", old[0], old[1], old[2], added);
		if (fclose(f) != 0) {
			nc_err_errno(err, errlen, errno, "writing %s", path);
			goto error;
		}
	}
	for (k = 0; k < NC_KNOB_N; k++)
		if (nc_knob_set(sb->sb_iface, k, nc_knobs[k].value, err,
		    errlen) == -1)
			goto error;
	return 0;
 error:
	for (k = 0; k < NC_KNOB_N; k++)
		(void)nc_knob_set(sb->sb_iface, k, old[k], NULL, 0);
	if (added)
		(void)nc_route_guest(RTM_DELROUTE, sb, ifindex);
	if (sb->sb_kind == SANDBOX_KIND_ATTACH) {
		nc_saved_path(state_dir, sb->sb_name, path, sizeof(path));
		(void)unlink(path);
	}
	return -1;
}

int
netctl_link_restore(const char *state_dir, const struct sandbox *sb, char *err,
    size_t errlen)
{
	char path[PATH_MAX], line[NC_KNOB_N + 1][32];
	unsigned int ifindex;
	FILE *f;
	int k, rv = 0;

	if (sb->sb_kind != SANDBOX_KIND_ATTACH)
		return 0;	/* airlock's own tap: it goes away */
	nc_saved_path(state_dir, sb->sb_name, path, sizeof(path));
	if ((f = fopen(path, "re")) == NULL) {
		if (errno == ENOENT)
			return 0;	/* attached before this existed */
		nc_err_errno(err, errlen, errno, "interface %s: reading %s",
		    sb->sb_iface, path);
		return -1;
	}
	for (k = 0; k <= NC_KNOB_N; k++) {
		if (fgets(line[k], sizeof(line[k]), f) == NULL)
			line[k][0] = '\0';
		line[k][strcspn(line[k], "\n")] = '\0';
		/* Only what a sysctl holds: digits (and "-" for a few). */
		if (strspn(line[k], "-0123456789") != strlen(line[k]))
			line[k][0] = '\0';
	}
	fclose(f);
	if ((ifindex = if_nametoindex(sb->sb_iface)) != 0) {
		for (k = 0; k < NC_KNOB_N; k++)
			if (nc_knob_set(sb->sb_iface, k, line[k], err, errlen) ==
			    -1)
				rv = -1;
		if (strcmp(line[NC_KNOB_N], "1") == 0 &&
		    nc_route_guest(RTM_DELROUTE, sb, ifindex) == -1 &&
		    errno != ESRCH)
			log_warn("interface %s: removing the route to the guest",
			    sb->sb_iface);
	}
	if (rv == 0)
		(void)unlink(path);
	return rv;
}
