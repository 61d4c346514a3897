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

#endif
