/*
 * include/policy.h: the policy model (policies/SCHEMA.md) as plain, immutable C structs.
 * Loaded and validated by policies/ (jansson stays inside policies/); evaluated by the
 * pure function policy_decide().  No sockets, no privileges.
 *
 * A policy may name bases ("base": [FILES], policies/SCHEMA.md "Bases"): the loader
 * reads every file of it once, into a struct policy_bundle, and merges the files
 * into one struct policy whose p_rules are in evaluation order (every deny rule
 * first).  A process without a file system view (airlockd's worker) loads a bundle
 * that another process read (policy_bundle_read()).
 */
#ifndef AIRLOCK_POLICY_H
#define AIRLOCK_POLICY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hostname.h"
#include "netaddr.h"
#include "strtab.h"
#include "upstream.h"

enum policy_mode {
	POLICY_MODE_ENFORCE = 0,
	POLICY_MODE_REPORT,
};

enum policy_proto {
	POLICY_PROTO_TLS = 0,		/* default */
	POLICY_PROTO_HTTP,
	POLICY_PROTO_TCP,
};

enum policy_tls {
	POLICY_TLS_SPLICE = 0,		/* default */
	POLICY_TLS_INSPECT,
};

/* What a name no rule allows gets ("unknown"): refused, or refused and asked. */
enum policy_unknown {
	POLICY_UNKNOWN_DENY = 0,	/* default */
	POLICY_UNKNOWN_ASK,		/* refused and recorded as a pending approval */
};

enum policy_action {
	POLICY_ACTION_ALLOW = 0,	/* default */
	POLICY_ACTION_DENY,
};

struct policy_inject {
	char		*pi_secret;	/* vault name */
	char		*pi_header;	/* header to set */
	char		*pi_value;	/* template containing "{secret}" */
};

/*
 * A deny rule (pr_action) refuses what the same rule as an allow rule would let
 * through.  It has no tls, inject, websocket or forwarded (pr_tls is splice); without
 * "ports" it names every port (pr_nports 0), without "protocol" every protocol
 * (POLICY_PROTO_TCP: any bytes).  With methods or paths it decides requests only.
 */
struct policy_rule {
	char		*pr_id;
	enum policy_action pr_action;
	int		 pr_is_cidr;	/* 1: pr_cidr; 0: pr_host */
	char		 pr_host[HOSTNAME_MAX + 1];	/* normalised; may be "*.suffix" */
	struct netaddr_cidr pr_cidr;
	uint16_t	*pr_ports;	/* sorted, unique; defaults to {443}; a deny
					   rule's NULL/0: every port */
	size_t		 pr_nports;
	enum policy_proto pr_proto;
	enum policy_tls	 pr_tls;	/* only meaningful for POLICY_PROTO_TLS */
	char		**pr_methods;	/* upper-case; NULL/0: any method */
	size_t		 pr_nmethods;
	char		**pr_paths;	/* globs; NULL/0: any path */
	size_t		 pr_npaths;
	struct policy_inject *pr_inject;
	size_t		 pr_ninject;
	int		 pr_websocket;	/* http.websocket: Upgrade allowed */
	int		 pr_forwarded;	/* http.forwarded: airlock adds its own
					   Forwarded naming the sandbox */
	const char	*pr_file;	/* the file it is written in (a p_files entry's
					   ps_file): audit records' "rule_file" */
	size_t		 pr_index;	/* its place in that file's "rules" */
};

struct policy_limits {
	uint32_t	pl_connections;		/* 0: unlimited */
	uint32_t	pl_requests_per_second;
	uint64_t	pl_bytes_per_second;
	uint32_t	pl_connections_per_second;
	/* HTTP/2 flood limits (proxy_h2.c): 0 is the default, a value lowers it */
	uint32_t	pl_h2_streams;		/* concurrent streams (100) */
	uint32_t	pl_h2_resets_per_second;	/* RST_STREAM from the VM (100) */
	uint32_t	pl_h2_control_per_second;	/* SETTINGS, PING, empty DATA (100) */
};
#define POLICY_H2_LIMIT_MAX	100	/* the default and highest of each */

