/*
 * proxy/proxy_path.h: the connection path, shared by its files, top-down:
 *	proxy_conn.c		worker, accept, sandbox, peek, decide; the reload
 *				recheck of the worker's connections
 *	proxy_conn_dial.c	resolve, check, connect (for any mode)
 *	proxy_conn_tunnel.c	or through an upstream proxy: connect to it, CONNECT,
 *				the tunnel handed to the mode as if dialled
 *	modes (struct proxy_mode below; the core and the dial know none by name):
 *	  proxy_conn_relay.c	splice: bytes both ways, untouched (also the relay
 *				an inspected connection hands over to after a 101)
 *	  proxy_inspect.c	inspect: TLS terminated (or plain HTTP), per request
 *	  proxy_h2.c		h2: an inspected connection whose both sides chose
 *				HTTP/2 (inspect hands it over), per stream
 *	proxy_request.c		beneath the request engines: the checks, injection,
 *				redaction and records of one request (proxy_request.h)
 *	proxy_conn_close.c	below them all: the current policy before each
 *				decision (proxy_conn_current), the end (close, audit)
 *	proxy_conn_limit.c	per-sandbox limits
 *	proxy_pool.c		the idle upstream connections a mode keeps for later
 *				connections (inspect; one pool per worker: proxy_pool.h)
 * Each calls only down this list (a mode's callbacks are reached through struct
 * proxy_mode), with one exception: inspect dials again through proxy_conn_dial()
 * when an upstream it took from the pool closed before answering anything (as the
 * core would have dialled it in the first place).  Nothing here is used outside
 * these files, but for the workers (proxy.c starts them: the first prototypes
 * below).
 *
 * A connection moves through the states below.  After PC_DECIDED the decision's
 * mode takes over: it dials (PC_RESOLVE, PC_CONNECT; inspect with a TLS bufferevent
 * upstream, its handshake towards the VM in parallel) and then relays (PC_RELAY) or
 * serves HTTP (PC_INSPECT); the peeked bytes stay in the client's input buffer
 * until the mode consumes them (the relay replays them, inspection hands them to
 * OpenSSL).
 */
#ifndef AIRLOCK_PROXY_PATH_H
#define AIRLOCK_PROXY_PATH_H

#include <sys/queue.h>
#include <sys/time.h>

#include <stdint.h>

#include "hostname.h"
#include "netaddr.h"
#include "policy.h"
#include "proxy_globals.h"
#include "proxy_registry.h"
#include "proxy_peek.h"

struct bufferevent;
struct event;
struct evbuffer;
struct evconnlistener;
struct event_base;
struct evdns_base;
struct evutil_addrinfo;

/* proxy_conn.c: the workers, the path's one face to the core (proxy.c) */
struct proxy_worker;
/*
 * Starts accepting on the proxy listener fd in this worker's event base.
 * evdns is the worker's resolver (host's /etc/hosts + resolv.conf).
 */
struct proxy_worker *proxy_worker_new(struct event_base *base, int listen_fd,
	    struct evdns_base *evdns);
void	proxy_worker_free(struct proxy_worker *w);
/*
 * Closes this worker's live connections that the sandbox's current policy no longer
 * allows (called in each worker's thread after a reload).
 */
void	proxy_worker_recheck(struct proxy_worker *w);


/* Timeouts (seconds unless said otherwise). */
#define PROXY_PEEK_QUIET_MS	300	/* nothing sent yet: server speaks first (raw) */
#define PROXY_PEEK_DEADLINE	10	/* a partial ClientHello / request head */
#define PROXY_CONNECT_TIMEOUT	10	/* resolve + TCP connect upstream */
#define PROXY_IDLE_TIMEOUT	300	/* no byte either way */
/* Backpressure: stop reading a side when the other's output holds this much. */
#define PROXY_RELAY_HIGH	(256 * 1024)
#define PROXY_RELAY_LOW		(64 * 1024)
#define PROXY_HOST_ADDRS_MAX	64

