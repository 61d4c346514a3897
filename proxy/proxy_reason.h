/*
 * proxy/proxy_reason.h: every reason code airlockd writes into an audit record's
 * "reason" (denials, exfil records), one table: the code and what it means.
 * Call sites name a code by its enum (PR_STR(POLICY_RELOAD)), so a code that is not
 * in the table does not compile, and tests/unit/reasons.c checks the table against
 * README's "Denial reason codes" (every code there, nothing else).  The policy
 * engine's own codes (policy_reason_str()) are in the table too.
 */
#ifndef AIRLOCK_PROXY_REASON_H
#define AIRLOCK_PROXY_REASON_H

#include <stddef.h>

#define PROXY_REASONS(X)						\
	/* the policy engine's (policies/, policy_reason_str()) */	\
	X(NAME_NOT_ALLOWED, "name_not_allowed", "no rule names the host")	\
	X(PORT_NOT_ALLOWED, "port_not_allowed", "a rule names the host, none this port") \
	X(PROTOCOL_NOT_ALLOWED, "protocol_not_allowed", "not the rule's protocol") \
	X(METHOD_NOT_ALLOWED, "method_not_allowed", "HTTP method not allowed or not registered") \
	X(PATH_NOT_ALLOWED, "path_not_allowed", "normalised path not allowed") \
	X(INVALID_PATH, "invalid_path", "a path that cannot be normalised or reads as an authority") \
	X(INVALID_NAME, "invalid_name", "malformed host name")		\
	X(IP_LITERAL_NAME, "ip_literal_name", "a name that is an IP address") \
	X(ADDRESS_NOT_ALLOWED, "address_not_allowed", "an address no cidr rule names") \
	X(ADDRESS_IN_FLOOR, "address_in_floor", "loopback, link-local, metadata, ...") \
	X(PRIVATE_ADDRESS, "private_address", "a private range no cidr rule names") \
	X(DENIED_BY_RULE, "denied_by_rule", "an \"action\": \"deny\" rule matches") \
	/* the connection path */					\
	X(NOT_REDIRECTED, "not_redirected", "the connection bypassed the redirect") \
	X(UNMAPPED_ADDRESS, "unmapped_address", "a pool address DNS never gave this sandbox") \
	X(UNKNOWN_SANDBOX, "unknown_sandbox", "the source is no sandbox's") \
	X(AUDIT_UNAVAILABLE, "audit_unavailable", "the audit log cannot be written") \
	X(CONNECTION_LIMIT, "connection_limit", "limits.connections reached") \
	X(RATE_LIMITED, "rate_limited", "a per-second limit spent")	\
	X(SNI_MISSING, "sni_missing", "a ClientHello without server_name") \
	X(SNI_MISMATCH, "sni_mismatch", "the SNI is not the mapped name") \
	X(SNI_IP_LITERAL, "sni_ip_literal", "the SNI is an IP address") \
	X(SNI_INVALID, "sni_invalid", "the SNI is not a valid host name") \
	X(ECH_REFUSED, "ech_refused", "the ClientHello offers ECH or ESNI") \
	X(TLS_MALFORMED, "tls_malformed", "a malformed or oversized ClientHello") \
	X(HOST_MISMATCH, "host_mismatch", "Host is not the connection's name and port") \
	X(HTTP_MALFORMED, "http_malformed", "a malformed request head")	\
	X(HTTP_HEAD_TOO_LARGE, "http_head_too_large", "a request head over the limits") \
	X(HTTP_VERSION_NOT_SUPPORTED, "http_version_not_supported", "not HTTP/1.0 or 1.1") \
	X(PEEK_TIMEOUT, "peek_timeout", "nothing decidable within 10 s") \
	X(RESOLVE_FAILED, "resolve_failed", "the name does not resolve on the host") \
	X(CONNECT_FAILED, "connect_failed", "no connection to the checked address") \
	X(UPSTREAM_PROXY_UNREACHABLE, "upstream_proxy_unreachable", "the upstream proxy could not be reached or did not answer") \
	X(UPSTREAM_PROXY_REFUSED, "upstream_proxy_refused", "the upstream proxy refused the tunnel or answered malformed") \
	X(UPSTREAM_PROXY_AUTH, "upstream_proxy_auth", "the upstream proxy wants credentials (407)") \
	X(POLICY_RELOAD, "policy_reload", "a reload no longer allows the connection") \
	X(SANDBOX_REMOVED, "sandbox_removed", "the sandbox went away")	\
	X(INTERNAL_ERROR, "internal_error", "airlockd could not go on (memory, a lock)") \
	X(SHUTDOWN, "shutdown", "airlockd stopped before the connection was decided") \
	/* inspect mode */						\
	X(INSPECT_UNAVAILABLE, "inspect_unavailable", "no usable sandbox CA or leaf") \
	X(CLIENT_TLS_FAILED, "client_tls_failed", "the VM's TLS handshake failed") \
	X(CLIENT_TLS_TIMEOUT, "client_tls_timeout", "no VM handshake within 10 s") \
	X(TRACE_REFUSED, "trace_refused", "TRACE or TRACK")		\
	X(WEBSOCKET_NOT_ALLOWED, "websocket_not_allowed", "an upgrade the rule does not allow") \
	X(PLACEHOLDER_UNBOUND_HOST, "placeholder_unbound_host", "a placeholder to a host it is not bound to") \
	X(PLACEHOLDER_IN_HEADER, "placeholder_in_header", "a placeholder in a field no inject names") \
	X(PLACEHOLDER_IN_URL, "placeholder_in_url", "a placeholder in the request line") \
	X(PLACEHOLDER_IN_BODY, "placeholder_in_body", "a placeholder in a request body") \
	X(PLACEHOLDER_ENCODED, "placeholder_encoded", "an encoded placeholder") \
	X(PLACEHOLDER_UNPROTECTED, "placeholder_unprotected", "a placeholder in bytes relayed as they are") \
	X(SECRET_REDACTED, "secret_redacted", "a secret value in a response was replaced") \
	X(SECRET_IN_FIELD_NAME, "secret_in_field_name", "a secret value as a response field name") \
	X(SECRET_UNAVAILABLE, "secret_unavailable", "the secret to inject is not in the vault") \
	X(UPSTREAM_CERT_INVALID, "upstream_cert_invalid", "the origin's certificate failed verification") \
	X(UPSTREAM_TLS_FAILED, "upstream_tls_failed", "the TLS handshake with the origin failed") \
	X(UPSTREAM_HTTP_MALFORMED, "upstream_http_malformed", "a response airlock will not pass on") \
	X(UPSTREAM_COMPRESSED, "upstream_compressed", "a compressed response that must be scanned") \
	X(UPSTREAM_CLOSED, "upstream_closed", "the origin closed without a complete response") \
	X(GRPC_NEEDS_H2, "grpc_needs_h2", "gRPC over HTTP/2 to an origin that speaks HTTP/1.1 only") \
	/* policy DNS */						\
	X(QTYPE_REFUSED, "qtype_refused", "a query type airlock does not answer") \
	X(QCLASS_REFUSED, "qclass_refused", "a query class other than IN") \
	X(MALFORMED_QUERY, "malformed_query", "a query that does not parse") \
	X(OPCODE_NOT_IMPLEMENTED, "opcode_not_implemented", "not a standard query") \
	X(EDNS_VERSION, "edns_version", "an EDNS version other than 0") \
	X(NO_POLICY, "no_policy", "the sandbox has no loaded policy") \
	X(MAP_FAILED, "map_failed", "no mapped address could be given") \
	/* the audit log itself (audit/) */				\
	X(AGGREGATE_OVERFLOW, "aggregate_overflow", "suppressed denials counted late")

enum proxy_reason {
#define PROXY_REASON_ENUM(e, code, meaning)	PR_##e,
	PROXY_REASONS(PROXY_REASON_ENUM)
#undef PROXY_REASON_ENUM
	PR__COUNT
};

struct proxy_reason_info {
	const char	*ri_code;
	const char	*ri_meaning;
};
extern const struct proxy_reason_info proxy_reasons[PR__COUNT];

/* The code of reason e, e.g. PR_STR(POLICY_RELOAD) is "policy_reload". */
#define PR_STR(e)	(proxy_reasons[PR_##e].ri_code)

#endif