/* Where the connections of a policy's sandbox go out ("upstream_proxy"). */
enum policy_upstream {
	POLICY_UPSTREAM_GLOBAL = 0,	/* absent: airlock.json's upstream_proxy */
	POLICY_UPSTREAM_DIRECT,		/* "direct": never through a proxy */
	POLICY_UPSTREAM_PROXY,		/* an object: p_upstream_proxy */
};

/* One file a policy was loaded from: its own, a base, an extra layer. */
struct policy_source {
	char		*ps_file;	/* as the loader read it (a bundle's pt_file) */
	char		*ps_name;	/* its "policy" */
	char		 ps_hash[65];	/* hex SHA-256 of its bytes */
	size_t		 ps_nrules;	/* rules written in it */
	unsigned int	 ps_depth;	/* 0: a layer's own file; 1: a base it names... */
	unsigned int	 ps_layer;	/* 0: the policy; 1..: policy_load_layers()' extra */
};

struct policy {
	char		*p_name;	/* "policy" (of the policy's own file) */
	char		*p_file;	/* the file it came from, or NULL */
	enum policy_mode p_mode;	/* report only when every file says so */
	enum policy_unknown p_unknown;	/* ask: the policy's own file says so and
					   no other file of it says "deny" */
	struct policy_rule *p_rules;	/* in evaluation order (SCHEMA.md) */
	size_t		 p_nrules;
	struct policy_limits p_limits;	/* the strictest of every file's */
	enum policy_upstream p_upstream;
	struct upstream_proxy p_upstream_proxy;	/* POLICY_UPSTREAM_PROXY */
	/*
	 * hex SHA-256 of the file's bytes; with bases or extra layers, of the text
	 * of the files' own hashes in p_files' order, one a line ("HASH\n")
	 */
	char		 p_hash[65];
	struct policy_source **p_files;	/* [0]: its own; then load order */
	size_t		 p_nfiles;
};

/* One load error: where and why.  Every error of a document is collected. */
struct policy_error {
	char		*pe_file;	/* file name (or the name given to policy_load_buf) */
	char		*pe_path;	/* JSON path, e.g. "$.rules[1].ports[0]" */
	int		 pe_line;	/* 0 when unknown */
	int		 pe_column;
	char		*pe_reason;
};

struct policy_errors {
	struct policy_error *v;
	size_t		 n;
};

/*
 * The bytes of the files a policy is loaded from, each once: what the loader reads
 * bases from.  pt_file is the path the loader asks for (a base's: its name joined
 * to the folder of the file naming it, policies/SCHEMA.md "Bases"); pt_buf its
 * bytes (NUL-terminated), or NULL with pt_error ("cannot open: ...").
 */
struct policy_text {
	char		*pt_file;
	char		*pt_buf;
	size_t		 pt_len;
	char		*pt_error;
};
struct policy_bundle {
	struct policy_text *pb_v;
	size_t		 pb_n;
};
#define POLICY_BASE_DEPTH	8	/* levels of bases below a policy's own file */
#define POLICY_BASES_MAX	16	/* names in one "base" */
#define POLICY_FILES_MAX	32	/* files in one policy, its layers included */
#define POLICY_LAYER_RULES_MAX	16384	/* rules of all its files together */

/*
 * Adds file's bytes (a copy of buf[len]; or, buf NULL, the error text error) to b,
 * unless b has file already.  0, or -1 (out of memory).
 */
int	policy_bundle_add(struct policy_bundle *b, const char *file, const char *buf,
	    size_t len, const char *error);
/*
 * Reads into b, from the file system, file (unless b has it: standard input, say)
 * and every base the loader will ask for when it loads file, in the order it asks;
 * a file that cannot be read goes in with its error.  May be called again for
 * another file (an extra layer) into the same b.  0, or -1 (out of memory).
 */
int	policy_bundle_read(struct policy_bundle *b, const char *file);
void	policy_bundle_free(struct policy_bundle *b);

/*
 * Loads and validates a policy.  Returns the policy, to be released with policy_free(),
 * or NULL with every error found appended to *errs (release with
 * policy_errors_free()).  errs may be NULL.
 *
 * policy_load_file(): file and its bases from the file system.  policy_load_buf():
 * one document and no file (a base it names is an error: not in the bundle).
 * policy_load_bundle(): b's first file and its bases, from b only (no file is
 * opened).  policy_load_layers(): a policy (files[0]) and extra layers
 * (files[1..n-1]), each with its own bases, all from b: an extra layer's deny rules
 * are tried after every deny rule before it, its allow rules after every allow rule
 * before it; its limits count as a base's; it may not say "mode" or
 * "upstream_proxy" (the policy's own files decide those).
 */