enum proxy_conn_state {
	PC_PEEK = 0,		/* reading the first bytes (client input buffered) */
	PC_DECIDED,		/* allowed; the policy said splice */
	PC_RESOLVE,		/* evdns_getaddrinfo outstanding */
	PC_CONNECT,		/* TCP connect to the pinned address outstanding */
	PC_RELAY,		/* splicing bytes both ways */
	PC_INSPECT,		/* TLS terminated: HTTP requests (proxy_inspect.c) */
};

struct proxy_conn;
struct evdns_getaddrinfo_request;

/*
 * An outstanding lookup of the dial.  The callback gets the ticket, not the
 * connection: a connection closed mid-lookup clears pt_conn and cancels
 * (proxy_conn_dial_cancel, at the close), and the callback (run at once by
 * evdns_getaddrinfo_cancel() or later) then only frees the ticket.
 */
struct proxy_dns_ticket {
	struct proxy_conn			*pt_conn;
	struct evdns_getaddrinfo_request	*pt_req;
	int					 pt_done;
};
struct proxy_inspect;
struct proxy_h2;
struct proxy_pool;
struct proxy_tls_check;
struct policy_verdict;
struct ssl_ctx_st;

/*
 * What an allowed connection does once decided.  proxy_conn_decide() picks the
 * mode and calls pm_start; the dial and the core call the mode only through these.
 */
struct proxy_mode {
	const char	*pm_name;	/* "splice", "inspect", "h2" */
	/*
	 * c was allowed: get ready.  0: the core dials (proxy_conn_dial()); 1: the
	 * mode has its upstream already (an idle pooled connection, proxy_pool.h);
	 * -1: c was closed.  NULL for h2, which inspect hands a connection over to.
	 */
	int		(*pm_start)(struct proxy_conn *c);
	/*
	 * The unconnected upstream bufferevent the dial connects (under NULL), or
	 * the one the mode runs over under, a tunnel through an upstream proxy that
	 * is up (proxy_conn_tunnel.c): under itself, or a new one that owns under
	 * and reports BEV_EVENT_CONNECTED on its own (inspect: once TLS verified).
	 * NULL: out of memory (under is still the caller's).  The member is NULL
	 * for a mode that takes the dial's socket (or the tunnel) as it is.
	 */
	struct bufferevent *(*pm_server_bev)(struct proxy_conn *c,
			    struct bufferevent *under);
	/*
	 * The dial's event on it: connected (inspect: TLS verified too) or failed;
	 * a failure the dial itself names (the upstream proxy's) is in pc_dial_why.
	 */
	void		(*pm_server_event)(struct proxy_conn *c, short what);
	/* After a reload: 0 if c may go on under verdict v (same mode), else -1. */
	int		(*pm_recheck)(struct proxy_conn *c,
			    const struct policy_verdict *v);
	/*
	 * c ends cleanly (no denial, no reset), before its sockets are closed: the
	 * mode may keep its upstream for a later connection (it takes pc_server
	 * and sets it NULL).  NULL: never kept.
	 */
	void		(*pm_pool)(struct proxy_conn *c);
	/* c is being freed: the mode's own state goes (NULL-safe, never started). */
	void		(*pm_free)(struct proxy_conn *c);
	/* The bytes_per_second pause ended (proxy_limit_bytes): read again. */
	void		(*pm_resume)(struct proxy_conn *c);
};
extern const struct proxy_mode proxy_mode_splice;	/* proxy_conn_relay.c */
extern const struct proxy_mode proxy_mode_inspect;	/* proxy_inspect.c */
extern const struct proxy_mode proxy_mode_h2;		/* proxy_h2.c */

