/*
 * proxy/proxy_metrics.c: airlockd's Prometheus metrics (proxy_metrics.h).
 *
 * The counters are the ones the connection path, DNS and the audit writer keep
 * anyway (proxy_registry.h's, proxy_stats.h's, audit_counts()); a scrape copies
 * each sandbox's under the registry's read lock and writes the text from the copy,
 * so a family's samples stay together.  Label values are escaped as the text format
 * says (backslash, quote, newline), though sandbox names and reason codes never
 * need it.  Served two ways, both reachable from the host alone: the control
 * socket's "metrics" command (0600, root or the daemon's user; `airlock metrics`),
 * and with metrics_listen an HTTP GET /metrics on a loopback address (the loader
 * refuses any other), answered by libevent's evhttp on the main thread.
 */
#include <sys/socket.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

#include "audit.h"
#include "log.h"
#include "netaddr.h"
#include "version.h"
#include "proxy_core.h"
#include "proxy_dns_codec.h"
#include "proxy_globals.h"
#include "proxy_metrics.h"
#include "proxy_netwatch.h"
#include "proxy_registry.h"
#include "proxy_stats.h"
#include "proxy_syslog.h"

/* One sandbox as a scrape saw it. */
struct metrics_sb {
	char			ms_name[SANDBOX_NAME_MAX + 1];
	uint64_t		ms_live, ms_allowed, ms_denied, ms_up, ms_down;
	uint64_t		ms_dns_queries;
	struct proxy_sb_stats	ms_st;
};

struct metrics_snap {
	struct metrics_sb	*sn_v;
	size_t			 sn_n, sn_cap;
	int			 sn_failed;
};

static int metrics_fd = -1;
static struct evhttp *metrics_http;

static void
metrics_copy_sb(struct proxy_sandbox *ps, void *arg)
{
	struct metrics_snap *sn = arg;
	struct metrics_sb *m, *v;
	size_t i;

	if (sn->sn_n == sn->sn_cap) {
		size_t cap = sn->sn_cap ? sn->sn_cap * 2 : 16;

		if ((v = realloc(sn->sn_v, cap * sizeof(*v))) == NULL) {
			sn->sn_failed = 1;
			return;
		}
		sn->sn_v = v;
		sn->sn_cap = cap;
	}
	m = &sn->sn_v[sn->sn_n++];
	memset(m, 0, sizeof(*m));
	snprintf(m->ms_name, sizeof(m->ms_name), "%s", ps->ps_rec.sb_name);
	m->ms_live = proxy_sandbox_counter(&ps->ps_conns_live);
	m->ms_allowed = proxy_sandbox_counter(&ps->ps_allowed);
	m->ms_denied = proxy_sandbox_counter(&ps->ps_denied);
	m->ms_up = proxy_sandbox_counter(&ps->ps_bytes_up);
	m->ms_down = proxy_sandbox_counter(&ps->ps_bytes_down);
	m->ms_dns_queries = proxy_sandbox_counter(&ps->ps_dns_queries);
	for (i = 0; i < PR__COUNT; i++)
		m->ms_st.ss_reasons[i] = proxy_stats_get(&ps->ps_stats.ss_reasons[i]);
	for (i = 0; i < PROXY_STATS_DNS_N; i++)
		m->ms_st.ss_dns[i] = proxy_stats_get(&ps->ps_stats.ss_dns[i]);
	m->ms_st.ss_requests_allowed =
	    proxy_stats_get(&ps->ps_stats.ss_requests_allowed);
	m->ms_st.ss_requests_denied =
	    proxy_stats_get(&ps->ps_stats.ss_requests_denied);
	m->ms_st.ss_exfil = proxy_stats_get(&ps->ps_stats.ss_exfil);
	for (i = 0; i < sizeof(m->ms_st.ss_pool) / sizeof(m->ms_st.ss_pool[0]); i++)
		m->ms_st.ss_pool[i] = proxy_stats_get(&ps->ps_stats.ss_pool[i]);
}