struct policy *policy_load_file(const char *file, struct policy_errors *errs);
struct policy *policy_load_buf(const char *buf, size_t len, const char *name,
	    struct policy_errors *errs);
struct policy *policy_load_bundle(const struct policy_bundle *b,
	    struct policy_errors *errs);
struct policy *policy_load_layers(const struct policy_bundle *b,
	    const char *const *files, size_t n, struct policy_errors *errs);
void	policy_free(struct policy *p);
void	policy_errors_free(struct policy_errors *errs);
/* Formats one error as "file:line:col: $.path: reason" (line:col omitted when 0). */
int	policy_error_fmt(const struct policy_error *e, char *buf, size_t len);

/* Stable reason codes for denials (the README lists them). */
enum policy_reason {
	POLICY_REASON_NONE = 0,
	POLICY_REASON_INVALID_NAME,		/* "invalid_name" */
	POLICY_REASON_IP_LITERAL,		/* "ip_literal_name" */
	POLICY_REASON_NAME_NOT_ALLOWED,		/* "name_not_allowed" */
	POLICY_REASON_PORT_NOT_ALLOWED,		/* "port_not_allowed" */
	POLICY_REASON_PROTOCOL_NOT_ALLOWED,	/* "protocol_not_allowed" */
	POLICY_REASON_METHOD_NOT_ALLOWED,	/* "method_not_allowed" */
	POLICY_REASON_PATH_NOT_ALLOWED,		/* "path_not_allowed" */
	POLICY_REASON_INVALID_PATH,		/* "invalid_path" */
	POLICY_REASON_ADDRESS_NOT_ALLOWED,	/* "address_not_allowed" */
	POLICY_REASON_ADDRESS_IN_FLOOR,		/* "address_in_floor" */
	POLICY_REASON_PRIVATE_ADDRESS,		/* "private_address" */
	POLICY_REASON_DENIED_BY_RULE,		/* "denied_by_rule" */
};
const char *policy_reason_str(enum policy_reason r);

/* What the proxy saw of a connection or request. */
struct policy_query {
	const char	*pq_host;	/* raw, as the VM presented it; NULL: use pq_addr */
	const struct netaddr *pq_addr;	/* destination address, for cidr rules */
	uint16_t	 pq_port;
	enum policy_proto pq_proto;	/* what the first bytes were */
	const char	*pq_method;	/* NULL: connection-level decision only */
	const char	*pq_path;	/* raw request target path (no query string) */
};

struct policy_verdict {
	int		 pv_allow;	/* 1: let it through (also in report mode) */
	int		 pv_would_deny;	/* report mode: enforce would have denied */
	enum policy_reason pv_reason;	/* why it was (or would be) denied */
	const struct policy_rule *pv_rule; /* the rule that decided, or NULL */
	enum policy_tls	 pv_tls;	/* splice or inspect (a tls rule decided) */
};

/*
 * First-match evaluation: the first rule whose host (or cidr) and port match decides.
 * Names go through hostname_normalize() first.  With pq_method set, the rule's
 * methods and path globs are checked too.  Never fails: a malformed query is a denial
 * with its reason.  Returns pv_allow.
 *
 * A deny rule decides (denied_by_rule) when it matches as an allow rule would let
 * through: host, port, protocol and, for a request, method and path (a path it
 * cannot normalise while it restricts paths: invalid_path).  One that restricts
 * methods or paths decides requests only; a TLS connection it matches is refused
 * unless an inspecting rule allows it (its requests could not be seen).  Its
 * verdict's pv_tls (report mode lets it through) is inspect for a request over TLS,
 * else splice.
 */
int	policy_decide(const struct policy *p, const struct policy_query *q,
	    struct policy_verdict *v);

/*
 * Path normaliser: decodes percent-encoded unreserved characters, resolves "." and
 * ".." without leaving the root, collapses nothing else.  Refuses encoded '/', '\',
 * NUL, any control byte, a raw '\', and a path not starting with '/'.  Stops at '?' or
 * '#'.  Writes to out (outlen bytes).  Returns 0 or -1.
 */
