/*
 * proxy/proxy.c: airlockd's start-up and life.  The configuration, the audit log,
 * listeners, the control socket, the privilege drop, the worker threads, signals, and
 * -n (check and exit).  The root state reader is proxy_reader.c, the sandbox registry
 * proxy_registry.c, reload and the control commands proxy_reload.c; what these files
 * share is proxy_core.h.
 *
 * Workers are threads, not SO_REUSEPORT processes.  The connection path and DNS need
 * the same registry (sandbox -> policy, mapped-address tables) and the one hash-chained
 * audit log; in one process they share them under locks, and a reload swaps a
 * policy pointer once instead of shipping policies to N processes over IPC and
 * waiting for each to apply them.  Each thread runs its own event_base and its own
 * evdns_base; nothing on the per-connection path takes a lock other than the short
 * registry read lock (lookup, policy reference) and the map's and audit log's own.
 * All workers accept on the one listening socket (and read the one pair of DNS
 * sockets): the kernel hands each connection to one of them, and a busy worker
 * simply wins fewer accepts.  SO_REUSEPORT would pin connections to a worker by
 * hash, and would let any later socket of the same uid join our port group; one
 * socket keeps "port in use" an honest error.
 *
 * Privileges.  airlockd binds, opens the audit log and the control socket as root,
 * then drops to config.user.  Before any of that it forks the root state reader
 * (proxy_reader.c), which alone keeps root to read the records and policy files.
 */
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/dns.h>
#include <event2/event.h>
#include <event2/thread.h>
#include <jansson.h>
#include <openssl/crypto.h>

#include "log.h"
#include "proxy_core.h"
#include "proxy_keys.h"
#include "vault.h"

#define PROXY_WORKERS_MAX	64
#define PROXY_ERRORS_SHOWN	10	/* policy errors per sandbox in a reply */

struct proxy_thread {
	pthread_t	 pt_thread;
	int		 pt_started;
	unsigned int	 pt_id;
	struct event_base *pt_base;
	struct evdns_base *pt_evdns;
	struct proxy_worker *pt_worker;
	struct proxy_dns *pt_dns;
	struct event	*pt_recheck;
};

struct airlock_config proxy_cfg;
struct audit_log *proxy_log;
static struct proxy_thread *proxy_threads;
static unsigned int proxy_nthreads;

const struct airlock_config *
proxy_config(void)
{
	return &proxy_cfg;
}

struct audit_log *
proxy_audit(void)
{
	return proxy_log;
}

/*
 * Audit records of the daemon's own: sandbox attach/detach, config.
 */
static void
proxy_audit_sandbox(const struct sandbox *sb, const char *action,
    const char *source)
{
	struct audit_record r = AUDIT_RECORD_INIT;
	struct audit_kv kv[4];
	char ip[NETADDR_STRLEN];

	if (proxy_log == NULL)
		return;
	netaddr_fmt(&sb->sb_guest_ip, ip, sizeof(ip));
	kv[0] = (struct audit_kv){ .ak_key = "action", .ak_str = action };
	kv[1] = (struct audit_kv){ .ak_key = "source", .ak_str = source };
	kv[2] = (struct audit_kv){ .ak_key = "iface", .ak_str = sb->sb_iface };
	kv[3] = (struct audit_kv){ .ak_key = "guest_ip", .ak_str = ip };
	r.ar_event = AUDIT_EV_SANDBOX;
	r.ar_sandbox = sb->sb_name;
	r.ar_extra = kv;
	r.ar_nextra = 4;
	if (audit_write(proxy_log, &r) == -1)
		log_warn("audit: sandbox %s %s", sb->sb_name, action);
}

static void
proxy_audit_config(const char *name, const struct policy *p, const char *file,
    int changed, const char *result, const char *error, const char *source)
{
	struct audit_record r = AUDIT_RECORD_INIT;
	struct audit_kv kv[7];
	size_t n = 0;

	if (proxy_log == NULL)
		return;
	kv[n++] = (struct audit_kv){ .ak_key = "source", .ak_str = source };
	kv[n++] = (struct audit_kv){ .ak_key = "policy", .ak_str = p->p_name };
	kv[n++] = (struct audit_kv){ .ak_key = "policy_file", .ak_str = file };
	kv[n++] = (struct audit_kv){ .ak_key = "policy_hash", .ak_str = p->p_hash };
	kv[n++] = (struct audit_kv){ .ak_key = "changed", .ak_num = changed };
	kv[n++] = (struct audit_kv){ .ak_key = "result", .ak_str = result };
	if (error != NULL && *error != '\0')
		kv[n++] = (struct audit_kv){ .ak_key = "error", .ak_str = error };
	r.ar_event = AUDIT_EV_CONFIG;
	r.ar_sandbox = name;
	r.ar_extra = kv;
	r.ar_nextra = n;
	if (audit_write(proxy_log, &r) == -1)
		log_warn("audit: config %s", name);
}

/*
 * Applying records to the registry.
 */

