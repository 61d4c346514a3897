/*
 * proxy/proxy_registry.c: the sandbox registry, policies and sandboxes as the daemon
 * knows them (struct proxy_policy, struct proxy_sandbox in proxy_registry.h).
 *
 * One array of reference-counted entries under one rwlock.  The connection path and
 * DNS take the short read lock to find a sandbox by its guest address and to take a
 * counted reference to its policy; reload (proxy_reload.c) takes the write lock to
 * add, replace or take out entries and to swap a policy pointer, and puts what it
 * replaced after unlocking.  DNS also walks the entries under the read lock once
 * per audit window (proxy_sandbox_foreach()).  An entry taken out is marked dead
 * (its connections close on the next recheck) and freed when its last reference
 * goes.
 *
 * Each entry owns its per-sandbox state, each part under a lock of its own: token
 * buckets (ps_limit_mtx, proxy_conn_limit.c), mapped names (ps_map, proxy_map.c),
 * DNS rate limit and pending audit aggregates (ps_dns, proxy_dns_sb.c; written out
 * when reload takes the entry out, and what is left when it is freed).  None of it
 * is looked up by name.
 */
#include <sys/types.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "proxy_dns_sb.h"
#include "proxy_globals.h"
#include "proxy_keys.h"
#include "proxy_map.h"
#include "proxy_registry.h"

#define PROXY_MAP_MAX		4096	/* mapped names per sandbox (LRU beyond) */

static pthread_rwlock_t proxy_reg_lock = PTHREAD_RWLOCK_INITIALIZER;
struct proxy_sandbox **proxy_reg;	/* registry: one reference each */
size_t proxy_nreg;

/* What a sandbox without a loadable policy gets: no rules, every decision a denial. */
static struct policy proxy_policy_none = { .p_name = "none" };

/*
 * Registry and references.
 */

/* A new reference-counted wrapper (1 reference) for p, or for the empty policy. */
struct proxy_policy *
proxy_policy_new(struct policy *p)
{
	struct proxy_policy *pp;

	if ((pp = calloc(1, sizeof(*pp))) == NULL)
		return NULL;
	pp->pp_policy = p != NULL ? p : &proxy_policy_none;
	pp->pp_refs = 1;
	return pp;
}

