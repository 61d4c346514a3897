/*
 * tests/fuzz/fz_world.h: the world the request-engine targets run in
 * (fuzz_inspect.c, fuzz_h2.c): a vault with their secrets, the key material built
 * from it (proxy_keys_set), a policy checked against it, one sandbox holding it,
 * and a connection as proxy_conn_decide() leaves an inspected one, on a worker
 * whose event base the target drives.  Static functions: each target includes
 * it once.
 */
#include <sys/queue.h>
#include <sys/stat.h>

#include <ftw.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/bufferevent.h>
#include <event2/event.h>

#include "../../proxy/proxy_path.h"
#include "../../proxy/proxy_core.h"
#include "../../proxy/proxy_keys.h"
#include "policy.h"
#include "vault.h"

struct fz_secret {
	const char	*name, *host, *ph, *value;
};

static void
fz_bail(const char *what, const char *err)
{
	fprintf(stderr, "fuzz: %s: %s\n", what, err);
	exit(1);
}

static int
fz_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

/* The vault (in a state directory under /tmp, removed at once), keys, policy, sb. */
static void
fz_world_init(struct proxy_sandbox *sb, const char *policy, const struct fz_secret *s,
    size_t n)
{
	char dir[] = "/tmp/fuzz_world.XXXXXX", err[512];
	struct proxy_keys *k;
	struct policy *p;
	struct vault *v;
	uint8_t *img;
	size_t len, i;

	if (mkdtemp(dir) == NULL)
		fz_bail("mkdtemp", "failed");
	if (vault_open(dir, VAULT_OPEN_WRITE | VAULT_OPEN_CREATE, &v, err,
	    sizeof(err)) != VAULT_OK)
		fz_bail("vault", err);
	for (i = 0; i < n; i++) {
		const char *hosts[1] = { s[i].host };
		struct secret sv = { (uint8_t *)(uintptr_t)s[i].value,
		    strlen(s[i].value) };

		if (vault_secret_put(v, s[i].name, hosts, 1, s[i].ph, &sv, err,
		    sizeof(err)) != VAULT_OK)
			fz_bail("vault put", err);
	}
	if (vault_commit(v, err, sizeof(err)) != VAULT_OK)
		fz_bail("vault commit", err);
	vault_close(v);
	/*
	 * The reader sends only the values recorded policies bind: a second sandbox's
	 * policy binds every secret, so each is loaded (and redacted) as in a worker
	 * whose other sandboxes inject the rest.
	 */
	{
		char all[4096];
		size_t o;
		struct policy_bundle b[2] = { { NULL, 0 }, { NULL, 0 } };
		struct proxy_keys_src src[2] = {
			{ "fz", &b[0] },
			{ "fzall", &b[1] },
		};

		o = (size_t)snprintf(all, sizeof(all), "{\"policy\":\"fzall\","
		    "\"rules\":[");
		for (i = 0; i < n && o < sizeof(all); i++)
			o += (size_t)snprintf(all + o, sizeof(all) - o, "%s{\"id\":"
			    "\"r%zu\",\"host\":\"%s\",\"inject\":[{\"secret\":"
			    "\"%s\",\"header\":\"X-Fz\"}]}", i > 0 ? "," : "", i,
			    s[i].host, s[i].name);
		if (o < sizeof(all))
			o += (size_t)snprintf(all + o, sizeof(all) - o, "]}");
		if (o >= sizeof(all))
			fz_bail("keys", "policy too long");
		if (policy_bundle_add(&b[0], "fz.json", policy, strlen(policy),
		    NULL) == -1 || policy_bundle_add(&b[1], "fzall.json", all, o,
		    NULL) == -1)
			fz_bail("keys", "out of memory");
		if (proxy_keys_build(dir, src, 2, &img, &len) == -1)
			fz_bail("keys", "build");
		policy_bundle_free(&b[0]);
		policy_bundle_free(&b[1]);
	}
	if ((k = proxy_keys_parse(img, len, err, sizeof(err))) == NULL)
		fz_bail("keys", err);
	proxy_keys_image_free(img, len);
	(void)nftw(dir, fz_rm, 8, FTW_DEPTH | FTW_PHYS);
	if (k->pk_nsecrets != n)
		fz_bail("keys", "not every secret");
	if ((p = policy_load_buf(policy, strlen(policy), "fz.json", NULL)) == NULL)
		fz_bail("policy", "does not load");
	if (proxy_keys_check_policy(k, p, err, sizeof(err)) == -1)
		fz_bail("policy", err);
	if (proxy_keys_set(k) == -1)
		fz_bail("keys", "set");
	/* The sandbox, as the registry holds it (one reference, never dropped). */
	snprintf(sb->ps_rec.sb_name, sizeof(sb->ps_rec.sb_name), "fz");
	sb->ps_refs = 1;
	pthread_mutex_init(&sb->ps_limit_mtx, NULL);
	if ((sb->ps_policy = proxy_policy_new(p)) == NULL)
		fz_bail("policy", "out of memory");
}