static json_t *
proxy_reply_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static json_t *
proxy_reply_error(const char *fmt, ...)
{
	va_list ap;
	char msg[1024];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return json_pack("{s:b, s:s}", "ok", 0, "error", msg);
}

/*
 * Loads r's policy and brings the registry in line with r.  Returns the outcome as
 * an object {name, status, policy, hash, changed, errors[]}; *failed set to 1 if the
 * policy (or the record) could not be put in force.  status: "added", "changed",
 * "unchanged", "kept" (load failed, previous policy stays), "refused".
 */
static json_t *
proxy_apply_rec(const struct proxy_rec *r, const char *source,
    struct proxy_keys *keys, int *failed)
{
	struct proxy_policy *cur;
	const struct sandbox *sb = &r->pr_sb;
	struct policy_errors errs = { 0 };
	struct policy *p = NULL;
	struct proxy_policy *pp = NULL, *oldpp = NULL;
	struct proxy_sandbox *ps = NULL, *gone = NULL, *added = NULL;
	json_t *out, *jerrs;
	const char *status;
	char line[1024], first[256] = "";
	ssize_t i;
	size_t k;
	int changed = 0;

	*failed = 0;
	jerrs = json_array();
	if (r->pr_errno != 0) {
		proxy_fmt(line, sizeof(line), "%s: %s", sb->sb_policy,
		    strerror(r->pr_errno));
		json_array_append_new(jerrs, json_string(line));
	} else if ((p = policy_load_buf(r->pr_buf, r->pr_len, sb->sb_policy,
	    &errs)) == NULL) {
		for (k = 0; k < errs.n && k < PROXY_ERRORS_SHOWN; k++) {
			policy_error_fmt(&errs.v[k], line, sizeof(line));
			json_array_append_new(jerrs, json_string(line));
		}
		if (errs.n == 0)
			json_array_append_new(jerrs,
			    json_string("policy failed to load"));
		policy_errors_free(&errs);
	}
	/*
	 * A policy injecting a secret the vault does not bind, or one without the
	 * CA made for it: load error, and the previous policy stays with the key
	 * material it came in with.
	 */
	if (p != NULL &&
	    (proxy_keys_check_policy(keys, p, line, sizeof(line)) == -1 ||
	    proxy_keys_for_policy(keys, sb->sb_name, p, line, sizeof(line)) == -1)) {
		char msg[1100];

		proxy_fmt(msg, sizeof(msg), "%s: %s", sb->sb_policy, line);
		json_array_append_new(jerrs, json_string(msg));
		policy_free(p);
		p = NULL;
	}
	if (json_array_size(jerrs) > 0)
		proxy_fmt(first, sizeof(first), "%s",
		    json_string_value(json_array_get(jerrs, 0)));
	if (p != NULL && (pp = proxy_policy_new(p)) == NULL) {
		policy_free(p);
		p = NULL;
		proxy_fmt(first, sizeof(first), "out of memory");
	}
	if (pp != NULL && keys != NULL) {
		__atomic_add_fetch(&keys->pk_refs, 1, __ATOMIC_RELAXED);
		pp->pp_keys = keys;
	}

	proxy_reg_wrlock();
	i = proxy_reg_index(sb->sb_name);
	if (i != -1 && !proxy_sandbox_same(&proxy_reg[i]->ps_rec, sb)) {
		/* Its interface or addresses changed: a new sandbox under an old name. */
		gone = proxy_reg_take((size_t)i);
		i = -1;
	}
	if (i != -1) {
		ps = proxy_reg[i];
		if (pp != NULL) {
			oldpp = ps->ps_policy;
			changed = proxy_policy_is_none(oldpp) ||
			    strcmp(oldpp->pp_policy->p_hash, p->p_hash) != 0;
			ps->ps_policy = pp;
			pp = NULL;	/* transferred */
			proxy_fmt(ps->ps_policy_file, sizeof(ps->ps_policy_file),
			    "%s", sb->sb_policy);
			ps->ps_policy_error[0] = '\0';
			status = changed ? "changed" : "unchanged";
		} else {
			proxy_fmt(ps->ps_policy_error, sizeof(ps->ps_policy_error),
			    "%s", first);
			status = "kept";
			*failed = 1;
		}
		__atomic_add_fetch(&ps->ps_refs, 1, __ATOMIC_RELAXED);
	} else {
		size_t j;

		for (j = 0; j < proxy_nreg; j++)
			if (netaddr_equal(&proxy_reg[j]->ps_rec.sb_guest_ip,
			    &sb->sb_guest_ip))
				break;
		if (j < proxy_nreg) {
			proxy_fmt(first, sizeof(first), "guest address in use by "
			    "sandbox %s", proxy_reg[j]->ps_rec.sb_name);
			json_array_append_new(jerrs, json_string(first));
			status = "refused";
			*failed = 1;
		} else if (pp == NULL && (pp = proxy_policy_new(NULL)) == NULL) {
			proxy_fmt(first, sizeof(first), "out of memory");
			status = "refused";
			*failed = 1;
		} else {
			struct proxy_sandbox **v;

			v = reallocarray(proxy_reg, proxy_nreg + 1, sizeof(*v));
			if (v != NULL)
				proxy_reg = v;
			if (v == NULL ||
			    (added = proxy_sandbox_new(sb, pp)) == NULL) {
				proxy_fmt(first, sizeof(first), "out of memory");
				status = "refused";
				*failed = 1;
			} else {
				pp = NULL;	/* transferred */
				changed = 1;
				if (p == NULL) {
					proxy_fmt(added->ps_policy_error,
					    sizeof(added->ps_policy_error), "%s",
					    first);
					*failed = 1;
				}
				proxy_reg[proxy_nreg++] = added;
				__atomic_add_fetch(&added->ps_refs, 1,
				    __ATOMIC_RELAXED);
				ps = added;
				status = "added";
			}
		}
	}
	proxy_reg_unlock();
	/* Readers that took the old policy hold their own references. */
	proxy_policy_put(oldpp);
	proxy_policy_put(pp);

