/*
 * policies/policy_decide.c: first-match evaluation of a loaded policy.  A pure
 * function of the policy and the query: no I/O, no allocation, never fails (a
 * malformed query is a denial with its reason).  The loader put every deny rule
 * before every allow rule (policy_layers.c), so one pass in order is the whole
 * evaluation.
 */
#include <stddef.h>
#include <string.h>

#include "hostname.h"
#include "netaddr.h"
#include "policy.h"

const struct strtab policy_proto_names[] = {
	{ "tls", POLICY_PROTO_TLS },
	{ "http", POLICY_PROTO_HTTP },
	{ "tcp", POLICY_PROTO_TCP },
	{ NULL, 0 }
};
const struct strtab policy_tls_names[] = {
	{ "splice", POLICY_TLS_SPLICE },
	{ "inspect", POLICY_TLS_INSPECT },
	{ NULL, 0 }
};
const struct strtab policy_mode_names[] = {
	{ "enforce", POLICY_MODE_ENFORCE },
	{ "report", POLICY_MODE_REPORT },
	{ NULL, 0 }
};
const struct strtab policy_unknown_names[] = {
	{ "deny", POLICY_UNKNOWN_DENY },
	{ "ask", POLICY_UNKNOWN_ASK },
	{ NULL, 0 }
};
const struct strtab policy_action_names[] = {
	{ "allow", POLICY_ACTION_ALLOW },
	{ "deny", POLICY_ACTION_DENY },
	{ NULL, 0 }
};

static const char *const policy_reasons[] = {
	[POLICY_REASON_NONE] = "none",
	[POLICY_REASON_INVALID_NAME] = "invalid_name",
	[POLICY_REASON_IP_LITERAL] = "ip_literal_name",
	[POLICY_REASON_NAME_NOT_ALLOWED] = "name_not_allowed",
	[POLICY_REASON_PORT_NOT_ALLOWED] = "port_not_allowed",
	[POLICY_REASON_PROTOCOL_NOT_ALLOWED] = "protocol_not_allowed",
	[POLICY_REASON_METHOD_NOT_ALLOWED] = "method_not_allowed",
	[POLICY_REASON_PATH_NOT_ALLOWED] = "path_not_allowed",
	[POLICY_REASON_INVALID_PATH] = "invalid_path",
	[POLICY_REASON_ADDRESS_NOT_ALLOWED] = "address_not_allowed",
	[POLICY_REASON_ADDRESS_IN_FLOOR] = "address_in_floor",
	[POLICY_REASON_PRIVATE_ADDRESS] = "private_address",
	[POLICY_REASON_DENIED_BY_RULE] = "denied_by_rule",
};

const char *
policy_reason_str(enum policy_reason r)
{
	if ((size_t)r >= sizeof(policy_reasons) / sizeof(policy_reasons[0]) ||
	    policy_reasons[r] == NULL)
		return "unknown";
	return policy_reasons[r];
}

static const char *
policy_str(const struct strtab *t, int v)
{
	const char *s = strtab_name(t, v);

	return s != NULL ? s : "unknown";
}

const char *
policy_proto_str(enum policy_proto p)
{
	return policy_str(policy_proto_names, (int)p);
}

const char *
policy_tls_str(enum policy_tls t)
{
	return policy_str(policy_tls_names, (int)t);
}

const char *
policy_mode_str(enum policy_mode m)
{
	return policy_str(policy_mode_names, (int)m);
}

const char *
policy_action_str(enum policy_action a)
{
	return policy_str(policy_action_names, (int)a);
}

const char *
policy_unknown_str(enum policy_unknown u)
{
	return policy_str(policy_unknown_names, (int)u);
}

int
policy_reason_is_unknown(enum policy_reason r)
{
	return r == POLICY_REASON_NAME_NOT_ALLOWED ||
	    r == POLICY_REASON_PORT_NOT_ALLOWED;
}

/* A deny rule without ports names every port. */
static int
policy_rule_has_port(const struct policy_rule *r, uint16_t port)
{
	size_t i;

	if (r->pr_nports == 0 && r->pr_action == POLICY_ACTION_DENY)
		return 1;
	for (i = 0; i < r->pr_nports; i++)
		if (r->pr_ports[i] == port)
			return 1;
	return 0;
}

static int
policy_rule_fits_proto(const struct policy_rule *r, enum policy_proto seen)
{
	switch (r->pr_proto) {
	case POLICY_PROTO_TCP:
		return 1;	/* any bytes at all */
	case POLICY_PROTO_TLS:
		return seen == POLICY_PROTO_TLS;
	case POLICY_PROTO_HTTP:
		return seen == POLICY_PROTO_HTTP;
	}
	return 0;
}