void
proxy_policy_put(struct proxy_policy *pp)
{
	if (pp == NULL)
		return;
	if (__atomic_sub_fetch(&pp->pp_refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	if (pp->pp_policy != &proxy_policy_none)
		policy_free(pp->pp_policy);
	proxy_keys_put(pp->pp_keys);
	free(pp);
}

int
proxy_policy_is_none(const struct proxy_policy *pp)
{
	return pp->pp_policy == &proxy_policy_none;
}

struct proxy_sandbox *
proxy_sandbox_find(const struct netaddr *src)
{
	struct proxy_sandbox *ps = NULL;
	size_t i;

	if (pthread_rwlock_rdlock(&proxy_reg_lock) != 0)
		return NULL;
	for (i = 0; i < proxy_nreg; i++) {
		if (netaddr_equal(&proxy_reg[i]->ps_rec.sb_guest_ip, src)) {
			ps = proxy_reg[i];
			__atomic_add_fetch(&ps->ps_refs, 1, __ATOMIC_RELAXED);
			break;
		}
	}
	pthread_rwlock_unlock(&proxy_reg_lock);
	return ps;
}

void
proxy_sandbox_put(struct proxy_sandbox *ps)
{
	if (ps == NULL)
		return;
	if (__atomic_sub_fetch(&ps->ps_refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	/* What DNS still counts for it is written now, with its name. */
	proxy_dns_sb_free(ps->ps_dns);
	proxy_approvals_free(ps->ps_approvals);
	proxy_policy_put(ps->ps_policy);
	proxy_map_free(ps->ps_map);
	pthread_mutex_destroy(&ps->ps_limit_mtx);
	free(ps);
}

struct proxy_policy *
proxy_sandbox_policy(struct proxy_sandbox *ps)
{
	struct proxy_policy *pp;

	/*
	 * The write lock is held while ps_policy is swapped; the old one is put after.
	 * A lock that cannot be taken (EAGAIN: too many readers) is the caller's
	 * refusal, never the process's end.
	 */
	if (pthread_rwlock_rdlock(&proxy_reg_lock) != 0)
		return NULL;
	pp = ps->ps_policy;
	__atomic_add_fetch(&pp->pp_refs, 1, __ATOMIC_RELAXED);
	pthread_rwlock_unlock(&proxy_reg_lock);
	return pp;
}

void
proxy_reg_wrlock(void)
{
	if (pthread_rwlock_wrlock(&proxy_reg_lock) != 0)
		fatalx("registry lock");
}

void
proxy_reg_unlock(void)
{
	pthread_rwlock_unlock(&proxy_reg_lock);
}

/* Index of the sandbox called name, or -1.  Caller holds the lock. */
ssize_t
proxy_reg_index(const char *name)
{
	size_t i;

	for (i = 0; i < proxy_nreg; i++)
		if (strcmp(proxy_reg[i]->ps_rec.sb_name, name) == 0)
			return (ssize_t)i;
	return -1;
}

/*
 * Takes entry i out of the registry and marks it dead.  Returns it with the
 * registry's reference, which the caller puts (after auditing).  Caller holds the
 * write lock.
 */
struct proxy_sandbox *
proxy_reg_take(size_t i)
{
	struct proxy_sandbox *ps = proxy_reg[i];

	__atomic_store_n(&ps->ps_dead, 1, __ATOMIC_RELEASE);
	memmove(&proxy_reg[i], &proxy_reg[i + 1],
	    (proxy_nreg - i - 1) * sizeof(*proxy_reg));
	proxy_nreg--;
	return ps;
}

int
proxy_sandbox_same(const struct sandbox *a, const struct sandbox *b)
{
	return a->sb_kind == b->sb_kind &&
	    strcmp(a->sb_iface, b->sb_iface) == 0 &&
	    netaddr_equal(&a->sb_host_ip, &b->sb_host_ip) &&
	    netaddr_equal(&a->sb_guest_ip, &b->sb_guest_ip) &&
	    a->sb_prefix == b->sb_prefix &&
	    strcmp(a->sb_mac, b->sb_mac) == 0;
}

/* A new registry entry (one reference) for sb with policy pp (taken over). */
struct proxy_sandbox *
proxy_sandbox_new(const struct sandbox *sb, struct proxy_policy *pp)
{
	struct proxy_sandbox *ps;

	if ((ps = calloc(1, sizeof(*ps))) == NULL)
		return NULL;
	if ((ps->ps_map = proxy_map_new(&proxy_cfg.mapped_pool,
	    PROXY_MAP_MAX)) == NULL) {
		free(ps);
		return NULL;
	}
	if ((ps->ps_dns = proxy_dns_sb_new(sb->sb_name)) == NULL) {
		proxy_map_free(ps->ps_map);
		free(ps);
		return NULL;
	}
	if ((ps->ps_approvals = proxy_approvals_new()) == NULL) {
		proxy_dns_sb_free(ps->ps_dns);
		proxy_map_free(ps->ps_map);
		free(ps);
		return NULL;
	}
	ps->ps_rec = *sb;
	ps->ps_policy = pp;
	ps->ps_refs = 1;
	pthread_mutex_init(&ps->ps_limit_mtx, NULL);
	proxy_fmt(ps->ps_policy_file, sizeof(ps->ps_policy_file), "%s",
	    sb->sb_policy);
	return ps;
}

/* Drops and forgets every sandbox (at exit). */
void
proxy_reg_clear(void)
{
	struct proxy_sandbox *ps;

	for (;;) {
		proxy_reg_wrlock();
		ps = proxy_nreg > 0 ? proxy_reg_take(proxy_nreg - 1) : NULL;
		proxy_reg_unlock();
		if (ps == NULL)
			break;
		proxy_sandbox_put(ps);
	}
	free(proxy_reg);
	proxy_reg = NULL;
}

/* The one walk of the registry: DNS closes each window with it, stats reads it. */
int
proxy_sandbox_foreach(void (*fn)(struct proxy_sandbox *, void *), void *arg)
{
	size_t i;

	if (pthread_rwlock_rdlock(&proxy_reg_lock) != 0)
		return -1;
	for (i = 0; i < proxy_nreg; i++)
		fn(proxy_reg[i], arg);
	pthread_rwlock_unlock(&proxy_reg_lock);
	return 0;
}

/*
 * Approvals (proxy_approval.h): the sandbox's pending table and grants, as the
 * connection path and DNS consult them.
 */

/* What a connection an in-memory grant lets through was decided by. */
const struct policy_rule proxy_approval_rule = {
	.pr_id = "approval",
	.pr_action = POLICY_ACTION_ALLOW,
	.pr_proto = POLICY_PROTO_TLS,
	.pr_tls = POLICY_TLS_SPLICE,
	.pr_file = "(approval)",
};

uint64_t
proxy_approval_mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint64_t
proxy_approval_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int
proxy_approval_ask(struct proxy_sandbox *ps, const struct policy *p,
    enum policy_reason r, const char *name, uint16_t port, const char *method,
    const char *path, char id[APPROVAL_ID_LEN + 1])
{
	id[0] = '\0';
	if (ps == NULL || ps->ps_approvals == NULL || p == NULL || name == NULL ||
	    p->p_unknown != POLICY_UNKNOWN_ASK || !policy_reason_is_unknown(r))
		return 0;
	if (proxy_approvals_note(ps->ps_approvals, ps->ps_rec.sb_name, name, port,
	    method, path, proxy_approval_wall_ms(), id) == 1)
		log_info("sandbox %s: approval %s requested: %s port %u",
		    ps->ps_rec.sb_name, id, name, (unsigned int)port);
	return 1;
}

int
proxy_approval_granted(struct proxy_sandbox *ps, enum policy_reason r,
    const char *name, uint16_t port, int consume)
{
	if (ps == NULL || ps->ps_approvals == NULL || name == NULL ||
	    !policy_reason_is_unknown(r))
		return 0;
	return proxy_approvals_take(ps->ps_approvals, name, port,
	    proxy_approval_mono_ms(), consume);
}

int
proxy_approval_dns(struct proxy_sandbox *ps, const char *name)
{
	if (ps == NULL || ps->ps_approvals == NULL)
		return 0;
	return proxy_approvals_has_name(ps->ps_approvals, name,
	    proxy_approval_mono_ms());
}