	if (gone != NULL) {
		log_info("sandbox %s: record changed, replacing it", sb->sb_name);
		proxy_audit_sandbox(&gone->ps_rec, "detach", source);
		proxy_sandbox_put(gone);
	}
	if (added != NULL)
		proxy_audit_sandbox(sb, "attach", source);

	out = json_pack("{s:s, s:s}", "name", sb->sb_name, "status", status);
	if (ps != NULL && (cur = proxy_sandbox_policy(ps)) == NULL) {
		log_warnx("sandbox %s: registry lock", sb->sb_name);
		proxy_sandbox_put(ps);
	} else if (ps != NULL) {
		json_object_set_new(out, "policy",
		    json_string(cur->pp_policy->p_name));
		json_object_set_new(out, "hash",
		    json_string(cur->pp_policy->p_hash));
		json_object_set_new(out, "changed", json_boolean(changed));
		proxy_audit_config(sb->sb_name, cur->pp_policy, sb->sb_policy,
		    changed, *failed ? (proxy_policy_is_none(cur) ? "none" :
		    "kept_previous") : "loaded", first, source);
		if (*failed)
			log_warnx("sandbox %s: policy %s not loaded (%s): %s",
			    sb->sb_name, sb->sb_policy,
			    proxy_policy_is_none(cur) ? "nothing allowed" :
			    "previous policy stays", first);
		else
			log_info("sandbox %s: policy %s %s (%.12s)", sb->sb_name,
			    cur->pp_policy->p_name, status, cur->pp_policy->p_hash);
		proxy_policy_put(cur);
		proxy_sandbox_put(ps);
	} else
		log_warnx("sandbox %s: not registered: %s", sb->sb_name, first);
	json_object_set_new(out, "errors", jerrs);
	return out;
}

/* Asks every worker, in its own thread, to re-check its live connections. */
static void
proxy_recheck_all(void)
{
	unsigned int i;

	for (i = 0; i < proxy_nthreads; i++)
		if (proxy_threads[i].pt_recheck != NULL)
			event_active(proxy_threads[i].pt_recheck, EV_TIMEOUT, 0);
}

/* Removes the sandbox called name.  1 if it was there, 0 if not. */
static int
proxy_remove(const char *name, const char *source)
{
	struct proxy_sandbox *ps = NULL;
	ssize_t i;

	proxy_reg_wrlock();
	if ((i = proxy_reg_index(name)) != -1)
		ps = proxy_reg_take((size_t)i);
	proxy_reg_unlock();
	if (ps == NULL)
		return 0;
	log_info("sandbox %s: removed (%s)", name, source);
	proxy_audit_sandbox(&ps->ps_rec, "detach", source);
	proxy_sandbox_put(ps);
	return 1;
}

json_t *
proxy_cmd_reload(const char *source)
{
	struct proxy_state st;
	struct proxy_keys *keys;
	json_t *reply, *list, *removed;
	char err[512], **names = NULL;
	size_t i, j, nnames = 0;
	int failed, nfailed = 0;

	/*
	 * The key material first: the policies are checked against the vault, and
	 * each policy that goes in takes this image with it (its sandbox's CA); a
	 * policy refused keeps the image it came in with.
	 */
	if (proxy_keys_load(&keys, err, sizeof(err)) == -1) {
		if (strcmp(source, "start") == 0)
			return proxy_reply_error("%s", err);
		log_warnx("reload: %s (previous key material stays)", err);
		keys = proxy_keys_get();
	}
	if (proxy_state_read(&st, err, sizeof(err)) == -1) {
		proxy_keys_put(keys);
		/* At start the caller says it, as the one line before exiting. */
		if (strcmp(source, "start") != 0)
			log_warnx("reload: %s", err);
		return proxy_reply_error("%s", err);
	}
	list = json_array();
	removed = json_array();
	for (i = 0; i < st.st_n; i++) {
		json_array_append_new(list, proxy_apply_rec(&st.st_v[i], source,
		    keys, &failed));
		nfailed += failed;
	}
	if (proxy_keys_set(keys) == -1) {	/* taken over */
		log_warnx("key material: out of memory (previous key material stays)");
		proxy_keys_put(keys);
	}
	/* Records that disappeared: their sandboxes go, with their connections. */
	proxy_reg_wrlock();
	if (proxy_nreg > 0 && (names = calloc(proxy_nreg, sizeof(*names))) != NULL)
		for (i = 0; i < proxy_nreg; i++) {
			for (j = 0; j < st.st_n; j++)
				if (strcmp(proxy_reg[i]->ps_rec.sb_name,
				    st.st_v[j].pr_sb.sb_name) == 0)
					break;
			if (j == st.st_n && (names[nnames] =
			    strdup(proxy_reg[i]->ps_rec.sb_name)) != NULL)
				nnames++;
		}
	proxy_reg_unlock();
	for (i = 0; i < nnames; i++) {
		if (proxy_remove(names[i], source))
			json_array_append_new(removed, json_string(names[i]));
		free(names[i]);
	}
	free(names);
	proxy_state_free(&st);
	proxy_recheck_all();
	reply = json_pack("{s:b, s:i, s:o, s:o}", "ok", 1, "failed", nfailed,
	    "sandboxes", list, "removed", removed);
	return reply;
}