/*
 * 1 if raw looks like an IP address rather than a name: a strict literal, a
 * bracketed IPv6 literal, or what hostname_normalize() calls an IP literal (an
 * all-numeric last label, which covers "1.2.3", "0x7f.1", "2130706433").
 */
static int
policy_host_is_ip(const char *raw, size_t len, int hrc)
{
	char tmp[NETADDR_STRLEN + 3];
	struct netaddr a;

	if (hrc == HOSTNAME_IP_LITERAL)
		return 1;
	if (len == 0 || len >= sizeof(tmp))
		return 0;
	if (raw[0] == '[' && raw[len - 1] == ']') {
		memcpy(tmp, raw + 1, len - 2);
		tmp[len - 2] = '\0';
	} else {
		memcpy(tmp, raw, len);
		tmp[len] = '\0';
	}
	return netaddr_parse(tmp, &a) == 0;
}

/* Method, path and protocol checks once a rule has matched host and port. */
static enum policy_reason
policy_rule_check(const struct policy_rule *r, const struct policy_query *q)
{
	char norm[POLICY_PATH_MAX];
	size_t i;

	if (!policy_rule_fits_proto(r, q->pq_proto))
		return POLICY_REASON_PROTOCOL_NOT_ALLOWED;
	if (q->pq_method == NULL)
		return POLICY_REASON_NONE;
	if (r->pr_nmethods > 0) {
		/* Methods are case-sensitive tokens (RFC 9110 9.1). */
		for (i = 0; i < r->pr_nmethods; i++)
			if (strcmp(r->pr_methods[i], q->pq_method) == 0)
				break;
		if (i == r->pr_nmethods)
			return POLICY_REASON_METHOD_NOT_ALLOWED;
	}
	if (r->pr_npaths > 0) {
		if (q->pq_path == NULL || policy_path_normalize(q->pq_path,
		    strlen(q->pq_path), norm, sizeof(norm)) == -1)
			return POLICY_REASON_INVALID_PATH;
		for (i = 0; i < r->pr_npaths; i++)
			if (policy_path_match(r->pr_paths[i], norm))
				break;
		if (i == r->pr_npaths)
			return POLICY_REASON_PATH_NOT_ALLOWED;
	}
	return POLICY_REASON_NONE;
}

/*
 * A deny rule r that matched the host (or address): does it decide q?  Port and
 * protocol as an allow rule matches them; one with methods or paths decides a
 * request when they match it (a path it cannot normalise while it restricts paths:
 * refused, never let past it as invalid_path), and for a connection notes itself in
 * *unseen (the first such over TLS) and goes on.  The reason, or NONE.
 */
static enum policy_reason
policy_deny_check(const struct policy_rule *r, const struct policy_query *q,
    const struct policy_rule **unseen)
{
	if (!policy_rule_has_port(r, q->pq_port) ||
	    !policy_rule_fits_proto(r, q->pq_proto))
		return POLICY_REASON_NONE;
	if (r->pr_nmethods == 0 && r->pr_npaths == 0)
		return POLICY_REASON_DENIED_BY_RULE;
	if (q->pq_method == NULL) {
		if (*unseen == NULL && q->pq_proto == POLICY_PROTO_TLS)
			*unseen = r;
		return POLICY_REASON_NONE;
	}
	switch (policy_rule_check(r, q)) {
	case POLICY_REASON_NONE:
		return POLICY_REASON_DENIED_BY_RULE;
	case POLICY_REASON_INVALID_PATH:
		return POLICY_REASON_INVALID_PATH;
	default:
		return POLICY_REASON_NONE;	/* its method or path does not match */
	}
}

int
policy_decide(const struct policy *p, const struct policy_query *q,
    struct policy_verdict *v)
{
	char name[HOSTNAME_MAX + 1];
	const struct policy_rule *r, *rule = NULL, *unseen = NULL;
	enum policy_reason reason = POLICY_REASON_NONE;
	size_t i, len;
	int hrc, have_name = 0, ip_name = 0, host_seen = 0, matched;

	memset(v, 0, sizeof(*v));
	if (p == NULL || q == NULL) {
		v->pv_reason = POLICY_REASON_INVALID_NAME;
		return 0;
	}
	if (q->pq_host != NULL) {
		len = strlen(q->pq_host);
		hrc = hostname_normalize(q->pq_host, len, name);
		if (hrc == HOSTNAME_OK)
			have_name = 1;
		else if (policy_host_is_ip(q->pq_host, len, hrc))
			ip_name = 1;	/* only a cidr rule (via pq_addr) can match */
		else {
			reason = POLICY_REASON_INVALID_NAME;
			goto out;
		}
	} else if (q->pq_addr == NULL) {
		reason = POLICY_REASON_INVALID_NAME;
		goto out;
	}