int	policy_path_normalize(const char *in, size_t len, char *out, size_t outlen);

/* Glob match: '*' within one segment, '**' across segments (0 or more). 1 on match. */
int	policy_path_match(const char *glob, const char *path);

/*
 * Limits the loader enforces (policies/SCHEMA.md): a policy file is at most
 * POLICY_FILE_MAX bytes; a glob at most POLICY_GLOB_MAX bytes.  POLICY_PATH_MAX is a
 * sensible output size for policy_path_normalize() (a request path longer than the
 * caller's buffer is refused, not truncated).
 */
#define POLICY_FILE_MAX		(1024 * 1024)
#define POLICY_RULES_MAX	4096
#define POLICY_GLOB_MAX		1024
#define POLICY_PATH_MAX		8192
#define POLICY_ERRORS_MAX	100

/*
 * 1 if rule r is a cidr rule that names a explicitly: r's block contains a and lies
 * entirely inside one private range (netaddr_classify() NETADDR_PRIVATE), so
 * "0.0.0.0/0" opens no private address while "10.1.0.0/16" opens 10.1.2.3.  Never 1 for
 * a floor address, nor for a deny rule.  The proxy calls this at dial time, after
 * policy_decide().
 */
int	policy_rule_allows_private(const struct policy_rule *r, const struct netaddr *a);

/*
 * `airlock policy suggest` (policies/policy_suggest.c): a minimal policy from what a
 * sandbox was seen to do.  Each policy_suggest_add() is one audit record's
 * destination (and request); policy_suggest_build() returns the policy document
 * (malloc'd, NUL-terminated JSON that policy_load_buf() accepts) or NULL with err
 * set.  siblings (0: none) is how many names below one registrable domain make a
 * wildcard, and how many paths under one parent make "parent/" plus a star.  What is left out
 * (floor addresses, paths that cannot be literal globs) is said on notes, if not
 * NULL, one "note: ..." line each.
 */
struct policy_seen {
	const char	*pw_host;	/* a normalised name, or NULL for pw_addr */
	const struct netaddr *pw_addr;
	uint16_t	 pw_port;
	enum policy_proto pw_proto;
	int		 pw_inspect;	/* seen inspected (or plain HTTP requests) */
	const char	*pw_method;	/* a request's, or NULL */
	const char	*pw_path;	/* the request's path as sent, or NULL */
};
struct policy_suggest;
struct policy_suggest *policy_suggest_new(FILE *notes);
int	policy_suggest_add(struct policy_suggest *s, const struct policy_seen *w);
char	*policy_suggest_build(struct policy_suggest *s, const char *name,
	    unsigned siblings, char *err, size_t errlen);
void	policy_suggest_free(struct policy_suggest *s);

/*
 * The upstream proxy p's connections go through: p's own, none for "direct", and
 * for a policy that says nothing, global (airlock.json's, NULL when it has none).
 * NULL: direct.  The proxy decides nothing: it comes after policy_decide().
 */
const struct upstream_proxy *policy_upstream_route(const struct policy *p,
	    const struct upstream_proxy *global);

/*
 * The names of protocol, tls and mode in a policy file and on the command line,
 * "tls", "http", "tcp" / "splice", "inspect" / "enforce", "report": parsed with
 * strtab_value() and printed by these (static strings, "unknown" for no value).
 */
extern const struct strtab policy_proto_names[];
extern const struct strtab policy_tls_names[];
extern const struct strtab policy_mode_names[];
extern const struct strtab policy_action_names[];
extern const struct strtab policy_unknown_names[];
const char *policy_proto_str(enum policy_proto p);
const char *policy_tls_str(enum policy_tls t);
const char *policy_mode_str(enum policy_mode m);
const char *policy_action_str(enum policy_action a);
const char *policy_unknown_str(enum policy_unknown u);

/*
 * 1 if reason r says that no rule allows the name (or the name on that port):
 * name_not_allowed, port_not_allowed.  What "unknown" and approvals are about
 * (never a deny rule's refusal, nor a request's method or path).
 */
int	policy_reason_is_unknown(enum policy_reason r);

#endif