/* A label value, escaped (text format: \\, \", \n). */
static void
metrics_label(FILE *f, const char *s)
{
	for (; *s != '\0'; s++) {
		if (*s == '\\' || *s == '"')
			fputc('\\', f);
		if (*s == '\n') {
			fputs("\\n", f);
			continue;
		}
		fputc(*s, f);
	}
}

static void
metrics_head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{sandbox="S"[,LABEL="V"]} N */
static void
metrics_sb_line(FILE *f, const char *name, const char *sb, const char *label,
    const char *value, uint64_t n)
{
	fprintf(f, "%s{sandbox=\"", name);
	metrics_label(f, sb);
	if (label != NULL) {
		fprintf(f, "\",%s=\"", label);
		metrics_label(f, value);
	}
	fprintf(f, "\"} %llu\n", (unsigned long long)n);
}

/* Two samples of one family for sandbox sb: LABEL="a" na, LABEL="b" nb. */
static void
metrics_sb_pair(FILE *f, const char *name, const char *sb, const char *label,
    const char *a, uint64_t na, const char *b, uint64_t nb)
{
	metrics_sb_line(f, name, sb, label, a, na);
	metrics_sb_line(f, name, sb, label, b, nb);
}

static void
metrics_hist(FILE *f, enum proxy_hist h, const char *name, const char *help)
{
	struct proxy_hist_snap s;
	size_t b;

	proxy_hist_read(h, &s);
	metrics_head(f, name, "histogram", help);
	for (b = 0; b < PROXY_HIST_BUCKETS; b++)
		fprintf(f, "%s_bucket{le=\"%g\"} %llu\n", name,
		    (double)proxy_hist_bounds_us[b] / 1e6,
		    (unsigned long long)s.hs_le[b]);
	fprintf(f, "%s_bucket{le=\"+Inf\"} %llu\n", name,
	    (unsigned long long)s.hs_count);
	fprintf(f, "%s_sum %.6f\n%s_count %llu\n", name, (double)s.hs_sum_us / 1e6,
	    name, (unsigned long long)s.hs_count);
}

