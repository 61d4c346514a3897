/*
 * netctl/netctl_link.c: taps (/dev/net/tun) and their addresses and link state
 * (rtnetlink through libmnl; no `ip` binary in the product).
 */
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <arpa/inet.h>
#include <linux/if_tun.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>

#include "log.h"
#include "netctl_int.h"

int
nc_link_exists(const char *ifname)
{
	return if_nametoindex(ifname) != 0;
}

static unsigned int
nc_mask_bits(const struct sockaddr *sa)
{
	const struct sockaddr_in *sin = (const struct sockaddr_in *)
	    (const void *)sa;
	uint32_t m;
	unsigned int n = 0;

	if (sa == NULL || sa->sa_family != AF_INET)
		return 32;
	for (m = ntohl(sin->sin_addr.s_addr); m & 0x80000000u; m <<= 1)
		n++;
	return n;
}

int
nc_link_ipv4(const char *ifname, const struct netaddr *want,
    struct netaddr *addr, unsigned int *prefix)
{
	struct ifaddrs *ifa, *i;
	struct netaddr a;
	int rv = -1;

	if (getifaddrs(&ifa) == -1)
		return -1;
	for (i = ifa; i != NULL; i = i->ifa_next) {
		if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET ||
		    (ifname != NULL && strcmp(i->ifa_name, ifname) != 0))
			continue;
		if (netaddr_from_sockaddr(i->ifa_addr, &a, NULL) == -1)
			continue;
		if (want != NULL && !netaddr_equal(want, &a))
			continue;
		*addr = a;
		*prefix = nc_mask_bits(i->ifa_netmask);
		rv = 0;
		break;
	}
	freeifaddrs(ifa);
	if (rv == -1)
		errno = ENOENT;
	return rv;
}

/* One rtnetlink request with an ack.  Returns 0 or -1 with errno. */
int
nc_rtnl_talk(struct nlmsghdr *nlh)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct mnl_socket *nl;
	uint32_t portid;
	ssize_t n;
	int rv = -1, saved;

	if ((nl = mnl_socket_open(NETLINK_ROUTE)) == NULL)
		return -1;
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) == -1)
		goto out;
	portid = mnl_socket_get_portid(nl);
	nlh->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	nlh->nlmsg_seq = (uint32_t)time(NULL);
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) == -1)
		goto out;
	if ((n = mnl_socket_recvfrom(nl, buf, sizeof(buf))) == -1)
		goto out;
	if (mnl_cb_run(buf, (size_t)n, nlh->nlmsg_seq, portid, NULL, NULL) ==
	    -1)
		goto out;
	rv = 0;
 out:
	saved = errno;
	mnl_socket_close(nl);
	errno = saved;
	return rv;
}

/*
 * a/prefix on ifindex; with peer, "a peer PEER/32" instead: the only route it makes
 * is PEER/32 through this interface.
 */
static int
nc_rtnl_addr_add(unsigned int ifindex, const struct netaddr *a,
    unsigned int prefix, const struct netaddr *peer)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh;
	struct ifaddrmsg *ifm;
	uint32_t bcast;

	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_NEWADDR;
	nlh->nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
	ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
	ifm->ifa_family = AF_INET;
	ifm->ifa_prefixlen = (unsigned char)(peer != NULL ? 32 : prefix);
	ifm->ifa_scope = RT_SCOPE_UNIVERSE;
	ifm->ifa_index = ifindex;
	mnl_attr_put(nlh, IFA_LOCAL, 4, &a->na_u.v4);
	mnl_attr_put(nlh, IFA_ADDRESS, 4, peer != NULL ? &peer->na_u.v4 :
	    &a->na_u.v4);
	if (peer == NULL && prefix < 31) {
		bcast = a->na_u.v4.s_addr | htonl(0xffffffffu >> prefix);
		mnl_attr_put(nlh, IFA_BROADCAST, 4, &bcast);
	}
	return nc_rtnl_talk(nlh);
}

static int
nc_rtnl_link(int type, unsigned int ifindex, unsigned int flags,
    unsigned int change)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh;
	struct ifinfomsg *ifi;

	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = (uint16_t)type;
	ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = (int)ifindex;
	ifi->ifi_flags = flags;
	ifi->ifi_change = change;
	return nc_rtnl_talk(nlh);
}