static json_t *
proxy_cmd_sandbox_add(const char *name)
{
	struct proxy_state st;
	struct proxy_keys *keys;
	json_t *res, *reply;
	char err[512];
	size_t i;
	int failed;

	/*
	 * A new sandbox may inspect: its CA is made now.  The other sandboxes keep
	 * the key material their policies went in with.
	 */
	if (proxy_keys_load(&keys, err, sizeof(err)) == -1) {
		log_warnx("sandbox_add: %s (previous key material stays)", err);
		keys = proxy_keys_get();
	}
	if (proxy_state_read(&st, err, sizeof(err)) == -1) {
		proxy_keys_put(keys);
		return proxy_reply_error("%s", err);
	}
	for (i = 0; i < st.st_n; i++)
		if (strcmp(st.st_v[i].pr_sb.sb_name, name) == 0)
			break;
	if (i == st.st_n) {
		proxy_state_free(&st);
		proxy_keys_put(keys);
		return proxy_reply_error("no record for sandbox %s in %s/sandboxes",
		    name, proxy_cfg.state_dir);
	}
	res = proxy_apply_rec(&st.st_v[i], "control", keys, &failed);
	if (proxy_keys_set(keys) == -1) {	/* taken over */
		log_warnx("key material: out of memory (previous key material stays)");
		proxy_keys_put(keys);
	}
	proxy_state_free(&st);
	proxy_recheck_all();
	if (failed) {
		json_t *e = json_array_get(json_object_get(res, "errors"), 0);

		reply = json_pack("{s:b, s:s, s:o}", "ok", 0, "error",
		    json_is_string(e) ? json_string_value(e) : "failed", "sandbox",
		    res);
	} else
		reply = json_pack("{s:b, s:o}", "ok", 1, "sandbox", res);
	return reply;
}

static json_t *
proxy_cmd_sandbox_remove(const char *name)
{
	int removed;

	removed = proxy_remove(name, "control");
	if (removed)
		proxy_recheck_all();
	return json_pack("{s:b, s:b}", "ok", 1, "removed", removed);
}

/* One sandbox's entry in the stats reply, appended to the array arg. */
static void
proxy_stats_sandbox(struct proxy_sandbox *ps, void *arg)
{
	json_t *list = arg, *o;
	const struct policy *p = ps->ps_policy->pp_policy;
	char ip[NETADDR_STRLEN];

	o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:I, "
	    "s:I, s:I, s:I}",
	    "name", ps->ps_rec.sb_name,
	    "iface", ps->ps_rec.sb_iface,
	    "guest_ip", netaddr_fmt(&ps->ps_rec.sb_guest_ip, ip, sizeof(ip)),
	    "policy", p->p_name,
	    "policy_hash", p->p_hash,
	    "policy_file", ps->ps_policy_file,
	    "conns_live", (json_int_t)proxy_sandbox_counter(&ps->ps_conns_live),
	    "allowed", (json_int_t)proxy_sandbox_counter(&ps->ps_allowed),
	    "denied", (json_int_t)proxy_sandbox_counter(&ps->ps_denied),
	    "bytes_up", (json_int_t)proxy_sandbox_counter(&ps->ps_bytes_up),
	    "bytes_down", (json_int_t)proxy_sandbox_counter(&ps->ps_bytes_down),
	    "dns_queries", (json_int_t)proxy_sandbox_counter(&ps->ps_dns_queries),
	    "dns_denied", (json_int_t)proxy_sandbox_counter(&ps->ps_dns_denied));
	if (o == NULL)
		return;
	if (ps->ps_policy_error[0] != '\0')
		json_object_set_new(o, "policy_error",
		    json_string(ps->ps_policy_error));
	json_array_append_new(list, o);
}

