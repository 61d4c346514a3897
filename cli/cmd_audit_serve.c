/*
 * cli/cmd_audit_serve.c: `airlock audit serve`, a read-only web view of audit files
 * for reviewers (docs/AUDIT.md, "The web view"), served by libevent's evhttp from
 * this process, on a loopback address only.
 *
 * What it guards against, since every local user can reach loopback and any page
 * the reviewer's browser has open may send it requests: the API answers only with
 * the random token this start printed (serve_token_ok()); it answers GET (and
 * HEAD) only and writes nothing anywhere; a Host
 * header other than the listening address or localhost is refused (a hostile
 * name rebound to 127.0.0.1 cannot read the log); every answer carries a
 * Content-Security-Policy of 'self' with no inline script, nosniff, no referrer and
 * no framing; a file is served only by a plain name from the web folder; every
 * parameter is bounded (audit/audit_web.c).  The records are hostile content (a VM
 * chose hosts, paths, SNI): they go out as JSON strings only, and the page
 * (web/app.js) puts them in the document as text, never as markup.
 *
 * The files are indexed once (audit/audit_index.c) and looked at again every half
 * second: appended records are indexed on their own and wake the tail requests
 * waiting for them; any other change reads the files again.
 */
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "audit.h"
#include "cli.h"
#include "file.h"
#include "netaddr.h"
#include "version.h"

#define SERVE_TICK_MS		500
#define SERVE_WAITS_MAX		32	/* tail requests waiting at once */
#define SERVE_LIMIT_DEFAULT	100
#define SERVE_TOP_DEFAULT	20
#define SERVE_EXFIL_RECENT	10
#define SERVE_STATIC_MAX	(4 * 1024 * 1024)
#define SERVE_TAIL_WAIT		20	/* seconds, when the request says none */
#define SERVE_TOKEN_BYTES	32	/* the API's bearer token, random per start */

/* Every answer's headers but Content-Type. */
static const char *const serve_headers[][2] = {
	{ "Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'; "
	  "base-uri 'none'; form-action 'none'; object-src 'none'" },
	{ "X-Content-Type-Options", "nosniff" },
	{ "Referrer-Policy", "no-referrer" },
	{ "X-Frame-Options", "DENY" },
	{ "Cross-Origin-Opener-Policy", "same-origin" },
	{ "Cross-Origin-Resource-Policy", "same-origin" },
};

/* A tail request waiting for records. */
struct serve_wait {
	TAILQ_ENTRY(serve_wait)	 sw_link;
	struct evhttp_request	*sw_req;
	struct audit_web_query	 sw_q;
	time_t			 sw_deadline;	/* CLOCK_MONOTONIC seconds */
};
TAILQ_HEAD(serve_waits, serve_wait);

struct serve {
	char			 sv_token[2 * SERVE_TOKEN_BYTES + 1];
	struct event_base	*sv_base;
	struct evhttp		*sv_http;
	struct audit_index	*sv_ix;
	struct event		*sv_tick;
	struct event		*sv_sigint;
	struct event		*sv_sigterm;
	struct serve_waits	 sv_waits;
	int			 sv_nwaits;
	int			 sv_webfd;	/* the web folder */
	int			 sv_keyed;
	char			 sv_addr[NETADDR_STRLEN];
	int			 sv_v6;
	unsigned int		 sv_port;
};

static time_t
serve_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

static void
serve_reply(struct evhttp_request *req, int code, const char *ctype,
    const char *cache, struct evbuffer *body)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);
	size_t i;

	for (i = 0; i < sizeof(serve_headers) / sizeof(serve_headers[0]); i++)
		evhttp_add_header(h, serve_headers[i][0], serve_headers[i][1]);
	evhttp_add_header(h, "Content-Type", ctype);
	evhttp_add_header(h, "Cache-Control", cache);
	evhttp_send_reply(req, code, NULL, body);
}

