/*
 * proxy/proxy_approve.c: the control commands of approvals (a core file beside
 * reload).
 *
 * A policy with "unknown": "ask" still refuses a name no rule allows
 * (name_not_allowed, port_not_allowed); the connection path records the refusal
 * in the sandbox's pending table (proxy_approval_ask(), proxy_registry.c) and the
 * refusal the VM can read names its id.  An operator's `airlock approve allow
 * --once | --for` is a grant in that table, which proxy_approval_granted()
 * consults after such a refusal only (a deny rule's refusal is never overridden);
 * `--always`
 * is a rule in the sandbox's approvals file (written by the CLI, root), which a
 * re-read of the sandbox puts in force as an extra policy layer.  allow and deny
 * are root's only (the control socket's SO_PEERCRED uid) and each writes an
 * "approval" audit record with that uid.
 */
#include <sys/types.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "log.h"
#include "proxy_core.h"

#define APPROVAL_FOR_MAX	(30LL * 24 * 3600)	/* --for at most 30 days */
/*
 * The control commands.
 */

static json_t *
approve_error(const char *msg)
{
	return json_pack("{s:b, s:s}", "ok", 0, "error", msg);
}

/* The sandbox called name, referenced, or NULL. */
static struct proxy_sandbox *
approve_sandbox(const char *name)
{
	struct proxy_sandbox *ps = NULL;
	ssize_t i;

	proxy_reg_wrlock();
	if ((i = proxy_reg_index(name)) != -1) {
		ps = proxy_reg[i];
		__atomic_add_fetch(&ps->ps_refs, 1, __ATOMIC_RELAXED);
	}
	proxy_reg_unlock();
	return ps;
}

static void
approve_audit(const char *sandbox, const char *action, const char *name,
    unsigned int port, const char *scope, long long seconds, uid_t uid,
    const char *id, size_t dropped)
{
	struct audit_record r = AUDIT_RECORD_INIT;
	struct audit_kv kv[8];
	size_t n = 0;

	if (proxy_log == NULL)
		return;
	kv[n++] = (struct audit_kv){ .ak_key = "action", .ak_str = action };
	kv[n++] = (struct audit_kv){ .ak_key = "name", .ak_str = name };
	kv[n++] = (struct audit_kv){ .ak_key = "port", .ak_num = port };
	kv[n++] = (struct audit_kv){ .ak_key = "scope", .ak_str = scope };
	if (seconds > 0)
		kv[n++] = (struct audit_kv){ .ak_key = "seconds",
		    .ak_num = seconds };
	kv[n++] = (struct audit_kv){ .ak_key = "uid", .ak_num = (long long)uid };
	kv[n++] = (struct audit_kv){ .ak_key = "id", .ak_str = id };
	kv[n++] = (struct audit_kv){ .ak_key = "pending_dropped",
	    .ak_num = (long long)dropped };
	r.ar_event = AUDIT_EV_APPROVAL;
	r.ar_sandbox = sandbox;
	r.ar_extra = kv;
	r.ar_nextra = n;
	if (audit_write(proxy_log, &r) == -1)
		log_warn("audit: approval %s %s", sandbox, name);
}

/* One sandbox's table into the array arg (or the one sandbox of a filter). */
struct approve_ls {
	json_t		*al_list;
	const char	*al_only;
};

static void
approve_ls_one(struct proxy_sandbox *ps, void *arg)
{
	struct approve_ls *al = arg;
	json_t *o;

	if (al->al_only != NULL && strcmp(al->al_only, ps->ps_rec.sb_name) != 0)
		return;
	if ((o = proxy_approvals_json(ps->ps_approvals,
	    proxy_approval_mono_ms())) == NULL)
		return;
	json_object_set_new(o, "sandbox", json_string(ps->ps_rec.sb_name));
	json_object_set_new(o, "unknown", json_string(policy_unknown_str(
	    ps->ps_policy->pp_policy->p_unknown)));
	json_array_append_new(al->al_list, o);
}

/* {"cmd":"approve_ls"[,"sandbox":S]} */
json_t *
proxy_cmd_approve_ls(json_t *req, uid_t uid)
{
	struct approve_ls al = { NULL, NULL };
	const char *key;
	json_t *v;

	json_object_foreach(req, key, v) {
		if (strcmp(key, "cmd") == 0)
			continue;
		if (strcmp(key, "sandbox") == 0 && json_is_string(v) &&
		    sandbox_name_is_valid(json_string_value(v))) {
			al.al_only = json_string_value(v);
			continue;
		}
		return approve_error("malformed request: unknown key or bad "
		    "\"sandbox\"");
	}
	if ((al.al_list = json_array()) == NULL)
		return NULL;
	if (proxy_sandbox_foreach(approve_ls_one, &al) == -1) {
		json_decref(al.al_list);
		return approve_error("registry lock");
	}
	return json_pack("{s:b, s:o}", "ok", 1, "sandboxes", al.al_list);
}

/*
 * {"cmd":"approve","action":"allow"|"deny","sandbox":S,"name":N,"port":P,
 *  "scope":"once"|"for"|"always"|"pending"[,"seconds":T]}
 * allow: once, for (seconds), always (the CLI wrote the approvals file: the
 * sandbox is read again); deny: pending (the entry goes), always (the file has the
 * deny rule: read again).
 */