static json_t *
proxy_cmd_stats(void)
{
	json_t *list;
	char head[AUDIT_HASH_HEX + 1];
	long long seq;

	list = json_array();
	if (proxy_reg_foreach(proxy_stats_sandbox, list) == -1)
		return proxy_reply_error("registry lock");
	/* The chain's head: an anchor for `airlock audit verify --head`. */
	seq = proxy_log != NULL ? audit_head(proxy_log, head) : 0;
	if (proxy_log == NULL)
		head[0] = '\0';
	return json_pack("{s:b, s:i, s:o, s:{s:I, s:s}, s:I, s:I}", "ok", 1,
	    "workers", (int)proxy_nthreads, "sandboxes", list, "audit", "seq",
	    (json_int_t)seq, "head", head,
	    "rules_reinstalled", (json_int_t)proxy_netwatch_count(1),
	    "alarms", (json_int_t)proxy_netwatch_count(0));
}

static json_t *
proxy_cmd_ping(const char *name)
{
	return json_pack("{s:b, s:i}", "ok", 1, "pid", (int)getpid());
}

static json_t *
proxy_cmd_reload_ctl(const char *name)
{
	return proxy_cmd_reload("control");
}

static json_t *
proxy_cmd_stats_ctl(const char *name)
{
	return proxy_cmd_stats();
}

/* The control socket's commands (include/control.h), for proxy_ctl_new(). */
static const struct proxy_ctl_cmd proxy_ctl_cmds[] = {
	/* name,		wants_name, log, fn */
	{ "ping",		0, 0, proxy_cmd_ping },
	{ "stats",		0, 0, proxy_cmd_stats_ctl },
	{ "reload",		0, 1, proxy_cmd_reload_ctl },
	{ "sandbox_add",	1, 1, proxy_cmd_sandbox_add },
	{ "sandbox_remove",	1, 1, proxy_cmd_sandbox_remove },
	{ NULL,			0, 0, NULL }
};

/*
 * Sockets and privileges.
 */

/* A bound IPv4 socket on 0.0.0.0:port (listening if TCP).  fd, or -1 with err. */
static int
proxy_bind(int type, uint16_t port, const char *what, char *err, size_t errlen)
{
	struct sockaddr_in sin;
	int fd, one = 1, saved;

	fd = socket(AF_INET, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1)
		goto error;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == -1)
		goto error;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_ANY);
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1)
		goto error;
	if (type == SOCK_STREAM && listen(fd, SOMAXCONN) == -1)
		goto error;
	return fd;
 error:
	saved = errno;
	proxy_fmt(err, errlen, "%s %u: %s", what, port, strerror(saved));
	if (fd != -1)
		close(fd);
	errno = saved;
	return -1;
}

/*
 * Becomes pw for good: groups, gid, uid (real, effective, saved), then checks that
 * root cannot be regained.  Returns 0, or -1 with err.
 */
static int
proxy_privdrop(const struct passwd *pw, char *err, size_t errlen)
{
	uid_t r, e, s;
	gid_t gid = pw->pw_gid;

	if (setgroups(1, &gid) == -1 ||
	    setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) == -1 ||
	    setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid) == -1) {
		proxy_fmt(err, errlen, "dropping privileges to %s: %s", pw->pw_name,
		    strerror(errno));
		return -1;
	}
	if (getresuid(&r, &e, &s) == -1 || r != pw->pw_uid || e != pw->pw_uid ||
	    s != pw->pw_uid) {
		proxy_fmt(err, errlen, "dropping privileges: uid not changed");
		return -1;
	}
	if (setuid(0) != -1 || seteuid(0) != -1 || setgroups(0, NULL) != -1) {
		proxy_fmt(err, errlen, "dropping privileges: root could be regained");
		return -1;
	}
	return 0;
}

/*
 * Two sockets per proxied connection: the usual soft limit of 1024 open files
 * would refuse connections past about 500.  As root (before the drop) the hard
 * limit is first raised to PROXY_NOFILE when lower, then the soft one to the hard.
 */
#define PROXY_NOFILE	65536
static void
proxy_raise_nofile(void)
{
	struct rlimit rl, want = { PROXY_NOFILE, PROXY_NOFILE };

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1)
		return;
	if (rl.rlim_max < PROXY_NOFILE && setrlimit(RLIMIT_NOFILE, &want) == 0)
		return;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) == -1)
		log_warn("raising the open-files limit");
}