/* o as the answer (o is taken). */
static void
serve_json(struct evhttp_request *req, int code, json_t *o)
{
	struct evbuffer *b = evbuffer_new();
	char *text = o != NULL ? json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII) :
	    NULL;

	json_decref(o);
	if (b == NULL || text == NULL) {
		free(text);
		if (b != NULL)
			evbuffer_add_printf(b, "{\"error\":\"out of memory\"}");
		serve_reply(req, 500, "application/json", "no-store", b);
	} else {
		evbuffer_add(b, text, strlen(text));
		free(text);
		serve_reply(req, code, "application/json", "no-store", b);
	}
	if (b != NULL)
		evbuffer_free(b);
}

static void
serve_error(struct evhttp_request *req, int code, const char *msg)
{
	serve_json(req, code, json_pack("{s:s}", "error", msg));
}

/* The status: the files, the records, the chain's verdict. */
static void
api_status(struct serve *sv, struct evhttp_request *req)
{
	static const char *const states[] = { "ok", "empty", "tampered",
	    "unreadable" };
	struct audit_index_status st;
	json_t *o, *files, *v;
	long long recs;
	int i, err;

	audit_index_status(sv->sv_ix, &st);
	if ((files = json_array()) == NULL)
		goto fail;
	for (i = 0; i < audit_index_nfiles(sv->sv_ix); i++) {
		const char *p = audit_index_file(sv->sv_ix, i, &recs, &err);

		if (json_array_append_new(files, json_pack("{s:s, s:I, s:s?}",
		    "path", p, "records", (json_int_t)recs, "error",
		    err != 0 ? strerror(err) : NULL)) == -1)
			goto fail;
	}
	v = json_pack("{s:s, s:s?, s:I, s:I, s:s, s:I, s:I, s:s?, s:s?, s:b}",
	    "state", states[st.ais_state], "path", st.ais_bad_path,
	    "line", (json_int_t)st.ais_bad_line, "n", (json_int_t)st.ais_bad_n,
	    "why", st.ais_why, "first_seq", (json_int_t)st.ais_first_seq,
	    "last_seq", (json_int_t)st.ais_last_seq,
	    "first_prev", st.ais_first_prev[0] != '\0' ? st.ais_first_prev : NULL,
	    "head", st.ais_head[0] != '\0' ? st.ais_head : NULL,
	    "continued", st.ais_first_prev[0] != '\0' &&
	    strcmp(st.ais_first_prev, AUDIT_ZERO_HASH) != 0);
	o = json_pack("{s:s, s:o, s:I, s:I, s:I, s:I, s:o, s:b, s:i}", "version",
	    AIRLOCK_VERSION, "files", files, "records", (json_int_t)st.ais_records,
	    "generation", (json_int_t)st.ais_generation, "rereads",
	    (json_int_t)st.ais_rereads, "pending", (json_int_t)st.ais_pending,
	    "verify", v, "keyed", sv->sv_keyed, "waiting", sv->sv_nwaits);
	serve_json(req, 200, o);
	return;
 fail:
	json_decref(files);
	serve_json(req, 500, NULL);
}

/* Record n as the API gives it: its place, whether it verifies, the record. */
static json_t *
record_json(struct serve *sv, long long n, struct audit_index_rec *keep)
{
	struct audit_index_rec r;
	json_t *o, *doc, *raw;

	if (audit_index_get(sv->sv_ix, n, &r) == -1)
		return NULL;
	doc = json_loadb(r.air_text, r.air_len, JSON_REJECT_DUPLICATES, NULL);
	if (doc != NULL && !json_is_object(doc)) {
		json_decref(doc);
		doc = NULL;
	}
	o = json_pack("{s:I, s:s, s:I, s:b, s:o?}", "n", (json_int_t)n, "file",
	    r.air_path, "line", (json_int_t)r.air_line, "verified",
	    r.air_verified, "record", doc);
	/*
	 * A line that is no JSON object (a broken log) goes out as its text, or,
	 * not UTF-8 either, as a note: such bytes are no JSON string.
	 */
	if (o != NULL && doc == NULL && (raw = json_stringn(r.air_text,
	    r.air_len)) == NULL)
		raw = json_string("(a line that is not UTF-8 text)");
	if (o != NULL && doc == NULL && json_object_set_new(o, "raw", raw) == -1) {
		json_decref(o);
		o = NULL;
	}
	if (keep != NULL)
		*keep = r;
	else
		audit_index_rec_free(&r);
	return o;
}