static void
fz_noop(evutil_socket_t fd, short what, void *arg)
{
}

/* A worker with its own event base, and the VM's and the origin's pairs. */
static void
fz_worker_init(struct proxy_worker *w, struct bufferevent *vmp[2],
    struct bufferevent *orp[2])
{
	memset(w, 0, sizeof(*w));
	TAILQ_INIT(&w->pw_conns);
	if ((w->pw_base = event_base_new()) == NULL ||
	    bufferevent_pair_new(w->pw_base, BEV_OPT_DEFER_CALLBACKS, vmp) == -1 ||
	    bufferevent_pair_new(w->pw_base, BEV_OPT_DEFER_CALLBACKS, orp) == -1)
		abort();
	bufferevent_enable(vmp[1], EV_READ | EV_WRITE);
	bufferevent_enable(orp[1], EV_READ | EV_WRITE);
}

/* A connection of sb to host:port under rule, as decided (on w's list). */
static struct proxy_conn *
fz_conn_new(struct proxy_worker *w, struct proxy_sandbox *sb, const char *host,
    const char *rule, uint16_t port, enum policy_proto proto)
{
	struct proxy_conn *c;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		abort();
	c->pc_worker = w;
	c->pc_id = 1;
	__atomic_add_fetch(&sb->ps_refs, 1, __ATOMIC_RELAXED);
	c->pc_sandbox = sb;
	c->pc_policy = proxy_sandbox_policy(sb);
	snprintf(c->pc_name, sizeof(c->pc_name), "%s", host);
	snprintf(c->pc_rule, sizeof(c->pc_rule), "%s", rule);
	c->pc_dport = port;
	c->pc_proto = proto;
	c->pc_tls = POLICY_TLS_INSPECT;
	c->pc_limits = c->pc_policy->pp_policy->p_limits;
	c->pc_state = PC_DECIDED;
	evutil_gettimeofday(&c->pc_start, NULL);
	c->pc_last = c->pc_start;
	if ((c->pc_timer = evtimer_new(w->pw_base, fz_noop, c)) == NULL)
		abort();
	TAILQ_INSERT_TAIL(&w->pw_conns, c, pc_entry);
	return c;
}

/* Runs base until nothing is active any more. */
static void
fz_settle(struct event_base *base)
{
	int i;

	for (i = 0; i < 10000; i++) {
		event_base_loop(base, EVLOOP_NONBLOCK);
		if (event_base_get_num_events(base, EVENT_BASE_COUNT_ACTIVE) == 0)
			return;
	}
}

/*
 * The origin's side ends, then the VM's (the engine runs after each); a
 * connection still open then (a close waiting on its timer) is closed as the idle
 * timeout would.
 */
static void
fz_finish(struct proxy_worker *w, struct bufferevent *origin, struct bufferevent *vm)
{
	bufferevent_flush(origin, EV_WRITE, BEV_FINISHED);
	fz_settle(w->pw_base);
	bufferevent_flush(vm, EV_WRITE, BEV_FINISHED);
	fz_settle(w->pw_base);
	if (!TAILQ_EMPTY(&w->pw_conns))
		proxy_conn_close(TAILQ_FIRST(&w->pw_conns), NULL, 1);
}