static void
metrics_write(FILE *f, const struct metrics_snap *sn)
{
	const struct metrics_sb *m;
	struct audit_counts ac = { 0, 0, 0 };
	struct proxy_syslog_counts sc;
	size_t i, k;

	metrics_head(f, "airlock_build_info", "gauge", "airlockd's version.");
	fprintf(f, "airlock_build_info{version=\"%s\"} 1\n", AIRLOCK_VERSION);
	metrics_head(f, "airlock_workers", "gauge", "Worker threads.");
	fprintf(f, "airlock_workers %u\n", proxy_threads_count());
	metrics_head(f, "airlock_sandboxes", "gauge", "Sandboxes airlockd serves.");
	fprintf(f, "airlock_sandboxes %zu\n", sn->sn_n);

	metrics_head(f, "airlock_connections_total", "counter",
	    "Connections of a sandbox's VM, by decision (a denial, or one allowed "
	    "and closed).");
	for (i = 0; i < sn->sn_n; i++) {
		m = &sn->sn_v[i];
		metrics_sb_pair(f, "airlock_connections_total", m->ms_name,
		    "decision", "allow", m->ms_allowed, "deny", m->ms_denied);
	}
	metrics_head(f, "airlock_connections_live", "gauge",
	    "Connections of a sandbox's VM open now.");
	for (i = 0; i < sn->sn_n; i++)
		metrics_sb_line(f, "airlock_connections_live", sn->sn_v[i].ms_name,
		    NULL, NULL, sn->sn_v[i].ms_live);
	metrics_head(f, "airlock_requests_total", "counter",
	    "Inspected HTTP requests (HTTP/2 streams), by decision.");
	for (i = 0; i < sn->sn_n; i++) {
		m = &sn->sn_v[i];
		metrics_sb_pair(f, "airlock_requests_total", m->ms_name, "decision",
		    "allow", m->ms_st.ss_requests_allowed, "deny",
		    m->ms_st.ss_requests_denied);
	}
	metrics_head(f, "airlock_denials_total", "counter",
	    "Denials (connections, requests, DNS) by reason code; a reason not "
	    "seen yet has no sample.");
	for (i = 0; i < sn->sn_n; i++)
		for (k = 0; k < PR__COUNT; k++)
			if (sn->sn_v[i].ms_st.ss_reasons[k] > 0)
				metrics_sb_line(f, "airlock_denials_total",
				    sn->sn_v[i].ms_name, "reason",
				    proxy_reasons[k].ri_code,
				    sn->sn_v[i].ms_st.ss_reasons[k]);
	metrics_head(f, "airlock_exfil_events_total", "counter",
	    "Exfil records: a placeholder refused where it may not go, or a secret's "
	    "value redacted.");
	for (i = 0; i < sn->sn_n; i++)
		metrics_sb_line(f, "airlock_exfil_events_total", sn->sn_v[i].ms_name,
		    NULL, NULL, sn->sn_v[i].ms_st.ss_exfil);
	metrics_head(f, "airlock_bytes_total", "counter",
	    "Bytes airlock passed on, towards the origin (up) or the VM (down).");
	for (i = 0; i < sn->sn_n; i++) {
		m = &sn->sn_v[i];
		metrics_sb_pair(f, "airlock_bytes_total", m->ms_name, "direction",
		    "up", m->ms_up, "down", m->ms_down);
	}
	metrics_head(f, "airlock_dns_queries_total", "counter",
	    "DNS queries from a sandbox's VM.");
	for (i = 0; i < sn->sn_n; i++)
		metrics_sb_line(f, "airlock_dns_queries_total", sn->sn_v[i].ms_name,
		    NULL, NULL, sn->sn_v[i].ms_dns_queries);
	metrics_head(f, "airlock_dns_answers_total", "counter",
	    "What policy DNS told a sandbox's VM, by outcome.");
	for (i = 0; i < sn->sn_n; i++)
		for (k = 0; k <= PROXY_DNS_DROP && k < PROXY_STATS_DNS_N; k++)
			metrics_sb_line(f, "airlock_dns_answers_total",
			    sn->sn_v[i].ms_name, "outcome",
			    proxy_dns_outcome_str((enum proxy_dns_outcome)k),
			    sn->sn_v[i].ms_st.ss_dns[k]);

	metrics_head(f, "airlock_upstream_pool_lookups_total", "counter",
	    "Inspected connections that looked for an idle pooled upstream "
	    "connection: found one (hit) or dialled (miss).");
	for (i = 0; i < sn->sn_n; i++) {
		m = &sn->sn_v[i];
		metrics_sb_pair(f, "airlock_upstream_pool_lookups_total", m->ms_name,
		    "result", "hit", m->ms_st.ss_pool[PPU_HIT], "miss",
		    m->ms_st.ss_pool[PPU_MISS]);
	}
	metrics_head(f, "airlock_upstream_pool_retries_total", "counter",
	    "Pooled upstream connections that closed before answering, replaced "
	    "by a new dial.");
	for (i = 0; i < sn->sn_n; i++)
		metrics_sb_line(f, "airlock_upstream_pool_retries_total",
		    sn->sn_v[i].ms_name, NULL, NULL,
		    sn->sn_v[i].ms_st.ss_pool[PPU_RETRY]);
	metrics_head(f, "airlock_upstream_pool_idle", "gauge",
	    "Idle upstream connections in the pools now (all worker threads).");
	fprintf(f, "airlock_upstream_pool_idle %llu\n",
	    (unsigned long long)proxy_stats_pool_idle_now());
	metrics_head(f, "airlock_upstream_pool_closed_total", "counter",
	    "Idle pooled upstream connections closed, by why.");
	for (k = 0; k < PPC__COUNT; k++)
		fprintf(f, "airlock_upstream_pool_closed_total{reason=\"%s\"} %llu\n",
		    proxy_pool_close_names[k],
		    (unsigned long long)proxy_stats_pool_closes((enum proxy_pool_close)k));

	metrics_hist(f, PH_DIAL, "airlock_dial_duration_seconds",
	    "Upstream connects, to the TCP handshake's end (inspect: to the "
	    "verified TLS handshake's).");
	metrics_hist(f, PH_HANDSHAKE, "airlock_tls_handshake_duration_seconds",
	    "The VM's TLS handshake with airlock on inspected connections.");
	metrics_hist(f, PH_REQUEST, "airlock_request_duration_seconds",
	    "Inspected requests, from the head to the record (the response's end).");

	metrics_head(f, "airlock_reloads_total", "counter",
	    "Loads of every sandbox's policy (start, reload, SIGHUP), by whether a "
	    "policy failed.");
	fprintf(f, "airlock_reloads_total{result=\"ok\"} %llu\n",
	    (unsigned long long)(proxy_stats_reloads(0) - proxy_stats_reloads(1)));
	fprintf(f, "airlock_reloads_total{result=\"failed\"} %llu\n",
	    (unsigned long long)proxy_stats_reloads(1));
	metrics_head(f, "airlock_reload_generation", "gauge",
	    "How many loads the configuration in force has been through.");
	fprintf(f, "airlock_reload_generation %llu\n",
	    (unsigned long long)proxy_stats_reloads(0));

	if (proxy_audit() != NULL)
		audit_counts(proxy_audit(), &ac);
	metrics_head(f, "airlock_audit_records", "gauge",
	    "The audit chain's last seq.");
	fprintf(f, "airlock_audit_records %lld\n", ac.ac_seq);
	metrics_head(f, "airlock_audit_write_errors_total", "counter",
	    "Audit writes or syncs that failed (airlockd refuses traffic meanwhile).");
	fprintf(f, "airlock_audit_write_errors_total %lld\n", ac.ac_errors);
	metrics_head(f, "airlock_audit_records_suppressed_total", "counter",
	    "Denials counted into an aggregate instead of a record of their own.");
	fprintf(f, "airlock_audit_records_suppressed_total %lld\n",
	    ac.ac_suppressed);
	if (proxy_syslog_counts(&sc) == 0) {
		static const char *const names[][3] = {
			{ "airlock_audit_syslog_up", "gauge", "1 while the "
			    "audit.syslog collector is connected, else 0." },
			{ "airlock_audit_syslog_sent_total", "counter", "Audit "
			    "records handed to the syslog collector's socket." },
			{ "airlock_audit_syslog_dropped_total", "counter", "Audit "
			    "records the syslog sink dropped (its queue full)." },
			{ "airlock_audit_syslog_queued", "gauge", "Audit records "
			    "waiting for the syslog collector." },
			{ "airlock_audit_syslog_failures_total", "counter",
			    "Connections to the syslog collector that failed or "
			    "broke." },
		};
		long long v[] = { sc.sc_up, sc.sc_sent, sc.sc_dropped,
		    sc.sc_queued, sc.sc_failures };
		size_t si;

		for (si = 0; si < sizeof(v) / sizeof(v[0]); si++) {
			metrics_head(f, names[si][0], names[si][1], names[si][2]);
			fprintf(f, "%s %lld\n", names[si][0], v[si]);
		}
	}
	metrics_head(f, "airlock_netwatch_alarms_total", "counter",
	    "Times netwatch found airlock's nftables tables changed or gone.");
	fprintf(f, "airlock_netwatch_alarms_total %llu\n",
	    (unsigned long long)proxy_netwatch_count(0));
	metrics_head(f, "airlock_rules_reinstalled_total", "counter",
	    "Times netwatch reinstalled airlock's nftables tables.");
	fprintf(f, "airlock_rules_reinstalled_total %llu\n",
	    (unsigned long long)proxy_netwatch_count(1));
}