/* The records of nums[0..n-1] as an array, or NULL. */
static json_t *
records_json(struct serve *sv, const long long *nums, size_t n)
{
	json_t *list = json_array();
	size_t i;

	for (i = 0; list != NULL && i < n; i++)
		if (json_array_append_new(list, record_json(sv, nums[i], NULL)) ==
		    -1) {
			json_decref(list);
			return NULL;
		}
	return list;
}

static int
serve_query(struct evhttp_request *req, unsigned int which,
    struct audit_web_query *q)
{
	const struct evhttp_uri *u = evhttp_request_get_evhttp_uri(req);
	char err[256];

	if (audit_web_query_parse(evhttp_uri_get_query(u), which, q, err,
	    sizeof(err)) == -1) {
		serve_error(req, 400, err);
		return -1;
	}
	return 0;
}

/* A page of the records that pass the filters, with how many do. */
static void
api_records(struct serve *sv, struct evhttp_request *req)
{
	struct audit_web_query q;
	struct audit_filter f;
	long long *nums, *page;
	size_t n, from, cnt;
	long long limit;
	json_t *list;

	if (serve_query(req, AUDIT_WEB_FILTERS | AUDIT_WEB_PAGE, &q) == -1)
		return;
	audit_web_filter(&q, &f);
	if (audit_index_find(sv->sv_ix, &f, 0, &nums, &n) == -1) {
		serve_error(req, 500, strerror(errno));
		return;
	}
	limit = q.awq_limit > 0 ? q.awq_limit : SERVE_LIMIT_DEFAULT;
	from = (size_t)q.awq_offset < n ? (size_t)q.awq_offset : n;
	cnt = n - from < (size_t)limit ? n - from : (size_t)limit;
	/* desc: offset counts from the newest. */
	if (cnt == 0)
		list = json_array();
	else if (q.awq_desc) {
		size_t i;

		page = nums + (n - from - cnt);
		list = json_array();
		for (i = cnt; list != NULL && i > 0; i--)
			if (json_array_append_new(list, record_json(sv, page[i - 1],
			    NULL)) == -1) {
				json_decref(list);
				list = NULL;
			}
	} else
		list = records_json(sv, nums + from, cnt);
	free(nums);
	if (list == NULL) {
		serve_json(req, 500, NULL);
		return;
	}
	serve_json(req, 200, json_pack("{s:I, s:I, s:I, s:s, s:I, s:o}", "total",
	    (json_int_t)n, "offset", (json_int_t)from, "limit", (json_int_t)limit,
	    "order", q.awq_desc ? "desc" : "asc", "records",
	    (json_int_t)audit_index_records(sv->sv_ix), "items", list));
}

/* The "hash" of record n's line, into hash (65 bytes); "" when it has none. */
static void
record_hash(struct serve *sv, long long n, const char *key, char *out)
{
	struct audit_index_rec r;
	json_t *doc = NULL, *v;

	out[0] = '\0';
	if (audit_index_get(sv->sv_ix, n, &r) == -1)
		return;
	if ((doc = json_loadb(r.air_text, r.air_len, 0, NULL)) != NULL &&
	    json_is_string(v = json_object_get(doc, key)) &&
	    strlen(json_string_value(v)) == AUDIT_HASH_HEX)
		memcpy(out, json_string_value(v), AUDIT_HASH_HEX + 1);
	json_decref(doc);
	audit_index_rec_free(&r);
}

/*
 * One record in full and its place in the chain: its seq, prev and hash, and
 * whether prev is the hash of the record before it (or the zero hash, for seq 1).
 */