json_t *
proxy_cmd_approve(json_t *req, uid_t uid)
{
	struct proxy_sandbox *ps = NULL;
	struct proxy_policy *pp = NULL;
	struct policy_query q;
	struct policy_verdict v;
	const char *key, *action = NULL, *sandbox = NULL, *rawname = NULL;
	const char *scope = NULL;
	char name[HOSTNAME_MAX + 1], id[APPROVAL_ID_LEN + 1], msg[512];
	json_int_t port = 443, seconds = 0;
	json_t *val, *reply = NULL, *res;
	size_t dropped;
	int allow, always;

	json_object_foreach(req, key, val) {
		if (strcmp(key, "cmd") == 0)
			continue;
		if (strcmp(key, "action") == 0 && json_is_string(val))
			action = json_string_value(val);
		else if (strcmp(key, "sandbox") == 0 && json_is_string(val))
			sandbox = json_string_value(val);
		else if (strcmp(key, "name") == 0 && json_is_string(val))
			rawname = json_string_value(val);
		else if (strcmp(key, "scope") == 0 && json_is_string(val))
			scope = json_string_value(val);
		else if (strcmp(key, "port") == 0 && json_is_integer(val))
			port = json_integer_value(val);
		else if (strcmp(key, "seconds") == 0 && json_is_integer(val))
			seconds = json_integer_value(val);
		else
			return approve_error("malformed request: unknown key or "
			    "wrong type");
	}
	if (uid != 0)
		return approve_error("approve allow and deny are root's only");
	if (action == NULL || sandbox == NULL || rawname == NULL || scope == NULL)
		return approve_error("malformed request: action, sandbox, name "
		    "and scope are needed");
	if (!sandbox_name_is_valid(sandbox))
		return approve_error("malformed request: bad sandbox name");
	if (hostname_normalize(rawname, strlen(rawname), name) != HOSTNAME_OK ||
	    strchr(name, '*') != NULL)
		return approve_error("not a host name (one name, no wildcard)");
	if (port < 1 || port > 65535)
		return approve_error("port must be 1..65535");
	if (strcmp(action, "allow") == 0)
		allow = 1;
	else if (strcmp(action, "deny") == 0)
		allow = 0;
	else
		return approve_error("malformed request: action is allow or deny");
	always = strcmp(scope, "always") == 0;
	if (!always && (allow ? strcmp(scope, "once") != 0 &&
	    strcmp(scope, "for") != 0 : strcmp(scope, "pending") != 0))
		return approve_error("malformed request: bad scope");
	if (strcmp(scope, "for") == 0 ? seconds < 1 || seconds > APPROVAL_FOR_MAX :
	    seconds != 0)
		return approve_error("--for takes 1 second to 30 days");
	if ((ps = approve_sandbox(sandbox)) == NULL) {
		snprintf(msg, sizeof(msg), "no sandbox %s in airlockd", sandbox);
		return approve_error(msg);
	}
	sandbox_approval_id(sandbox, name, (uint16_t)port, id);
	log_info("control: approve %s %s %s port %u (%s, uid %u)", action, sandbox,
	    name, (unsigned int)port, scope, (unsigned int)uid);

	if (always) {
		/* The approvals file is written: put it in force for this one. */
		res = proxy_sandbox_reread(sandbox, "approval");
		if (res == NULL || !json_is_true(json_object_get(res, "ok"))) {
			const char *e = json_string_value(json_object_get(res,
			    "error"));

			snprintf(msg, sizeof(msg), "the approvals file is not in "
			    "force: %s", e != NULL ? e : "out of memory");
			json_decref(res);
			reply = approve_error(msg);
			goto out;
		}
		json_decref(res);
	} else if (allow) {
		if ((pp = proxy_sandbox_policy(ps)) == NULL) {
			reply = approve_error("registry lock");
			goto out;
		}
		memset(&q, 0, sizeof(q));
		q.pq_host = name;
		q.pq_port = (uint16_t)port;
		q.pq_proto = POLICY_PROTO_TLS;
		if (!policy_decide(pp->pp_policy, &q, &v) &&
		    !policy_reason_is_unknown(v.pv_reason)) {
			snprintf(msg, sizeof(msg), "%s:%u is refused by the policy "
			    "(%s%s%s%s%s): an approval opens only what no rule "
			    "decides", name, (unsigned int)port,
			    policy_reason_str(v.pv_reason), v.pv_rule != NULL ?
			    ", rule " : "", v.pv_rule != NULL ? v.pv_rule->pr_id :
			    "", v.pv_rule != NULL ? " of " : "", v.pv_rule != NULL ?
			    v.pv_rule->pr_file : "");
			reply = approve_error(msg);
			goto out;
		}
		if (proxy_approvals_grant(ps->ps_approvals, name, (uint16_t)port,
		    strcmp(scope, "once") == 0, proxy_approval_mono_ms() +
		    (uint64_t)seconds * 1000, proxy_approval_mono_ms()) == -1) {
			reply = approve_error("too many live approvals for this "
			    "sandbox");
			goto out;
		}
	}
	/* deny, not always: a decision recorded, the grants revoked (below). */
	dropped = proxy_approvals_forget(ps->ps_approvals, name, (uint16_t)port,
	    !allow);
	approve_audit(sandbox, action, name, (unsigned int)port, scope,
	    (long long)seconds, uid, id, dropped);
	if (!allow || always)
		proxy_threads_recheck();
	reply = json_pack("{s:b, s:s, s:s, s:i, s:s, s:s, s:I}", "ok", 1,
	    "sandbox", sandbox, "name", name, "port", (int)port, "scope", scope,
	    "id", id, "pending_dropped", (json_int_t)dropped);
 out:
	if (pp != NULL)
		proxy_policy_put(pp);
	proxy_sandbox_put(ps);
	return reply;
}