struct proxy_conn {
	TAILQ_ENTRY(proxy_conn) pc_entry;
	struct proxy_worker	*pc_worker;
	enum proxy_conn_state	 pc_state;
	uint64_t		 pc_id;
	struct proxy_sandbox	*pc_sandbox;	/* referenced */
	struct proxy_policy	*pc_policy;	/* the policy of c's last decision,
						   referenced (see proxy_conn_current) */
	struct bufferevent	*pc_client;	/* owns the VM's socket */
	struct bufferevent	*pc_server;	/* owns the upstream socket */
	struct event		*pc_timer;	/* peek / connect / idle timer */
	struct event		*pc_pause;	/* bytes_per_second pause */
	struct proxy_dns_ticket	*pc_dns;	/* outstanding lookup, or NULL */
	const struct proxy_mode	*pc_mode;	/* once decided, else NULL */
	struct proxy_inspect	*pc_inspect;	/* inspect mode's state (its own) */
	struct proxy_h2		*pc_h2;		/* h2 mode's state (its own) */

	struct netaddr		 pc_src;
	uint16_t		 pc_sport;
	struct netaddr		 pc_dst;		/* the original destination */
	uint16_t		 pc_dport;
	struct netaddr		 pc_upstream;		/* the pinned address (the
							   proxy's, with pc_via) */
	char			 pc_name[HOSTNAME_MAX + 1]; /* mapped name, or "" */
	int			 pc_by_addr;	/* dst not in the mapped pool */
	/* what the VM asked for, kept for a denial's record only (owned) */
	char			*pc_asked_sni;	/* the SNI as sent */
	char			*pc_asked_host;	/* the Host of plain HTTP as sent */

	/* the way out, chosen when the dial starts (pc_routed): direct, or through
	   the upstream proxy "HOST:PORT" pc_via (owned) */
	int			 pc_routed;
	char			*pc_via;
	uint16_t		 pc_via_port;
	int			 pc_tunnel;	/* PROXY_TUNNEL_*: where the tunnel is */
	const char		*pc_dial_why;	/* a failure the dial named, or NULL */

	enum policy_proto	 pc_proto;	/* what the first bytes were */
	int			 pc_quiet;	/* the quiet timer has fired */
	int			 pc_no_raw;	/* no raw TCP rule could let it through */
	int			 pc_reloaded;	/* the policy changed since accept */
	/* sent to the VM by proxy_conn_close() after the audit record, or NULL */
	char			*pc_farewell;
	size_t			 pc_farewell_len;
	char			 pc_rule[64];	/* rule id that allowed it */
	/* pc_rule's file (malloc'd; like pc_rule it outlives a reload), or NULL */
	char			*pc_rule_file;
	/* the rule that allowed it, within pc_policy (held): NULL for none */
	const struct policy_rule *pc_prule;
	int			 pc_would_deny;	/* report mode */
	int			 pc_approved;	/* let through by an operator's
						   --once/--for grant */
	char			 pc_wd_reason[32];
	enum policy_tls		 pc_tls;
	struct policy_limits	 pc_limits;	/* copied at decision and recheck */

	struct timeval		 pc_start;
	uint64_t		 pc_dial_t0;	/* proxy_stats_now_us() at connect */
	struct timeval		 pc_last;	/* last byte either way */
	uint64_t		 pc_up;		/* VM -> origin */
	uint64_t		 pc_down;	/* origin -> VM */
	int			 pc_client_eof;
	int			 pc_server_eof;
	int			 pc_paused;	/* rate limit: reads held */
	int			 pc_counted;	/* ps_conns_live incremented */
	/* its upstream came from the pool; that one failed and another was dialled */
	int			 pc_reused;
	int			 pc_retried;
};

TAILQ_HEAD(proxy_conn_list, proxy_conn);

/* A closed connection's socket kept a moment to read what the VM still sends. */
struct proxy_linger {
	TAILQ_ENTRY(proxy_linger) pl_entry;
	struct proxy_worker	*pl_worker;
	struct event		*pl_ev;
	int			 pl_fd;		/* a dup: the bufferevent's is closed */
	struct timeval		 pl_until;
};
TAILQ_HEAD(proxy_linger_list, proxy_linger);