static void
api_record(struct serve *sv, struct evhttp_request *req)
{
	char prev[AUDIT_HASH_HEX + 1], before[AUDIT_HASH_HEX + 1];
	struct audit_web_query q;
	struct audit_index_rec r;
	json_t *o, *chain, *doc, *seq;
	long long total;

	if (serve_query(req, AUDIT_WEB_RECORD, &q) == -1)
		return;
	if (q.awq_n == 0) {
		serve_error(req, 400, "n: the record's number is needed");
		return;
	}
	total = audit_index_records(sv->sv_ix);
	if (q.awq_n > total) {
		serve_error(req, 404, "no such record");
		return;
	}
	if ((o = record_json(sv, q.awq_n, &r)) == NULL) {
		serve_error(req, 500, strerror(errno));
		return;
	}
	audit_index_rec_free(&r);
	doc = json_object_get(o, "record");
	seq = json_object_get(doc, "seq");
	record_hash(sv, q.awq_n, "prev", prev);
	if (q.awq_n > 1)
		record_hash(sv, q.awq_n - 1, "hash", before);
	else
		snprintf(before, sizeof(before), "%s", AUDIT_ZERO_HASH);
	chain = json_pack("{s:O?, s:s?, s:O?, s:I, s:b, s:I}", "seq", seq, "prev",
	    prev[0] != '\0' ? prev : NULL, "hash", json_object_get(doc, "hash"),
	    "prev_n", (json_int_t)(q.awq_n - 1), "links", prev[0] != '\0' &&
	    strcmp(prev, before) == 0, "of", (json_int_t)total);
	if (chain == NULL || json_object_set_new(o, "chain", chain) == -1) {
		json_decref(o);
		serve_json(req, 500, NULL);
		return;
	}
	serve_json(req, 200, o);
}

static void
api_summary(struct serve *sv, struct evhttp_request *req)
{
	struct audit_web_query q;
	struct evbuffer *b;
	char *text;

	if (serve_query(req, AUDIT_WEB_SUMMARY, &q) == -1)
		return;
	if ((text = audit_index_summary(sv->sv_ix, q.awq_sandbox[0] != '\0' ?
	    q.awq_sandbox : NULL, q.awq_top > 0 ? (size_t)q.awq_top :
	    SERVE_TOP_DEFAULT, SERVE_EXFIL_RECENT)) == NULL ||
	    (b = evbuffer_new()) == NULL) {
		free(text);
		serve_json(req, 500, NULL);
		return;
	}
	evbuffer_add(b, text, strlen(text));
	free(text);
	serve_reply(req, 200, "application/json", "no-store", b);
	evbuffer_free(b);
}

/*
 * Answers a tail request when records after its "after" pass its filters (or
 * when force): 1 if answered, 0 if it waits on.
 */
static int
tail_try(struct serve *sv, struct evhttp_request *req,
    const struct audit_web_query *q, int force)
{
	struct audit_filter f;
	long long *nums, limit, last;
	size_t n, cnt;
	json_t *list;

	/*
	 * Asked after a record the log no longer has (it was read again shorter,
	 * or rotated): answered at once, "last" saying where to go on from.
	 */
	if (q->awq_after > audit_index_records(sv->sv_ix))
		force = 1;
	audit_web_filter(q, &f);
	if (audit_index_find(sv->sv_ix, &f, q->awq_after, &nums, &n) == -1) {
		serve_error(req, 500, strerror(errno));
		return 1;
	}
	if (n == 0 && !force) {
		free(nums);
		return 0;
	}
	limit = q->awq_limit > 0 ? q->awq_limit : AUDIT_WEB_LIMIT_MAX;
	cnt = n < (size_t)limit ? n : (size_t)limit;
	/* Where the next request goes on from: the last record looked at. */
	last = cnt < n ? nums[cnt - 1] : audit_index_records(sv->sv_ix);
	list = records_json(sv, nums, cnt);
	free(nums);
	if (list == NULL) {
		serve_json(req, 500, NULL);
		return 1;
	}
	serve_json(req, 200, json_pack("{s:I, s:b, s:I, s:o}", "last",
	    (json_int_t)last, "more", cnt < n, "records",
	    (json_int_t)audit_index_records(sv->sv_ix), "items", list));
	return 1;
}