	for (i = 0; i < p->p_nrules; i++) {
		r = &p->p_rules[i];
		if (r->pr_is_cidr)
			matched = q->pq_addr != NULL &&
			    netaddr_cidr_contains(&r->pr_cidr, q->pq_addr);
		else
			matched = have_name && hostname_match(r->pr_host, name);
		if (!matched)
			continue;
		if (r->pr_action == POLICY_ACTION_DENY) {
			if ((reason = policy_deny_check(r, q, &unseen)) ==
			    POLICY_REASON_NONE)
				continue;
			rule = r;
			goto out;
		}
		host_seen = 1;
		if (!policy_rule_has_port(r, q->pq_port))
			continue;
		rule = r;
		break;
	}
	if (rule == NULL) {
		if (host_seen)
			reason = POLICY_REASON_PORT_NOT_ALLOWED;
		else if (have_name)
			reason = POLICY_REASON_NAME_NOT_ALLOWED;
		else if (ip_name)
			reason = POLICY_REASON_IP_LITERAL;
		else
			reason = POLICY_REASON_ADDRESS_NOT_ALLOWED;
		goto out;
	}
	reason = policy_rule_check(rule, q);
	/*
	 * A deny rule that decides requests matched this TLS connection: only an
	 * inspecting rule shows them to it.
	 */
	if (reason == POLICY_REASON_NONE && unseen != NULL &&
	    (rule->pr_proto != POLICY_PROTO_TLS ||
	    rule->pr_tls != POLICY_TLS_INSPECT)) {
		rule = unseen;
		reason = POLICY_REASON_DENIED_BY_RULE;
	}
 out:
	v->pv_rule = rule;
	v->pv_reason = reason;
	if (rule != NULL && rule->pr_action == POLICY_ACTION_DENY)
		v->pv_tls = q->pq_method != NULL &&
		    q->pq_proto == POLICY_PROTO_TLS ? POLICY_TLS_INSPECT :
		    POLICY_TLS_SPLICE;
	else if (rule != NULL && rule->pr_proto == POLICY_PROTO_TLS)
		v->pv_tls = rule->pr_tls;
	if (reason == POLICY_REASON_NONE)
		v->pv_allow = 1;
	else if (p != NULL && p->p_mode == POLICY_MODE_REPORT) {
		v->pv_allow = 1;
		v->pv_would_deny = 1;
	}
	return v->pv_allow;
}

/* Sets every host bit of c's block: the last address it contains. */
static void
policy_cidr_last(const struct netaddr_cidr *c, struct netaddr *last)
{
	unsigned char *b;
	unsigned int bits, i;

	*last = c->nc_addr;
	if (last->na_family == AF_INET) {
		b = (unsigned char *)&last->na_u.v4;
		bits = 32;
	} else {
		b = (unsigned char *)&last->na_u.v6;
		bits = 128;
	}
	for (i = c->nc_prefix; i < bits; i++)
		b[i / 8] |= (unsigned char)(0x80 >> (i % 8));
}

int
policy_rule_allows_private(const struct policy_rule *r, const struct netaddr *a)
{
	struct netaddr last;
	const char *why_a = NULL, *why_first = NULL, *why_last = NULL;

	if (r == NULL || a == NULL || !r->pr_is_cidr ||
	    r->pr_action == POLICY_ACTION_DENY ||
	    !netaddr_cidr_contains(&r->pr_cidr, a))
		return 0;
	if (netaddr_classify(a, &why_a) != NETADDR_PRIVATE)
		return 0;	/* the floor never; a public address needs no pass */
	/*
	 * "Explicitly" means the block is inside one private range: both its ends
	 * are private addresses of the same named range as a.  A block wide
	 * enough to cover public space too ("0.0.0.0/0", "8.0.0.0/6") does not
	 * name 10/8 and opens no private address.
	 */
	policy_cidr_last(&r->pr_cidr, &last);
	if (netaddr_classify(&r->pr_cidr.nc_addr, &why_first) != NETADDR_PRIVATE ||
	    netaddr_classify(&last, &why_last) != NETADDR_PRIVATE)
		return 0;
	if (why_a == NULL || why_first == NULL || why_last == NULL ||
	    strcmp(why_a, why_first) != 0 || strcmp(why_a, why_last) != 0)
		return 0;
	return 1;
}

const struct upstream_proxy *
policy_upstream_route(const struct policy *p, const struct upstream_proxy *global)
{
	switch (p->p_upstream) {
	case POLICY_UPSTREAM_DIRECT:
		return NULL;
	case POLICY_UPSTREAM_PROXY:
		return &p->p_upstream_proxy;
	case POLICY_UPSTREAM_GLOBAL:
		break;
	}
	return global;
}