struct proxy_worker {
	struct event_base	*pw_base;
	struct evdns_base	*pw_dns;
	struct evconnlistener	*pw_listener;
	struct proxy_conn_list	 pw_conns;
	struct proxy_linger_list pw_lingers;	/* proxy_conn_close.c */
	/* the host's own addresses: the floor for upstream dials (refreshed on recheck) */
	struct netaddr		 pw_host[PROXY_HOST_ADDRS_MAX];
	size_t			 pw_nhost;
	/* inspect mode's TLS contexts (proxy_tls.c): towards the VM, the origin */
	struct ssl_ctx_st	*pw_tls_in;
	struct ssl_ctx_st	*pw_tls_out;
	/* idle upstream connections of this thread (proxy_pool.h), NULL: none kept */
	struct proxy_pool	*pw_pool;
};

/* proxy_conn_close.c */
/*
 * Ends c: writes its audit record (a "deny" with reason when reason is not NULL,
 * else a "connect"), resets the VM's socket for a denial (rst), frees c.
 */
void	proxy_conn_close(struct proxy_conn *c, const char *reason, int rst);
/*
 * Brings c under the sandbox's current policy before a decision (peek, dial,
 * resolve, relay start, and every live connection after a reload): a connection
 * never goes on under a policy older than the one in force.  If the policy changed
 * since c's last decision, c is checked against the new one (before its peek is
 * decided: may any protocol still reach the destination).  0: c goes on with
 * c->pc_policy current; -1: c was closed (sandbox_removed, policy_reload).
 */
int	proxy_conn_current(struct proxy_conn *c);
/* The policy question for c's destination (name or address, port) as proto. */
void	proxy_conn_query(const struct proxy_conn *c, enum policy_proto proto,
	    struct policy_query *q);
/*
 * Would any protocol be allowed to c's destination under p?  NULL, or the reason a
 * name, port or address that no rule opens is refused at once (before its bytes).
 */
const char *proxy_conn_precheck(struct proxy_conn *c, const struct policy *p);
/*
 * c's rule is now r (within the policy c holds; NULL: none): pc_prule, and the
 * names its records carry, pc_rule and pc_rule_file (kept when r is NULL).
 */
void	proxy_conn_rule(struct proxy_conn *c, const struct policy_rule *r);
/* Closes w's lingering sockets at once (worker shutdown). */
void	proxy_conn_linger_free(struct proxy_worker *w);
/* Drops an outstanding lookup of the dial (c is going away). */
void	proxy_conn_dial_cancel(struct proxy_conn *c);
/*
 * What a VM asked for, as it sent it, for an audit field: at most PROXY_ASKED_MAX
 * bytes of p[0..n-1] (a NUL byte shown as '?'; the audit writer escapes the rest).
 * A copy to free, or NULL.
 */
#define PROXY_ASKED_MAX	255
char	*proxy_asked_dup(const void *p, size_t n);
/* "ip:port" into buf. */
const char *proxy_conn_addrport(const struct netaddr *a, uint16_t port, char *buf,
	    size_t len);

/* proxy_conn_dial.c */
/*
 * Resolves c's name (or takes its address), checks, connects; or, with an upstream
 * proxy in force (proxy_upstream_route()), resolves and checks the proxy's name and
 * goes on in proxy_conn_tunnel().  Closes c on failure.
 */
void	proxy_conn_dial(struct proxy_conn *c);
/*
 * Which answer is acceptable: 0 and *why NULL for a usable address, else -1 and *why
 * the reason code ("address_in_floor", "private_address").
 */
int	proxy_conn_addr_check(const struct proxy_worker *w,
	    const struct policy_rule *rule, const struct netaddr *a, const char **why);
/* Fills w's host address list (its IPv4 addresses: SIOCGIFCONF).  0 or -1. */
int	proxy_conn_host_addrs(struct proxy_worker *w);