/* Records after `after`: at once when there are, else when they come (long poll). */
static void
api_tail(struct serve *sv, struct evhttp_request *req)
{
	struct serve_wait *w;
	struct audit_web_query q;

	if (serve_query(req, AUDIT_WEB_FILTERS | AUDIT_WEB_TAIL, &q) == -1)
		return;
	if (q.awq_wait == -1)
		q.awq_wait = SERVE_TAIL_WAIT;
	if (tail_try(sv, req, &q, q.awq_wait == 0))
		return;
	if (sv->sv_nwaits >= SERVE_WAITS_MAX) {
		serve_error(req, 503, "too many tail requests waiting");
		return;
	}
	if ((w = calloc(1, sizeof(*w))) == NULL) {
		serve_json(req, 500, NULL);
		return;
	}
	w->sw_req = req;
	w->sw_q = q;
	w->sw_deadline = serve_now() + q.awq_wait;
	TAILQ_INSERT_TAIL(&sv->sv_waits, w, sw_link);
	sv->sv_nwaits++;
}

/* Every waiting tail request: answered when records came (or all), else kept. */
static void
tail_wake(struct serve *sv, int changed, int all)
{
	struct serve_wait *w, *next;
	time_t now = serve_now();

	for (w = TAILQ_FIRST(&sv->sv_waits); w != NULL; w = next) {
		next = TAILQ_NEXT(w, sw_link);
		if (!changed && !all && now < w->sw_deadline)
			continue;
		if (all && !changed)
			serve_error(w->sw_req, 503, "the view is stopping");
		else if (!tail_try(sv, w->sw_req, &w->sw_q, all ||
		    now >= w->sw_deadline))
			continue;
		TAILQ_REMOVE(&sv->sv_waits, w, sw_link);
		sv->sv_nwaits--;
		free(w);
	}
}

/* A file of the web folder by its plain name, else 404. */
static void
serve_static(struct serve *sv, struct evhttp_request *req, const char *path)
{
	struct evbuffer *b;
	struct stat st;
	const char *ctype;
	char name[65];
	int fd;

	if (audit_web_static(path, name, sizeof(name), &ctype) == -1 ||
	    (fd = openat(sv->sv_webfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW |
	    O_NONBLOCK | O_NOCTTY)) == -1) {
		serve_error(req, 404, "not found");
		return;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_size > SERVE_STATIC_MAX || (b = evbuffer_new()) == NULL) {
		close(fd);
		serve_error(req, 404, "not found");
		return;
	}
	/* The buffer owns fd from here. */
	if (evbuffer_add_file(b, fd, 0, st.st_size) == -1) {
		evbuffer_free(b);
		serve_error(req, 500, "cannot read the file");
		return;
	}
	serve_reply(req, 200, ctype, "no-cache", b);
	evbuffer_free(b);
}

/*
 * 1 if the request carries exactly one "Authorization: Bearer TOKEN" with this
 * start's token.  Loopback is every local user's: without it anyone on the host
 * could read the log through the view with the reviewer's rights.  A page of
 * another origin cannot send the field without a preflight, which gets a 405.
 */
static int
serve_token_ok(struct serve *sv, struct evhttp_request *req)
{
	struct evkeyvalq *h = evhttp_request_get_input_headers(req);
	struct evkeyval *kv;
	const char *auth = NULL;
	size_t tl = strlen(sv->sv_token);
	int n = 0;

	TAILQ_FOREACH(kv, h, next)
		if (strcasecmp(kv->key, "Authorization") == 0) {
			auth = kv->value;
			n++;
		}
	if (n != 1 || strncasecmp(auth, "Bearer ", 7) != 0)
		return 0;
	auth += 7;
	return strlen(auth) == tl && CRYPTO_memcmp(auth, sv->sv_token, tl) == 0;
}