char *
proxy_metrics_text(void)
{
	struct metrics_snap sn = { NULL, 0, 0, 0 };
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	if (proxy_sandbox_foreach(metrics_copy_sb, &sn) == -1 || sn.sn_failed) {
		free(sn.sn_v);
		return NULL;
	}
	if ((f = open_memstream(&text, &len)) == NULL) {
		free(sn.sn_v);
		return NULL;
	}
	metrics_write(f, &sn);
	free(sn.sn_v);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

int
proxy_metrics_bind(char *err, size_t errlen)
{
	const struct airlock_config *cfg = proxy_config();
	struct sockaddr_storage ss;
	socklen_t sslen;
	char a[NETADDR_STRLEN];
	int fd, one = 1;

	if (!cfg->metrics_on)
		return 0;
	netaddr_fmt(&cfg->metrics_addr, a, sizeof(a));
	if (netaddr_to_sockaddr(&cfg->metrics_addr, cfg->metrics_port, &ss,
	    &sslen) == -1 ||
	    (fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0)) == -1) {
		snprintf(err, errlen, "metrics_listen %s:%u: %s", a,
		    cfg->metrics_port, strerror(errno));
		return -1;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1 ||
	    bind(fd, (struct sockaddr *)&ss, sslen) == -1 || listen(fd, 16) == -1) {
		snprintf(err, errlen, "metrics_listen %s:%u: %s", a,
		    cfg->metrics_port, strerror(errno));
		close(fd);
		return -1;
	}
	metrics_fd = fd;
	return 0;
}

