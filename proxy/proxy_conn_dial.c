/*
 * proxy/proxy_conn_dial.c: the upstream side of an allowed connection.  The mapped
 * name is resolved the way the host resolves it (evdns: /etc/hosts, then the
 * resolv.conf servers; asynchronous), every answer is classified, and the connection
 * goes to the first acceptable address: that address is pinned, there is no second
 * lookup (so a rebinding answer cannot redirect the connection afterwards).
 *
 * Acceptable: IPv4 (the relay does not dial IPv6 upstream; the VM has no IPv6
 * either), not in the floor (netaddr_classify() plus the host's own addresses), and
 * not private unless the deciding rule is a cidr rule naming that range
 * (policy_rule_allows_private()); a name rule never opens a private address.
 *
 * With an upstream proxy in force for the policy (proxy_upstream_route(), chosen here
 * once: pc_via), it is the proxy's name that is resolved this way, and its address
 * that is checked and pinned: never the floor, the host's own addresses or the
 * sandboxes' pools, but a private address is allowed (the operator configured it).
 * The origin's name is not resolved by airlock then (a corporate network often
 * resolves external names only through the proxy); a connection decided on its
 * address still has that address checked as above.  The tunnel is
 * proxy_conn_tunnel()'s; whatever fails there, the connection never goes direct.
 */
#include <sys/ioctl.h>
#include <sys/types.h>
#include <sys/socket.h>

#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/bufferevent.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <event2/util.h>

#include "log.h"
#include "netaddr.h"
#include "policy.h"
#include "proxy_path.h"
#include "proxy_reason.h"


/*
 * The host's own IPv4 addresses, every one of every interface, with SIOCGIFCONF on
 * a datagram socket: getifaddrs() would open a netlink socket, which the worker's
 * seccomp filter refuses (proxy_confine.c).  IPv4 is all the check needs: upstreams
 * are dialed over IPv4 only.
 */