/* 1 if the request carries exactly one Host header and it names us. */
static int
serve_host_ok(struct serve *sv, struct evhttp_request *req)
{
	struct evkeyvalq *h = evhttp_request_get_input_headers(req);
	struct evkeyval *kv;
	const char *host = NULL;
	int n = 0;

	TAILQ_FOREACH(kv, h, next)
		if (strcasecmp(kv->key, "Host") == 0) {
			host = kv->value;
			n++;
		}
	return n == 1 && audit_web_host_ok(host, sv->sv_addr, sv->sv_v6,
	    sv->sv_port);
}

static void
serve_request(struct evhttp_request *req, void *arg)
{
	static const struct {
		const char	*path;
		void		(*fn)(struct serve *, struct evhttp_request *);
	} api[] = {
		{ "/api/status", api_status },
		{ "/api/records", api_records },
		{ "/api/record", api_record },
		{ "/api/summary", api_summary },
		{ "/api/tail", api_tail },
	};
	struct serve *sv = arg;
	const struct evhttp_uri *u;
	enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
	const char *path;
	size_t i;

	if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD) {
		evhttp_add_header(evhttp_request_get_output_headers(req), "Allow",
		    "GET, HEAD");
		serve_error(req, 405, "read-only: GET and HEAD only");
		return;
	}
	if (!serve_host_ok(sv, req)) {
		serve_error(req, 403, "the Host header does not name this view's "
		    "address (open it as http://localhost:PORT/ or by its address)");
		return;
	}
	if ((u = evhttp_request_get_evhttp_uri(req)) == NULL ||
	    evhttp_uri_get_host(u) != NULL ||
	    (path = evhttp_uri_get_path(u)) == NULL) {
		serve_error(req, 400, "a request target of a path only");
		return;
	}
	/* The page's own files carry no record: only the API asks for the token. */
	if (strncmp(path, "/api/", 5) == 0 && !serve_token_ok(sv, req)) {
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "WWW-Authenticate", "Bearer realm=\"airlock audit serve\"");
		serve_error(req, 401, "this view's token is missing or wrong: open "
		    "the address `airlock audit serve` printed, with its #token=");
		return;
	}
	for (i = 0; i < sizeof(api) / sizeof(api[0]); i++)
		if (strcmp(path, api[i].path) == 0) {
			api[i].fn(sv, req);
			return;
		}
	if (strncmp(path, "/api/", 5) == 0) {
		serve_error(req, 404, "no such API");
		return;
	}
	serve_static(sv, req, path);
}

static void
serve_tick(evutil_socket_t fd, short what, void *arg)
{
	struct serve *sv = arg;
	char err[256];
	int changed;

	if (audit_index_update(sv->sv_ix, &changed, err, sizeof(err)) == -1)
		fprintf(stderr, "airlock: audit serve: %s\n", err);
	tail_wake(sv, changed, 0);
}

/* SIGINT, SIGTERM: the waiting tail requests answered, a moment to send that. */
static void
serve_signal(evutil_socket_t sig, short what, void *arg)
{
	struct timeval flush = { 0, 200 * 1000 };
	struct serve *sv = arg;

	tail_wake(sv, 0, 1);
	event_base_loopexit(sv->sv_base, &flush);
}