/* proxy_conn_tunnel.c */
#define PROXY_TUNNEL_CONNECTING	1	/* TCP to the proxy */
#define PROXY_TUNNEL_ASKED	2	/* CONNECT sent, its answer awaited */
#define PROXY_TUNNEL_UP		3	/* 2xx: the mode has the tunnel */
/*
 * c's upstream proxy is at c->pc_upstream (checked), port pc_via_port: connects to
 * it, asks for a tunnel to c's destination (CONNECT NAME:PORT, or ADDR:PORT for a
 * connection decided on its address; Proxy-Authorization from the vault when the
 * route names a secret), and on a 2xx hands the tunnel to c's mode as the dial
 * hands it a connected socket.  A failure goes to the mode's pm_server_event with
 * pc_dial_why (upstream_proxy_unreachable, _refused, _auth).  May close c.
 */
void	proxy_conn_tunnel(struct proxy_conn *c);

/* proxy_conn_relay.c */
/*
 * c's upstream is connected (splice), or an inspected connection switched
 * protocols: relay what both inputs hold and then every byte until both sides
 * end, under the relay's limits (bytes_per_second, idle timeout).
 */
void	proxy_conn_relay_start(struct proxy_conn *c);
/* Re-evaluates which sides may read (EOF, backpressure, rate pause). */
void	proxy_conn_relay_update(struct proxy_conn *c);
/*
 * Appends n bytes that may hold a secret (a head with an injected credential, a
 * CONNECT with Proxy-Authorization) to o: in a chain of their own, wiped when the
 * bytes were sent or the buffer is freed, never in libevent's reused chains.  As
 * evbuffer_add().
 */
int	proxy_evbuffer_add_secret(struct evbuffer *o, const void *p, size_t n);
/*
 * The same, without the stack wipe that follows each add (the output callback's
 * SSL_write() may leave plaintext below): for a loop of adds, which then calls
 * proxy_stack_burn() once.
 */
int	proxy_evbuffer_add_wiped(struct evbuffer *o, const void *p, size_t n);
void	proxy_stack_burn(void);

/* proxy_inspect.c */
/*
 * Test seam (tests/fuzz/fuzz_inspect.c; never called by the daemon): c's inspect
 * engine over in-memory vm and origin bufferevents, as after both handshakes.
 */
int	proxy_inspect_attach_test(struct proxy_conn *c, struct bufferevent *vm,
	    struct bufferevent *origin);

/* proxy_h2.c */
/* Does the ClientHello buffered in c's client input offer h2?  1 or 0. */
int	proxy_h2_offered(struct proxy_conn *c);
/*
 * The VM's handshake chose h2 (inspect mode's, which hands c over; its verified
 * upstream chose h2, or http/1.1 or no ALPN: its streams are then translated into
 * HTTP/1.1 exchanges): the HTTP/2 engine takes c (pc_mode becomes proxy_mode_h2)
 * and the upstream SSL reports to a copy of tc.  0, or -1 (nothing was taken: c
 * is still inspect's).
 */
int	proxy_h2_start(struct proxy_conn *c, const struct proxy_tls_check *tc);
/*
 * Test seam (tests/fuzz/fuzz_h2.c), as proxy_inspect_attach_test; h1: the origin
 * speaks HTTP/1.1 (the engine translates).
 */
int	proxy_h2_attach_test(struct proxy_conn *c, struct bufferevent *vm,
	    struct bufferevent *origin, int h1);

/* proxy_conn_limit.c: each sandbox's own buckets (struct proxy_sandbox) */
/* Takes one new-connection token of ps under limit l.  0: allowed, -1: over. */
int	proxy_limit_conn_take(struct proxy_sandbox *ps, const struct policy_limits *l);
/* One request of ps under limit l (requests_per_second).  0 or -1. */
int	proxy_limit_request_take(struct proxy_sandbox *ps,
	    const struct policy_limits *l);
/*
 * Charges n bytes c moved (either way) to its sandbox's bytes_per_second.  When the
 * bucket is overdrawn c's reads pause (pc_paused, which each mode checks before
 * enabling a read) until the debt is repaid, then the mode's pm_resume runs.
 * Every byte a mode moves goes through here, in every mode.
 */
void	proxy_limit_bytes(struct proxy_conn *c, size_t n);

#endif