/* No core dumps, no ptrace by the same uid, no new privileges through exec. */
static int
proxy_harden(char *err, size_t errlen)
{
	struct rlimit rl = { 0, 0 };

	if (setrlimit(RLIMIT_CORE, &rl) == -1 ||
	    prctl(PR_SET_DUMPABLE, 0) == -1 ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1) {
		proxy_fmt(err, errlen, "hardening: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * Threads.
 */

static void
proxy_event_log(int severity, const char *msg)
{
	switch (severity) {
	case EVENT_LOG_DEBUG:
		log_debug("libevent: %s", msg);
		break;
	case EVENT_LOG_MSG:
		log_info("libevent: %s", msg);
		break;
	default:
		log_warnx("libevent: %s", msg);
		break;
	}
}

static void
proxy_recheck_cb(evutil_socket_t fd, short what, void *arg)
{
	struct proxy_thread *pt = arg;

	if (pt->pt_worker != NULL)
		proxy_worker_recheck(pt->pt_worker);
}

static void *
proxy_thread_main(void *arg)
{
	struct proxy_thread *pt = arg;

	if (event_base_loop(pt->pt_base, EVLOOP_NO_EXIT_ON_EMPTY) == -1)
		log_warnx("worker %u: event loop failed", pt->pt_id);
	return NULL;
}

static unsigned int
proxy_nworkers(void)
{
	long n;

	if (proxy_cfg.workers > 0)
		return proxy_cfg.workers > PROXY_WORKERS_MAX ? PROXY_WORKERS_MAX :
		    proxy_cfg.workers;
	n = sysconf(_SC_NPROCESSORS_ONLN);
	if (n < 1)
		n = 1;
	return n > PROXY_WORKERS_MAX ? PROXY_WORKERS_MAX : (unsigned int)n;
}

/* Builds and starts the worker threads.  0, or -1 with err. */
static int
proxy_threads_start(int proxy_fd, int udp_fd, int tcp_fd, char *err,
    size_t errlen)
{
	struct proxy_thread *pt;
	unsigned int i, n;
	int rc;

	n = proxy_nworkers();
	if ((proxy_threads = calloc(n, sizeof(*proxy_threads))) == NULL) {
		proxy_fmt(err, errlen, "out of memory");
		return -1;
	}
	for (i = 0; i < n; i++) {
		pt = &proxy_threads[i];
		pt->pt_id = i;
		proxy_nthreads = i + 1;
		if ((pt->pt_base = event_base_new()) == NULL) {
			proxy_fmt(err, errlen, "worker %u: event_base_new failed", i);
			return -1;
		}
		if ((pt->pt_evdns = evdns_base_new(pt->pt_base, 0)) == NULL) {
			proxy_fmt(err, errlen, "worker %u: evdns_base_new failed", i);
			return -1;
		}
		/* The host's resolver: /etc/hosts (DNS_OPTION_HOSTSFILE) and resolv.conf. */
		rc = evdns_base_resolv_conf_parse(pt->pt_evdns, DNS_OPTIONS_ALL,
		    "/etc/resolv.conf");
		if (rc != 0 && i == 0)
			log_warnx("/etc/resolv.conf: not fully usable (libevent "
			    "error %d); upstream names may not resolve", rc);
		if ((pt->pt_worker = proxy_worker_new(pt->pt_base, proxy_fd,
		    pt->pt_evdns)) == NULL) {
			proxy_fmt(err, errlen, "worker %u: proxy worker failed", i);
			return -1;
		}
		if ((pt->pt_dns = proxy_dns_new(pt->pt_base, udp_fd,
		    tcp_fd)) == NULL) {
			proxy_fmt(err, errlen, "worker %u: DNS responder failed", i);
			return -1;
		}
		if ((pt->pt_recheck = event_new(pt->pt_base, -1, 0,
		    proxy_recheck_cb, pt)) == NULL) {
			proxy_fmt(err, errlen, "worker %u: event_new failed", i);
			return -1;
		}
		if ((rc = pthread_create(&pt->pt_thread, NULL, proxy_thread_main,
		    pt)) != 0) {
			proxy_fmt(err, errlen, "worker %u: %s", i, strerror(rc));
			return -1;
		}
		pt->pt_started = 1;
	}
	return 0;
}

static void
proxy_threads_stop(void)
{
	struct proxy_thread *pt;
	unsigned int i;

	for (i = 0; i < proxy_nthreads; i++) {
		pt = &proxy_threads[i];
		if (pt->pt_started) {
			event_base_loopexit(pt->pt_base, NULL);
			pthread_join(pt->pt_thread, NULL);
		}
	}
	for (i = 0; i < proxy_nthreads; i++) {
		pt = &proxy_threads[i];
		if (pt->pt_recheck != NULL)
			event_free(pt->pt_recheck);
		if (pt->pt_dns != NULL)
			proxy_dns_free(pt->pt_dns);
		if (pt->pt_worker != NULL)
			proxy_worker_free(pt->pt_worker);
		if (pt->pt_evdns != NULL)
			evdns_base_free(pt->pt_evdns, 1);
		if (pt->pt_base != NULL)
			event_base_free(pt->pt_base);
	}
	free(proxy_threads);
	proxy_threads = NULL;
	proxy_nthreads = 0;
}

/*
 * The main thread: signals and the control socket.
 */

/*
 * SIGHUP: after logrotate renamed the audit log away, continue the chain in a new
 * file at the same path; then reload.  Unprivileged by now: the new file is created
 * in the log's directory (or opened, if logrotate's "create 0600 airlock airlock"
 * made it) as the airlockd user, which owns the old file (proxy_audit_open()).  If
 * that fails, the old file stays in use and the reason is logged.
 */
static void
proxy_sighup_cb(evutil_socket_t sig, short what, void *arg)
{
	json_t *reply;
	char err[512];

	log_info("SIGHUP: reopening the audit log, reloading");
	if (audit_reopen(proxy_log, err, sizeof(err)) == -1)
		log_warnx("audit log: %s", err);
	reply = proxy_cmd_reload("sighup");
	json_decref(reply);
}

static void
proxy_sigterm_cb(evutil_socket_t sig, short what, void *arg)
{
	struct event_base *base = arg;

	log_info("signal %d: exiting", (int)sig);
	event_base_loopbreak(base);
}

/*
 * Opens the audit log (keyed when audit.key_file is set: the key is read here, as
 * root, and wiped; audit_close() wipes the log's copy).  As root, the file is then
 * given to the user airlockd drops to (pw), so that after a rotation the renamed
 * file can still be read to continue the chain (audit_reopen() on SIGHUP).
 */
static int
proxy_audit_open(const struct passwd *pw, char *err, size_t errlen)
{
	unsigned char key[AUDIT_KEY_MAX];
	size_t keylen = 0;

	if (proxy_cfg.audit_key_file[0] != '\0') {
		if (audit_key_load(proxy_cfg.audit_key_file, key, &keylen, err,
		    errlen) == -1)
			return -1;
		proxy_log = audit_open_keyed(proxy_cfg.audit_path,
		    proxy_cfg.audit_fsync, key, keylen, err, errlen);
		OPENSSL_cleanse(key, sizeof(key));
	} else
		proxy_log = audit_open(proxy_cfg.audit_path, proxy_cfg.audit_fsync,
		    err, errlen);
	if (proxy_log == NULL)
		return -1;
	if (pw != NULL && chown(proxy_cfg.audit_path, pw->pw_uid, pw->pw_gid) == -1)
		log_warn("%s: chown to %s (a rotated log could not be continued)",
		    proxy_cfg.audit_path, pw->pw_name);
	return 0;
}

/* -n: the configuration and every recorded sandbox's policy.  Exit status. */
static int
proxy_check(void)
{
	struct proxy_state st;
	struct policy_errors errs = { 0 };
	struct policy *p;
	char err[512], line[1024];
	size_t i, k;
	int bad = 0;

	if (proxy_state_read_local(&st, err, sizeof(err)) == -1) {
		log_warnx("%s", err);
		return 1;
	}
	for (i = 0; i < st.st_n; i++) {
		const struct proxy_rec *r = &st.st_v[i];

		if (r->pr_errno != 0) {
			printf("%s: policy %s: %s\n", r->pr_sb.sb_name,
			    r->pr_sb.sb_policy, strerror(r->pr_errno));
			bad = 1;
			continue;
		}
		p = policy_load_buf(r->pr_buf, r->pr_len, r->pr_sb.sb_policy, &errs);
		if (p == NULL) {
			for (k = 0; k < errs.n; k++) {
				policy_error_fmt(&errs.v[k], line, sizeof(line));
				printf("%s: %s\n", r->pr_sb.sb_name, line);
			}
			policy_errors_free(&errs);
			bad = 1;
			continue;
		}
		printf("%s: policy %s OK (%.12s)\n", r->pr_sb.sb_name, p->p_name,
		    p->p_hash);
		policy_free(p);
	}
	proxy_state_free(&st);
	if (!bad)
		printf("configuration OK\n");
	return bad;
}

int
proxy_main(const struct proxy_opts *o)
{
	struct event_base *base = NULL;
	struct event *ev_hup = NULL, *ev_term = NULL, *ev_int = NULL;
	struct proxy_ctl *ctl = NULL;
	struct passwd *pw = NULL;
	json_t *reply;
	char err[1024] = "";
	int proxy_fd = -1, udp_fd = -1, tcp_fd = -1, ctl_fd = -1, ret = 1;
	int ctl_made = 0;
	int is_root = geteuid() == 0;

	log_init("airlockd", 1, o->po_verbose);
	event_set_log_callback(proxy_event_log);
	if (config_load(&proxy_cfg, o->po_config, o->po_state_dir, err,
	    sizeof(err)) == -1) {
		log_warnx("%s", err);
		return 1;
	}
	if (o->po_check)
		return proxy_check();

	if (is_root) {
		errno = 0;
		if ((pw = getpwnam(proxy_cfg.user)) == NULL) {
			log_warnx("user '%s' does not exist (make deps creates it)",
			    proxy_cfg.user);
			return 1;
		}
		if (pw->pw_uid == 0) {
			log_warnx("user '%s' is root: refusing to run as root",
			    proxy_cfg.user);
			return 1;
		}
		/* Before any other fd is open: the reader inherits nothing else. */
		if (proxy_reader_start(err, sizeof(err)) == -1) {
			log_warnx("%s", err);
			return 1;
		}
		/* Root too: it reinstalls airlock's tables (proxy_netwatch.c). */
		if (proxy_netwatch_start(&proxy_cfg, proxy_reader_fd, err,
		    sizeof(err)) == -1) {
			log_warnx("%s", err);
			proxy_reader_stop();
			return 1;
		}
	} else
		log_warnx("not started as root: running as uid %u without "
		    "dropping privileges", (unsigned int)geteuid());
	signal(SIGPIPE, SIG_IGN);

	if ((ctl_fd = proxy_ctl_open(proxy_cfg.control_socket, err,
	    sizeof(err))) == -1) {
		log_warnx("%s", err);
		goto out;
	}
	ctl_made = 1;
	if (proxy_audit_open(pw, err, sizeof(err)) == -1) {
		log_warnx("audit log: %s", err);	/* err names the file */
		goto out;
	}
	if ((proxy_fd = proxy_bind(SOCK_STREAM, proxy_cfg.proxy_port,
	    "proxy port", err, sizeof(err))) == -1 ||
	    (udp_fd = proxy_bind(SOCK_DGRAM, proxy_cfg.dns_port, "dns port (udp)",
	    err, sizeof(err))) == -1 ||
	    (tcp_fd = proxy_bind(SOCK_STREAM, proxy_cfg.dns_port, "dns port (tcp)",
	    err, sizeof(err))) == -1) {
		log_warnx("%s", err);
		goto out;
	}

	/* One leaf key for every minted certificate of this process. */
	if (proxy_keys_leaf_key() == NULL) {
		log_warnx("cannot make the leaf key");
		goto out;
	}
	/* Every recorded sandbox; a missing or unreadable state dir stops us here. */
	reply = proxy_cmd_reload("start");
	if (!json_is_true(json_object_get(reply, "ok"))) {
		log_warnx("%s", json_string_value(json_object_get(reply, "error")));
		json_decref(reply);
		goto out;
	}
	json_decref(reply);

	if (!o->po_foreground) {
		log_init("airlockd", 0, o->po_verbose);
		if (daemon(0, 0) == -1) {
			log_warn("daemon");
			goto out;
		}
	}
	proxy_raise_nofile();
	if (pw != NULL && proxy_privdrop(pw, err, sizeof(err)) == -1) {
		log_warnx("%s", err);
		goto out;
	}
	if (proxy_harden(err, sizeof(err)) == -1 || vault_process_harden() == -1) {
		log_warnx("%s", err[0] != '\0' ? err : "hardening failed");
		goto out;
	}

	if (evthread_use_pthreads() == -1) {
		log_warnx("evthread_use_pthreads failed");
		goto out;
	}
	if ((base = event_base_new()) == NULL) {
		log_warnx("event_base_new failed");
		goto out;
	}
	if (proxy_threads_start(proxy_fd, udp_fd, tcp_fd, err, sizeof(err)) == -1) {
		log_warnx("%s", err);
		goto out;
	}
	if ((ctl = proxy_ctl_new(base, ctl_fd, proxy_ctl_cmds)) == NULL) {
		log_warnx("control socket: cannot serve it");
		goto out;
	}
	ctl_fd = -1;	/* transferred */
	if (proxy_netwatch_listen(base) == -1) {
		log_warnx("netwatch: cannot listen to it");
		goto out;
	}
	if ((ev_hup = evsignal_new(base, SIGHUP, proxy_sighup_cb, NULL)) == NULL ||
	    (ev_term = evsignal_new(base, SIGTERM, proxy_sigterm_cb, base)) == NULL ||
	    (ev_int = evsignal_new(base, SIGINT, proxy_sigterm_cb, base)) == NULL ||
	    evsignal_add(ev_hup, NULL) == -1 || evsignal_add(ev_term, NULL) == -1 ||
	    evsignal_add(ev_int, NULL) == -1) {
		log_warnx("signal events failed");
		goto out;
	}
	log_info("ready: proxy port %u, dns port %u, %u worker(s), uid %u",
	    proxy_cfg.proxy_port, proxy_cfg.dns_port, proxy_nthreads,
	    (unsigned int)geteuid());
	if (event_base_dispatch(base) == -1) {
		log_warnx("main event loop failed");
		goto out;
	}
	ret = 0;
 out:
	if (ev_hup != NULL)
		event_free(ev_hup);
	if (ev_term != NULL)
		event_free(ev_term);
	if (ev_int != NULL)
		event_free(ev_int);
	proxy_ctl_free(ctl);
	proxy_threads_stop();
	proxy_netwatch_stop();
	if (base != NULL)
		event_base_free(base);
	proxy_reg_clear();
	(void)proxy_keys_set(NULL);
	if (proxy_fd != -1)
		close(proxy_fd);
	if (udp_fd != -1)
		close(udp_fd);
	if (tcp_fd != -1)
		close(tcp_fd);
	if (ctl_fd != -1)
		close(ctl_fd);
	/* After the drop this may fail (root's directory): the next start cleans up. */
	if (ctl_made)
		(void)unlink(proxy_cfg.control_socket);
	if (proxy_log != NULL)
		audit_close(proxy_log);
	proxy_log = NULL;
	proxy_reader_stop();
	return ret;
}