/* "ADDR:PORT" on loopback, or "localhost:PORT", into sv.  Returns 0 or -1. */
static int
serve_listen_parse(struct serve *sv, const char *listen)
{
	struct netaddr a;
	uint16_t port;

	if (strncmp(listen, "localhost:", 10) == 0) {
		char buf[32];

		snprintf(buf, sizeof(buf), "127.0.0.1:%.10s", listen + 10);
		if (netaddr_endpoint_parse(buf, &a, &port) == -1)
			goto bad;
	} else if (netaddr_endpoint_parse(listen, &a, &port) == -1)
		goto bad;
	if (!netaddr_is_loopback(&a)) {
		fprintf(stderr, "airlock: audit serve: --listen %s: not a loopback "
		    "address: the view is for this host only (from elsewhere, "
		    "forward a port to it, e.g. ssh -L)\n", listen);
		return -1;
	}
	netaddr_fmt(&a, sv->sv_addr, sizeof(sv->sv_addr));
	sv->sv_v6 = a.na_family == AF_INET6;
	sv->sv_port = port;
	return 0;
 bad:
	fprintf(stderr, "airlock: audit serve: --listen %s: not ADDR:PORT (a "
	    "loopback address or localhost, a port 0..65535)\n", listen);
	return -1;
}

/* The web folder (AIRLOCK_WEB_DIR, else file.h's search), holding index.html. */
static int
serve_web_open(struct serve *sv)
{
	char dir[4096];

	if (file_share_dir("AIRLOCK_WEB_DIR", "web", dir, sizeof(dir)) == -1) {
		fprintf(stderr, "airlock: audit serve: cannot find the web files\n");
		return -1;
	}
	if ((sv->sv_webfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1 ||
	    faccessat(sv->sv_webfd, "index.html", R_OK, 0) == -1) {
		fprintf(stderr, "airlock: audit serve: %s/index.html: %s (make "
		    "builds it beside the binary, make install in "
		    "PREFIX/share/airlock/web; or set AIRLOCK_WEB_DIR)\n", dir,
		    strerror(errno));
		return -1;
	}
	return 0;
}

static void
serve_free(struct serve *sv)
{
	tail_wake(sv, 0, 1);
	if (sv->sv_http != NULL)
		evhttp_free(sv->sv_http);
	if (sv->sv_tick != NULL)
		event_free(sv->sv_tick);
	if (sv->sv_sigint != NULL)
		event_free(sv->sv_sigint);
	if (sv->sv_sigterm != NULL)
		event_free(sv->sv_sigterm);
	if (sv->sv_base != NULL)
		event_base_free(sv->sv_base);
	audit_index_free(sv->sv_ix);
	if (sv->sv_webfd != -1)
		close(sv->sv_webfd);
}

int
cli_audit_serve(char *const *paths, int n, const unsigned char *key,
    size_t keylen, const char *listen)
{
	struct timeval tick = { 0, SERVE_TICK_MS * 1000 };
	struct audit_index_status st;
	struct evhttp_bound_socket *bound;
	struct sockaddr_storage ss;
	socklen_t sslen = sizeof(ss);
	struct netaddr a;
	struct timespec t0, t1;
	struct serve sv;
	uint16_t port;
	unsigned char tok[SERVE_TOKEN_BYTES];
	char err[256];
	size_t i;
	int changed, rv = 2;

	memset(&sv, 0, sizeof(sv));
	sv.sv_webfd = -1;
	TAILQ_INIT(&sv.sv_waits);
	sv.sv_keyed = key != NULL;
	if (serve_listen_parse(&sv, listen) == -1 || serve_web_open(&sv) == -1)
		goto out;
	if (RAND_bytes(tok, sizeof(tok)) != 1) {
		fprintf(stderr, "airlock: audit serve: no random bytes for the token\n");
		goto out;
	}
	for (i = 0; i < sizeof(tok); i++)
		snprintf(sv.sv_token + 2 * i, 3, "%02x", tok[i]);
	OPENSSL_cleanse(tok, sizeof(tok));
	if ((sv.sv_ix = audit_index_new(paths, n, key, keylen)) == NULL) {
		fprintf(stderr, "airlock: audit serve: out of memory\n");
		goto out;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (audit_index_update(sv.sv_ix, &changed, err, sizeof(err)) == -1) {
		fprintf(stderr, "airlock: audit serve: %s\n", err);
		goto out;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	audit_index_status(sv.sv_ix, &st);
	if (st.ais_state == AUDIT_INDEX_UNREADABLE) {
		fprintf(stderr, "airlock: %s: %s\n", st.ais_bad_path, st.ais_why);
		goto out;
	}
	rv = 1;
	signal(SIGPIPE, SIG_IGN);
	if ((sv.sv_base = event_base_new()) == NULL ||
	    (sv.sv_http = evhttp_new(sv.sv_base)) == NULL ||
	    (sv.sv_tick = event_new(sv.sv_base, -1, EV_PERSIST, serve_tick,
	    &sv)) == NULL ||
	    (sv.sv_sigint = evsignal_new(sv.sv_base, SIGINT, serve_signal,
	    &sv)) == NULL ||
	    (sv.sv_sigterm = evsignal_new(sv.sv_base, SIGTERM, serve_signal,
	    &sv)) == NULL ||
	    event_add(sv.sv_tick, &tick) == -1 || event_add(sv.sv_sigint, NULL) ==
	    -1 || event_add(sv.sv_sigterm, NULL) == -1) {
		fprintf(stderr, "airlock: audit serve: cannot set up libevent\n");
		goto out;
	}
	/*
	 * A browser's requests are short.  Bodies are never used: a small one is
	 * read only so that its method gets our 405 (libevent answers 413 itself).
	 */
	evhttp_set_max_headers_size(sv.sv_http, 16384);
	evhttp_set_max_body_size(sv.sv_http, 4096);
	evhttp_set_timeout(sv.sv_http, AUDIT_WEB_WAIT_MAX + 15);
	/* Every method reaches serve_request, which answers 405 with our headers. */
	evhttp_set_allowed_methods(sv.sv_http, EVHTTP_REQ_GET | EVHTTP_REQ_POST |
	    EVHTTP_REQ_HEAD | EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
	    EVHTTP_REQ_OPTIONS | EVHTTP_REQ_TRACE | EVHTTP_REQ_CONNECT |
	    EVHTTP_REQ_PATCH);
	evhttp_set_gencb(sv.sv_http, serve_request, &sv);
	if ((bound = evhttp_bind_socket_with_handle(sv.sv_http, sv.sv_addr,
	    (uint16_t)sv.sv_port)) == NULL) {
		fprintf(stderr, "airlock: audit serve: cannot listen on %s%s%s:%u: "
		    "%s\n", sv.sv_v6 ? "[" : "", sv.sv_addr, sv.sv_v6 ? "]" : "",
		    sv.sv_port, strerror(errno));
		goto out;
	}
	if (getsockname(evhttp_bound_socket_get_fd(bound), (struct sockaddr *)&ss,
	    &sslen) == 0 && netaddr_from_sockaddr((struct sockaddr *)&ss, &a,
	    &port) == 0)
		sv.sv_port = port;
	fprintf(stderr, "airlock: audit serve: %lld records indexed in %lld ms; "
	    "chain %s", st.ais_records, (long long)(t1.tv_sec - t0.tv_sec) * 1000 +
	    (t1.tv_nsec - t0.tv_nsec) / 1000000, st.ais_state == AUDIT_INDEX_OK ?
	    "ok" : st.ais_state == AUDIT_INDEX_EMPTY ? "empty (nothing verified)" :
	    "TAMPERED");
	if (st.ais_state == AUDIT_INDEX_TAMPERED)
		fprintf(stderr, " at %s:%lld: %s", st.ais_bad_path, st.ais_bad_line,
		    st.ais_why);
	fputc('\n', stderr);
	/* The token goes to whoever started the view, and nowhere else. */
	printf("serving http://%s%s%s:%u/#token=%s (read-only; Ctrl-C stops)\n",
	    sv.sv_v6 ? "[" : "", sv.sv_addr, sv.sv_v6 ? "]" : "", sv.sv_port,
	    sv.sv_token);
	fflush(stdout);
	if (event_base_dispatch(sv.sv_base) == -1) {
		fprintf(stderr, "airlock: audit serve: the event loop failed\n");
		goto out;
	}
	rv = 0;
 out:
	serve_free(&sv);
	return rv;
}
