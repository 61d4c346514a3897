/*
 * proxy/proxy_reload.c: reload and the control commands.
 *
 * A reload (at start, on SIGHUP, or by the control socket) reads the key material and
 * every record through the root reader (proxy_reader.c), loads each record's policy
 * and brings the registry (proxy_registry.c) in line with it: a policy that does not
 * load leaves the previous one in force (a new sandbox gets the empty one), a record
 * whose interface or addresses changed replaces its sandbox, and a record that
 * disappeared takes its sandbox and its connections with it.  Then every worker
 * re-checks its live connections (proxy_threads.c).  Each change is an audit record
 * of the daemon's own (sandbox attach/detach, config); a sandbox that goes has the
 * DNS records it was still counting written just before its detach.  The control
 * commands are a table, proxy_ctl_cmds, that proxy.c gives to the control socket
 * (proxy_ctl.c).
 */
#include <sys/types.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "log.h"
#include "proxy_core.h"
#include "proxy_metrics.h"
#include "proxy_supervise.h"
#include "proxy_dns_sb.h"
#include "proxy_keys.h"
#include "proxy_netwatch.h"

#define PROXY_ERRORS_SHOWN	10	/* policy errors per sandbox in a reply */

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

/*
 * A sandbox taken out of the registry, with the registry's reference: what DNS was
 * counting for it is written (no window walk sees it now), then its detach record,
 * and the reference is put.
 */
static void
proxy_detach(struct proxy_sandbox *ps, const char *source)
{
	proxy_dns_sb_flush(ps->ps_dns);
	proxy_audit_sandbox(&ps->ps_rec, "detach", source);
	proxy_sandbox_put(ps);
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
	if ((p = proxy_rec_load(r, &errs)) == NULL) {
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
		pp->pp_ca = proxy_keys_ca(keys, sb->sb_name);
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
		proxy_detach(gone, source);
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
	proxy_threads_recheck();
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
	proxy_detach(ps, source);
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
	if (proxy_keys_load(&keys, NULL, err, sizeof(err)) == -1) {
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
	proxy_stats_reload(nfailed > 0);
	reply = json_pack("{s:b, s:i, s:o, s:o}", "ok", 1, "failed", nfailed,
	    "sandboxes", list, "removed", removed);
	return reply;
}

json_t *
proxy_sandbox_reread(const char *name, const char *source)
{
	struct proxy_state st;
	struct proxy_keys *keys;
	json_t *res, *reply;
	char err[512];
	size_t i;
	int failed;

	/*
	 * A new sandbox may inspect: its CA is made now.  The other sandboxes keep
	 * the key material their policies went in with (and keyd their CAs).
	 */
	if (proxy_keys_load(&keys, name, err, sizeof(err)) == -1) {
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
	res = proxy_apply_rec(&st.st_v[i], source, keys, &failed);
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
proxy_cmd_sandbox_add(const char *name)
{
	return proxy_sandbox_reread(name, "control");
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
	if (proxy_sandbox_foreach(proxy_stats_sandbox, list) == -1)
		return proxy_reply_error("registry lock");
	/* The chain's head: an anchor for `airlock audit verify --head`. */
	seq = proxy_log != NULL ? audit_head(proxy_log, head) : 0;
	if (proxy_log == NULL)
		head[0] = '\0';
	return json_pack("{s:b, s:i, s:o, s:{s:I, s:s}, s:I, s:I}", "ok", 1,
	    "workers", (int)proxy_threads_count(), "sandboxes", list, "audit", "seq",
	    (json_int_t)seq, "head", head,
	    "rules_reinstalled", (json_int_t)proxy_netwatch_count(1),
	    "alarms", (json_int_t)proxy_netwatch_count(0));
}

/* The Prometheus text (proxy_metrics.c), for `airlock metrics`. */
static json_t *
proxy_cmd_metrics(const char *name)
{
	json_t *reply;
	char *text;

	if ((text = proxy_metrics_text()) == NULL)
		return proxy_reply_error("metrics unavailable");
	reply = json_pack("{s:b, s:s}", "ok", 1, "text", text);
	free(text);
	return reply != NULL ? reply : proxy_reply_error("out of memory");
}

static json_t *
proxy_cmd_ping(const char *name)
{
	/* The worker's PID and its supervisor's (proxy_supervise.c). */
	return json_pack("{s:b, s:i, s:i}", "ok", 1, "pid", (int)getpid(),
	    "supervisor", (int)proxy_supervisor_pid());
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
const struct proxy_ctl_cmd proxy_ctl_cmds[] = {
	/* name,		wants_name, log, fn, req_fn */
	{ "ping",		0, 0, proxy_cmd_ping, NULL },
	{ "stats",		0, 0, proxy_cmd_stats_ctl, NULL },
	{ "metrics",		0, 0, proxy_cmd_metrics, NULL },
	{ "reload",		0, 1, proxy_cmd_reload_ctl, NULL },
	{ "sandbox_add",	1, 1, proxy_cmd_sandbox_add, NULL },
	{ "sandbox_remove",	1, 1, proxy_cmd_sandbox_remove, NULL },
	{ "approve_ls",		0, 0, NULL, proxy_cmd_approve_ls },
	{ "approve",		0, 0, NULL, proxy_cmd_approve },
	{ NULL,			0, 0, NULL, NULL }
};