int
proxy_conn_host_addrs(struct proxy_worker *w)
{
	struct ifreq req[PROXY_HOST_ADDRS_MAX];
	struct ifconf ifc;
	size_t n = 0, i;
	int fd;

	if ((fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	memset(&ifc, 0, sizeof(ifc));
	ifc.ifc_len = sizeof(req);
	ifc.ifc_req = req;
	if (ioctl(fd, SIOCGIFCONF, &ifc) == -1) {
		close(fd);
		return -1;
	}
	close(fd);
	for (i = 0; i < (size_t)ifc.ifc_len / sizeof(req[0]); i++)
		if (req[i].ifr_addr.sa_family == AF_INET &&
		    netaddr_from_sockaddr(&req[i].ifr_addr, &w->pw_host[n],
		    NULL) == 0)
			n++;
	w->pw_nhost = n;
	return 0;
}

/* 1 if a is one of the host's own addresses (or embeds one). */
static int
proxy_conn_is_host(const struct proxy_worker *w, const struct netaddr *a)
{
	struct netaddr v4;
	size_t i;

	for (i = 0; i < w->pw_nhost; i++)
		if (netaddr_equal(&w->pw_host[i], a) ||
		    (netaddr_embedded_v4(a, &v4) &&
		    netaddr_equal(&w->pw_host[i], &v4)))
			return 1;
	return 0;
}

int
proxy_conn_addr_check(const struct proxy_worker *w, const struct policy_rule *rule,
    const struct netaddr *a, const char **why)
{
	*why = NULL;
	if (proxy_conn_is_host(w, a)) {
		*why = PR_STR(ADDRESS_IN_FLOOR);
		return -1;
	}
	switch (netaddr_classify(a, NULL)) {
	case NETADDR_PUBLIC:
		return 0;
	case NETADDR_PRIVATE:
		if (rule != NULL && policy_rule_allows_private(rule, a))
			return 0;
		*why = PR_STR(PRIVATE_ADDRESS);
		return -1;
	case NETADDR_FLOOR:
		break;
	}
	*why = PR_STR(ADDRESS_IN_FLOOR);
	return -1;
}

/*
 * An upstream proxy's address: anything but the floor, the host's own addresses and
 * the sandboxes' pools (address_pool: their own, mapped_pool: what DNS gives them).
 * 0, or -1 with *why ("address_in_floor").
 */
static int
proxy_conn_proxy_addr_check(const struct proxy_worker *w, const struct netaddr *a,
    const char **why)
{
	const struct airlock_config *cfg = proxy_config();

	*why = PR_STR(ADDRESS_IN_FLOOR);
	if (a->na_family != AF_INET || proxy_conn_is_host(w, a) ||
	    netaddr_classify(a, NULL) == NETADDR_FLOOR ||
	    netaddr_cidr_contains(&cfg->address_pool, a) ||
	    netaddr_cidr_contains(&cfg->mapped_pool, a))
		return -1;
	*why = NULL;
	return 0;
}

/* The mode hears how the connect went (inspect: TLS verified too). */
static void
proxy_conn_dial_event(struct bufferevent *bev, short what, void *arg)
{
	struct proxy_conn *c = arg;

	if (what & BEV_EVENT_CONNECTED)
		proxy_hist_since(PH_DIAL, c->pc_dial_t0);
	c->pc_mode->pm_server_event(c, what);
}

static void
proxy_conn_dial_timer(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_conn *c = arg;

	/* Until the tunnel is up, the time ran out on the way to the proxy. */
	if (c->pc_via != NULL && c->pc_tunnel != PROXY_TUNNEL_UP)
		proxy_conn_close(c, PR_STR(UPSTREAM_PROXY_UNREACHABLE), 1);
	else
		proxy_conn_close(c, c->pc_state == PC_RESOLVE ?
		    PR_STR(RESOLVE_FAILED) : PR_STR(CONNECT_FAILED), 1);
}

/* Connects to c->pc_upstream (already checked).  May close c. */
static void
proxy_conn_connect(struct proxy_conn *c)
{
	struct sockaddr_in sin;
	uint16_t port = c->pc_dport;
	int one = 1;

	c->pc_state = PC_CONNECT;
	if (c->pc_mode->pm_server_bev != NULL)
		c->pc_server = c->pc_mode->pm_server_bev(c, NULL);
	else
		c->pc_server = bufferevent_socket_new(c->pc_worker->pw_base, -1,
		    BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
	if (c->pc_server == NULL) {
		proxy_conn_close(c, PR_STR(INTERNAL_ERROR), 1);
		return;
	}
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr = c->pc_upstream.na_u.v4;
	sin.sin_port = htons(port);
	bufferevent_setcb(c->pc_server, NULL, NULL, proxy_conn_dial_event, c);
	c->pc_dial_t0 = proxy_stats_now_us();
	if (bufferevent_socket_connect(c->pc_server, (struct sockaddr *)&sin,
	    sizeof(sin)) == -1) {
		/* An immediate failure also reaches proxy_conn_dial_event only for
		 * some errors; the bufferevent is unusable either way. */
		proxy_conn_close(c, PR_STR(CONNECT_FAILED), 1);
		return;
	}
	(void)setsockopt(bufferevent_getfd(c->pc_server), IPPROTO_TCP, TCP_NODELAY,
	    &one, sizeof(one));
}

static void
proxy_conn_resolved(int result, struct evutil_addrinfo *res, void *arg)
{
	struct proxy_dns_ticket *t = arg;
	struct proxy_conn *c = t->pt_conn;
	const struct policy_rule *rule = NULL;
	struct evutil_addrinfo *ai;
	struct netaddr a;
	const char *why = NULL, *worst = NULL;
	int found = 0;

	t->pt_done = 1;
	if (c == NULL) {
		/* cancelled: the connection is gone (or going) */
		if (res != NULL)
			evutil_freeaddrinfo(res);
		free(t);
		return;
	}
	c->pc_dns = NULL;
	free(t);
	if (result != 0 || res == NULL) {
		log_debug("connection %llu: resolve %s%s: %s",
		    (unsigned long long)c->pc_id, c->pc_via != NULL ?
		    "the upstream proxy " : "", c->pc_via != NULL ? c->pc_via :
		    c->pc_name, evutil_gai_strerror(result));
		if (res != NULL)
			evutil_freeaddrinfo(res);
		proxy_conn_close(c, c->pc_via != NULL ?
		    PR_STR(UPSTREAM_PROXY_UNREACHABLE) : PR_STR(RESOLVE_FAILED), 1);
		return;
	}
	if (proxy_conn_current(c) == -1) {
		evutil_freeaddrinfo(res);
		return;
	}
	/* The deciding rule (current), for policy_rule_allows_private(). */
	rule = c->pc_prule;
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		if (ai->ai_family != AF_INET ||
		    netaddr_from_sockaddr(ai->ai_addr, &a, NULL) == -1)
			continue;
		if ((c->pc_via != NULL ?
		    proxy_conn_proxy_addr_check(c->pc_worker, &a, &why) :
		    proxy_conn_addr_check(c->pc_worker, rule, &a, &why)) == 0) {
			found = 1;
			break;
		}
		/* Report the floor over a private answer when both were seen. */
		if (worst == NULL || strcmp(why, PR_STR(ADDRESS_IN_FLOOR)) == 0)
			worst = why;
	}
	evutil_freeaddrinfo(res);
	if (!found) {
		proxy_conn_close(c, worst != NULL ? worst : c->pc_via != NULL ?
		    PR_STR(UPSTREAM_PROXY_UNREACHABLE) : PR_STR(RESOLVE_FAILED), 1);
		return;
	}
	c->pc_upstream = a;
	if (c->pc_via != NULL)
		proxy_conn_tunnel(c);
	else
		proxy_conn_connect(c);
}

void
proxy_conn_dial(struct proxy_conn *c)
{
	struct evutil_addrinfo hints;
	struct proxy_dns_ticket *t;
	struct evdns_getaddrinfo_request *req;
	struct timeval tv = { PROXY_CONNECT_TIMEOUT, 0 };
	const struct policy_rule *rule = NULL;
	const struct upstream_proxy *route;
	const char *why, *name = c->pc_name;

	event_assign(c->pc_timer, c->pc_worker->pw_base, -1, 0,
	    proxy_conn_dial_timer, c);
	if (evtimer_add(c->pc_timer, &tv) == -1) {
		proxy_conn_close(c, PR_STR(INTERNAL_ERROR), 1);
		return;
	}
	/* The way out, once: the policy was decided already (proxy_conn_decide()). */
	route = proxy_upstream_route(c->pc_policy->pp_policy);
	if (c->pc_by_addr) {
		/* A cidr rule allowed the address itself: check it as an answer. */
		rule = c->pc_prule;
		if (c->pc_dst.na_family != AF_INET) {
			proxy_conn_close(c, PR_STR(ADDRESS_NOT_ALLOWED), 1);
			return;
		}
		if (proxy_conn_addr_check(c->pc_worker, rule, &c->pc_dst, &why) == -1) {
			proxy_conn_close(c, why, 1);
			return;
		}
	}
	c->pc_routed = 1;
	if (route != NULL) {
		if (asprintf(&c->pc_via, "%s:%u", route->up_host,
		    route->up_port) == -1) {
			c->pc_via = NULL;
			proxy_conn_close(c, PR_STR(INTERNAL_ERROR), 1);
			return;
		}
		c->pc_via_port = route->up_port;
		name = route->up_host;
	} else if (c->pc_by_addr) {
		c->pc_upstream = c->pc_dst;
		proxy_conn_connect(c);
		return;
	}
	if (route != NULL && route->up_is_addr) {
		if (proxy_conn_proxy_addr_check(c->pc_worker, &route->up_addr,
		    &why) == -1) {
			proxy_conn_close(c, why, 1);
			return;
		}
		c->pc_upstream = route->up_addr;
		proxy_conn_tunnel(c);
		return;
	}
	if (c->pc_worker->pw_dns == NULL) {
		proxy_conn_close(c, c->pc_via != NULL ?
		    PR_STR(UPSTREAM_PROXY_UNREACHABLE) : PR_STR(RESOLVE_FAILED), 1);
		return;
	}
	if ((t = calloc(1, sizeof(*t))) == NULL) {
		proxy_conn_close(c, PR_STR(INTERNAL_ERROR), 1);
		return;
	}
	t->pt_conn = c;
	c->pc_dns = t;
	c->pc_state = PC_RESOLVE;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_INET;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_protocol = IPPROTO_TCP;
	/*
	 * The callback may run before this returns (an /etc/hosts answer, an
	 * immediate error) and may close c: touch nothing of c or t afterwards
	 * unless the lookup is still outstanding.
	 */
	req = evdns_getaddrinfo(c->pc_worker->pw_dns, name, NULL, &hints,
	    proxy_conn_resolved, t);
	if (req != NULL)
		t->pt_req = req;	/* still outstanding: t is alive */
}