/*
 * No IPv6 on a tap we made: without it the host side has no link-local address a VM
 * could talk to.  nftables drops IPv6 anyway; this only narrows what the host offers,
 * so a kernel without IPv6 (no such file) is fine.
 */
static int
nc_ipv6_disable(const char *ifname)
{
	char path[128];
	int fd, rv = 0;

	snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/disable_ipv6",
	    ifname);
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) == -1)
		return errno == ENOENT ? 0 : -1;
	if (write(fd, "1\n", 2) != 2)
		rv = -1;
	close(fd);
	return rv;
}

int
netctl_tap_create(const char *ifname, uid_t owner, const struct netaddr *host,
    const struct netaddr *guest, unsigned int prefix, char *err, size_t errlen)
{
	struct ifreq ifr;
	unsigned int ifindex;
	int fd = -1, made = 0;

	if (strlen(ifname) >= IFNAMSIZ) {
		snprintf(err, errlen, "interface name %s is too long", ifname);
		return -1;
	}
	if ((fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC)) == -1) {
		nc_err_errno(err, errlen, errno, "opening /dev/net/tun");
		goto error;
	}
	memset(&ifr, 0, sizeof(ifr));
	/* TUN_EXCL: never attach to a tap of the same name someone else made. */
	/* 0x8000 does not fit a short: the kernel reads the same bits back. */
	ifr.ifr_flags = (short)(IFF_TAP | IFF_NO_PI | IFF_TUN_EXCL);
	memcpy(ifr.ifr_name, ifname, strlen(ifname));
	if (ioctl(fd, TUNSETIFF, &ifr) == -1) {
		if (errno == EBUSY)
			snprintf(err, errlen, "interface %s already exists",
			    ifname);
		else
			nc_err_errno(err, errlen, errno, "creating tap %s",
			    ifname);
		goto error;
	}
	made = 1;
	if (owner != (uid_t)-1 &&
	    ioctl(fd, TUNSETOWNER, (unsigned long)owner) == -1) {
		nc_err_errno(err, errlen, errno, "setting the owner of %s",
		    ifname);
		goto error;
	}
	if (ioctl(fd, TUNSETPERSIST, 1UL) == -1) {
		nc_err_errno(err, errlen, errno, "making %s persistent", ifname);
		goto error;
	}
	close(fd);
	fd = -1;
	if ((ifindex = if_nametoindex(ifname)) == 0) {
		nc_err_errno(err, errlen, errno, "finding %s", ifname);
		goto error;
	}
	if (nc_ipv6_disable(ifname) == -1)
		log_warn("disabling IPv6 on %s", ifname);
	if (nc_rtnl_addr_add(ifindex, host, prefix, guest) == -1) {
		char a[NETADDR_STRLEN], g[NETADDR_STRLEN];

		if (guest != NULL)
			nc_err_errno(err, errlen, errno, "adding %s peer %s/32 "
			    "to %s", netaddr_fmt(host, a, sizeof(a)),
			    netaddr_fmt(guest, g, sizeof(g)), ifname);
		else
			nc_err_errno(err, errlen, errno, "adding %s/%u to %s",
			    netaddr_fmt(host, a, sizeof(a)), prefix, ifname);
		goto error;
	}
	if (nc_rtnl_link(RTM_NEWLINK, ifindex, IFF_UP, IFF_UP) == -1) {
		nc_err_errno(err, errlen, errno, "bringing %s up", ifname);
		goto error;
	}
	return 0;
 error:
	/*
	 * A tap that is not yet persistent vanishes with its fd; once persistent it
	 * has to be deleted.
	 */
	if (fd != -1)
		close(fd);
	if (made && (ifindex = if_nametoindex(ifname)) != 0)
		(void)nc_rtnl_link(RTM_DELLINK, ifindex, 0, 0);
	return -1;
}

int
netctl_tap_destroy(const char *ifname, char *err, size_t errlen)
{
	unsigned int ifindex;

	if ((ifindex = if_nametoindex(ifname)) == 0)
		return 0;		/* already gone */
	if (nc_rtnl_link(RTM_DELLINK, ifindex, 0, 0) == -1) {
		nc_err_errno(err, errlen, errno, "deleting interface %s",
		    ifname);
		return -1;
	}
	return 0;
}
