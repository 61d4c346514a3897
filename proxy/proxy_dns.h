/*
 * proxy/proxy_dns.h: policy DNS (proxy_dns.c); its answers are proxy_dns_codec.h's.
 */
#ifndef AIRLOCK_PROXY_DNS_H
#define AIRLOCK_PROXY_DNS_H

struct event_base;

/* proxy_dns.c: policy DNS over UDP and TCP on the dns_port (fds bound by proxy.c) */
struct proxy_dns;
/* Returned server freed with proxy_dns_free(); NULL on failure. */
struct proxy_dns *proxy_dns_new(struct event_base *base, int udp_fd, int tcp_fd);
void	proxy_dns_free(struct proxy_dns *d);
/*
 * A sandbox's DNS state (ps_dns), for proxy_sandbox_new(): its rate limit, TCP
 * client count and pending audit aggregates under a lock of its own.  NULL if out
 * of memory.  proxy_dns_sb_flush() writes what it counts to the audit log now (its
 * sandbox was taken out of the registry; no lock held); proxy_dns_sb_free(), at
 * the sandbox's last reference, writes what is left and frees it.
 */
struct proxy_dns_sb;
struct proxy_dns_sb *proxy_dns_sb_new(const char *name);
void	proxy_dns_sb_flush(struct proxy_dns_sb *s);
void	proxy_dns_sb_free(struct proxy_dns_sb *s);

#endif