static void
metrics_http_cb(struct evhttp_request *req, void *arg)
{
	struct evbuffer *out;
	const char *path = evhttp_request_get_uri(req);
	char *text;

	if (evhttp_request_get_command(req) != EVHTTP_REQ_GET) {
		evhttp_send_error(req, 405, "GET only");
		return;
	}
	if (path == NULL || (strcmp(path, "/metrics") != 0 &&
	    strncmp(path, "/metrics?", 9) != 0)) {
		evhttp_send_error(req, 404, "/metrics only");
		return;
	}
	if ((text = proxy_metrics_text()) == NULL ||
	    (out = evbuffer_new()) == NULL) {
		free(text);
		evhttp_send_error(req, 500, "metrics unavailable");
		return;
	}
	evbuffer_add(out, text, strlen(text));
	free(text);
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
	    "text/plain; version=0.0.4; charset=utf-8");
	evhttp_send_reply(req, 200, "OK", out);
	evbuffer_free(out);
}

int
proxy_metrics_serve(struct event_base *base)
{
	if (metrics_fd == -1)
		return 0;
	if ((metrics_http = evhttp_new(base)) == NULL)
		return -1;
	/* A scraper sends a short GET: keep whatever else at bay. */
	evhttp_set_max_headers_size(metrics_http, 8192);
	evhttp_set_max_body_size(metrics_http, 0);
	evhttp_set_timeout(metrics_http, 10);
	evhttp_set_allowed_methods(metrics_http, EVHTTP_REQ_GET);
	evhttp_set_gencb(metrics_http, metrics_http_cb, NULL);
	if (evhttp_accept_socket_with_handle(metrics_http, metrics_fd) == NULL) {
		evhttp_free(metrics_http);
		metrics_http = NULL;
		return -1;
	}
	metrics_fd = -1;	/* the listener owns it now */
	return 0;
}

void
proxy_metrics_stop(void)
{
	if (metrics_http != NULL)
		evhttp_free(metrics_http);
	metrics_http = NULL;
	if (metrics_fd != -1)
		close(metrics_fd);
	metrics_fd = -1;
}
