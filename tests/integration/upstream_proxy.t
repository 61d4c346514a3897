#!/bin/bash
# tests/integration/upstream_proxy.t: airlockd's connections through a corporate
# HTTP proxy (upstream_proxy, docs/CONFIGURATION.md), a real Squid in the test's
# "internet" namespace, through the real enforcement path (tests/lib/proxynet.sh).
#
#	VMs -- HOST (airlockd) --veth-- INTERNET: Squid A 11.0.0.2:3128 (airlock.json's
#	proxy, no credentials; an acl refuses refused*.test), Squid B 10.99.0.2:3130
#	(a private address, named authproxy.test; basic auth), the origins at
#	11.0.0.5..8 (each logs the address of every peer: Squid's is 11.0.0.2, the
#	namespace's first, airlockd's would be 11.0.0.1).
#
# Covers: splice, inspect and raw TCP (a banner right behind the 200) through the
# proxy, the origin's name never resolved by airlockd (not in its hosts file) and
# never contacted by it; a connection decided on its address (cidr) tunnelled as
# CONNECT ADDR:PORT; denials (port, SNI) decided before Squid sees anything; Squid's
# acl refusing (upstream_proxy_refused, splice and inspect); a proxy that wants
# credentials (407 without them and with wrong ones: upstream_proxy_auth) and the
# right ones, whose canary password is in no audit record, no log line of airlockd
# and no byte the VM or the origin received; the origin's certificate verified
# through the tunnel (upstream_cert_invalid); per-policy "direct" and a policy's own
# proxy; a proxy name resolving to loopback and a proxy at the host's own address
# (address_in_floor); a policy whose proxy secret the vault does not bind is not
# loaded, and a removed secret refuses at dial time (secret_unavailable); a reload
# that changes the way out ends a live tunnel, one that does not keeps it; Squid
# stopped (upstream_proxy_unreachable); the metrics count the new codes; never a
# direct connection.  Needs root and squid; cleans up by trap.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/proxynet.sh
pn_require curl openssl squid perl
if [ ! -x /usr/lib/squid/basic_ncsa_auth ] || ! getent passwd proxy >/dev/null; then
	echo "1..0 # SKIP no /usr/lib/squid/basic_ncsa_auth or no user proxy"
	exit 0
fi

CANARY_PW='cAnArY-Pr0xy-pw-41c9e2d7b8'
WRONG_PW='not-the-password-7777'

set -e
pn_setup up
for i in 0 1 2 3 4 5 6 7; do
	pn_vm "V$i" "$i"
done
for a in 5 6 7 8; do
	ip netns exec "$I" ip addr add 11.0.0.$a/24 dev eth0
done
# Squid B's private address, on the same link.
inH ip addr add 10.99.0.1/24 dev ih
ip netns exec "$I" ip addr add 10.99.0.2/24 dev eth0
# What airlockd resolves: the proxies' names and the names a direct connection
# would need (so a fallback could happen, and would show); never origin.test,
# insp.test, git.test or wrong.test, which only Squid resolves.
pn_hosts "10.99.0.2 authproxy.test" "127.0.0.1 loopproxy.test" \
    "11.0.0.6 direct.test" "11.0.0.7 refused.test refusedi.test fallback.test"
printf '%s\n' "11.0.0.5 origin.test insp.test git.test" "11.0.0.6 direct.test" \
    "11.0.0.7 refused.test refusedi.test fallback.test" "11.0.0.8 wrong.test" \
    >"$T/squid-hosts"
chmod 644 "$T/squid-hosts"

# --- origins --------------------------------------------------------------------
origin_cert "$T" origin.test origin.test insp.test
origin_cert "$T" direct.test direct.test
origin_cert "$T" refused.test refused.test refusedi.test fallback.test
origin_cert "$T" wrongcert not-wrong.test
export ORIGIN_PEERS=1
ORIGIN_RECORD="$T/rec-origin" origin_start "$I" tls 11.0.0.5 443 origin.test \
    "$T/origin.test.pem" "$T/origin.test.key"
origin_start "$I" banner 11.0.0.5 2222 git.test
origin_start "$I" tls 11.0.0.6 443 direct.test "$T/direct.test.pem" \
    "$T/direct.test.key"
origin_start "$I" tls 11.0.0.7 443 refused.test "$T/refused.test.pem" \
    "$T/refused.test.key"
origin_start "$I" tls 11.0.0.8 443 wrong.test "$T/wrongcert.pem" "$T/wrongcert.key"
unset ORIGIN_PEERS

# --- Squid ----------------------------------------------------------------------
# squid_start NAME ADDR PORT [EXTRA]: a Squid of the test's own (no disk cache, logs
# in $T/NAME, user proxy; ended by PID at the clean-up: netns_bg), waits until it
# accepts connections.  Its PID goes into SQUID_PID_NAME.
squid_start() {
	local d=$T/$1
	mkdir -p "$d"
	cat >"$d/squid.conf" <<-EOF
	http_port $2:$3
	visible_hostname $1.test
	pid_filename $d/squid.pid
	cache_log $d/cache.log
	access_log stdio:$d/access.log squid
	cache_store_log none
	coredump_dir $d
	cache deny all
	cache_mem 1 MB
	hosts_file $T/squid-hosts
	dns_nameservers 127.0.0.1
	pinger_enable off
	netdb_filename none
	shutdown_lifetime 0 seconds
	cache_effective_user proxy
	acl refused dstdomain refused.test refusedi.test
	acl CONNECT method CONNECT
	${4:-}
	http_access deny refused
	http_access allow CONNECT
	http_access deny all
	EOF
	: >"$d/access.log"
	chown -R proxy "$d"
	netns_bg "$I" "$d/out.log" squid -N -f "$d/squid.conf"
	eval "SQUID_PID_$1=\$!"
	netns_wait_for "$d/cache.log" "Accepting HTTP Socket connections" 100
}
printf 'airlock:%s\n' "$(openssl passwd -apr1 "$CANARY_PW")" >"$T/passwd"
chmod 644 "$T/passwd"
set +e
squid_start sqa 11.0.0.2 3128
ok $? "Squid A (airlock.json's proxy) runs in the internet namespace" ||
    sed 's/^/# /' "$T/sqa/cache.log" "$T/sqa/out.log" | tail -20
squid_start sqb 10.99.0.2 3130 "auth_param basic program /usr/lib/squid/basic_ncsa_auth $T/passwd
	auth_param basic realm airlock-test
	log_mime_hdrs on
	acl authed proxy_auth REQUIRED
	http_access deny !authed"
ok $? "Squid B (basic auth, at a private address) runs"
set -e

# --- the vault and the policies -------------------------------------------------
cat >"$T/airlock.json" <<EOF
{ "state_dir": "$T/state" }
EOF
V() { "$AIRLOCK" --config "$T/airlock.json" vault "$@" >/dev/null; }
printf 'airlock:%s' "$CANARY_PW" | V put proxy_cred --host authproxy.test
printf 'airlock:%s' "$WRONG_PW" | V put proxy_wrong --host authproxy.test
printf 'airlock:%s-x' "$CANARY_PW" | V put proxy_elsewhere --host other.test

rules='{ "id": "origin", "host": "origin.test" },
    { "id": "insp", "host": "insp.test", "tls": "inspect" },
    { "id": "git", "host": "git.test", "ports": [2222], "protocol": "tcp" },
    { "id": "refused", "host": "refused.test" },
    { "id": "refusedi", "host": "refusedi.test", "tls": "inspect" },
    { "id": "fallback", "host": "fallback.test" },
    { "id": "wrong", "host": "wrong.test", "tls": "inspect" },
    { "id": "direct", "host": "direct.test" },
    { "id": "byaddr", "cidr": "11.0.0.6/32" }'
policy() {	# FILE NAME [UPSTREAM-JSON]
	local up=""
	[ -z "${3:-}" ] || up=", \"upstream_proxy\": $3"
	cat >"$1" <<-EOF
	{ "policy": "$2", "rules": [ $rules ]$up }
	EOF
}
policy "$T/global.json" global
policy "$T/direct.json" direct '"direct"'
authp='{ "url": "http://authproxy.test:3130", "auth": "proxy_cred" }'
policy "$T/authed.json" authed "$authp"
policy "$T/wrongauth.json" wrongauth \
    '{ "url": "http://authproxy.test:3130/", "auth": "proxy_wrong" }'
policy "$T/noauth.json" noauth '{ "url": "http://authproxy.test:3130", "auth": null }'
policy "$T/loop.json" loop '{ "url": "http://loopproxy.test:3128" }'
policy "$T/hostaddr.json" hostaddr '{ "url": "http://11.0.0.1:3128" }'
policy "$T/unbound.json" unbound \
    '{ "url": "http://authproxy.test:3130", "auth": "proxy_elsewhere" }'

set +e
pn_start_or_skip "\"upstream_ca_file\": \"$T/ca.pem\",
  \"upstream_proxy\": { \"url\": \"http://11.0.0.2:3128\", \"auth\": null }"
nf=0
for sb in global:0 direct:1 authed:2 wrongauth:3 noauth:4 loop:5 hostaddr:6; do
	pn_attach "${sb%:*}" "${sb#*:}" "$T/${sb%:*}.json" || nf=$((nf + 1))
done
[ "$nf" = 0 ]
ok $? "seven sandboxes attached, each with its policy"
AL() { inH "$AIRLOCK" --config "$T/airlock.json" "$@"; }
# The VMs trust the test CA and every sandbox CA (each policy inspects).
cp "$T/ca.pem" "$T/vm-ca.pem"
nf=0
for sb in global direct authed wrongauth noauth loop hostaddr; do
	AL ca cert "$sb" >>"$T/vm-ca.pem" 2>/dev/null || nf=$((nf + 1))
done
[ "$nf" = 0 ]
ok $? "the sandbox CAs, for the VMs to trust"

in_vm() { local v; eval "v=\$V$1"; shift; ip netns exec "$v" "$@"; }
: >"$T/vm-received"
# vcurl I ARGS...: curl in VM I; every byte it received (and sent) is kept.
vcurl() {
	local i=$1 rc
	shift
	in_vm "$i" curl -sS --max-time 12 --cacert "$T/vm-ca.pem" \
	    --trace-ascii "$T/trace" "$@"
	rc=$?
	cat "$T/trace" >>"$T/vm-received" 2>/dev/null
	return $rc
}
code() { local i=$1; shift; vcurl "$i" -o /dev/null -w '%{http_code}' "$@" 2>/dev/null; }
# audit_has PATTERN: a record matches, now or within 5 s (a connection's record is
# written when it closes, a moment after the VM's curl ends).
audit_has() {
	local i
	for i in $(seq 50); do
		grep -q -- "$1" "$T/audit.jsonl" && return 0
		sleep 0.1
	done
	return 1
}
alog() { wc -l <"$T/$1/access.log"; }
# wait_log NAME N: until Squid NAME's access log has N lines (it writes a tunnel's
# line when the tunnel ends); 0 once it has, 1 if it never does.
wait_log() {
	local i
	for i in $(seq 50); do
		[ "$(alog "$1")" -ge "$2" ] && return 0
		sleep 0.1
	done
	return 1
}
direct_peers() { cat "$T"/*-443.log "$T"/*-2222.log | grep -c '^accept 11\.0\.0\.1$'; }

# --- 1. splice, inspect and raw TCP through the proxy ---------------------------
a0=$(alog sqa)
out=$(vcurl 0 https://origin.test/ 2>&1)
[ "$out" = "origin origin.test" ]
ok $? "splice through Squid A: the VM's curl verifies origin.test ('$out')"
wait_log sqa $((a0 + 1))
grep -q 'TCP_TUNNEL/200 .* CONNECT origin.test:443 ' "$T/sqa/access.log"
ok $? "Squid A's access log has the CONNECT origin.test:443 (the decided name)"
audit_has '"event":"connect".*"dst":"origin.test:443","tls":"splice".*"proto":"tls","upstream":"11.0.0.2:3128","via":"11.0.0.2:3128"'
ok $? "connect record: upstream is the proxy's address, via names the proxy"
grep -q '^accept 11\.0\.0\.2$' "$T/origin.test-443.log" && [ "$(direct_peers)" = 0 ]
ok $? "the origin's peer was Squid, never airlockd (and airlockd cannot resolve the name)"

out=$(vcurl 0 https://insp.test/ 2>/dev/null)
[ "$out" = "origin origin.test" ]
ok $? "inspect through Squid A: TLS to the origin in the tunnel, the request answered"
wait_log sqa $((a0 + 2))
grep -q 'CONNECT insp.test:443 ' "$T/sqa/access.log" &&
    audit_has '"event":"request".*"dst":"insp.test:443","tls":"inspect","method":"GET","path":"/","status":200'
ok $? "... Squid saw CONNECT insp.test:443; a request record with status 200"
grep -q '^GET / HTTP/1.1' "$T/rec-origin" && ! grep -qi '^proxy-' "$T/rec-origin"
ok $? "... the origin got the VM's request, and nothing of the CONNECT"

G=$(pn_mapped "$V0" git.test)
out=$(in_vm 0 timeout 5 bash -c "exec 3<>/dev/tcp/$G/2222; read -r l <&3;
    echo \"\$l\"; echo hello >&3; read -r l <&3; echo \"\$l\"" 2>&1)
[ "$out" = "git.test ready
hello" ]
ok $? "raw TCP through the proxy: the banner right behind the 200 reaches the VM"

M=$(pn_mapped "$V0" origin.test)
vcurl 0 --resolve direct.test:443:11.0.0.6 https://direct.test/ >/dev/null 2>&1
[ $? = 0 ] && wait_log sqa $((a0 + 4)) &&
    grep -q 'CONNECT 11.0.0.6:443 ' "$T/sqa/access.log"
ok $? "a connection the cidr rule allowed by address: CONNECT 11.0.0.6:443"
audit_has '"event":"connect".*"dst":"11.0.0.6:443".*"via":"11.0.0.2:3128"' &&
    [ "$(direct_peers)" = 0 ]
ok $? "... audited with via; the origin saw Squid only"

# --- 2. denials come first: Squid never sees them --------------------------------
a1=$(alog sqa)
vcurl 0 --resolve "origin.test:8443:$M" https://origin.test:8443/ >/dev/null 2>&1
r1=$?
vcurl 0 --resolve "other.test:443:$M" https://other.test/ >/dev/null 2>&1
r2=$?
[ $r1 != 0 ] && [ $r2 != 0 ] &&
    audit_has '"dst":"origin.test:8443".*"reason":"port_not_allowed"' &&
    audit_has '"dst":"origin.test:443".*"reason":"sni_mismatch"'
ok $? "a port and an SNI the policy refuses: today's denials (port_not_allowed, sni_mismatch)"
vcurl 0 https://origin.test/ >/dev/null 2>&1	# a barrier: Squid logs this one
wait_log sqa $((a1 + 1))
[ "$(alog sqa)" = $((a1 + 1)) ] && ! grep -q 'CONNECT other.test\|:8443' "$T/sqa/access.log"
ok $? "... Squid saw none of them (only the allowed request after them)"
! grep '"reason":"port_not_allowed"\|"reason":"sni_mismatch"' "$T/audit.jsonl" |
    grep -q '"via"'
ok $? "... and they were refused before any way out was chosen (no via)"

# --- 3. Squid's acl refuses the destination --------------------------------------
vcurl 0 https://refused.test/ >/dev/null 2>&1
[ $? != 0 ]
ok $? "splice to a destination Squid refuses: the VM's connection fails"
audit_has '"event":"deny".*"dst":"refused.test:443".*"reason":"upstream_proxy_refused".*"via":"11.0.0.2:3128"'
ok $? "... audited upstream_proxy_refused, with via"
c=$(code 0 https://refusedi.test/)
[ "$c" = 502 ] && audit_has '"event":"request".*"dst":"refusedi.test:443".*"status":502.*"reason":"upstream_proxy_refused"'
ok $? "inspect to a destination Squid refuses: 502, upstream_proxy_refused ($c)"
grep -q 'TCP_DENIED/403 .* CONNECT refused.test:443' "$T/sqa/access.log" &&
    [ ! -s "$T/refused.test-443.log" ]
ok $? "... Squid denied both (403); refused.test, which airlockd could resolve, saw nothing"

# --- 5. credentials ---------------------------------------------------------------
b0=$(alog sqb)
out=$(vcurl 2 https://origin.test/ 2>/dev/null)
[ "$out" = "origin origin.test" ]
ok $? "the authed policy's own proxy (Squid B) with the vault's credentials: splice works"
out=$(vcurl 2 https://insp.test/ 2>/dev/null)
[ "$out" = "origin origin.test" ]
ok $? "... and inspect"
wait_log sqb $((b0 + 2))
grep -q 'TCP_TUNNEL/200 .* CONNECT origin.test:443 airlock ' "$T/sqb/access.log"
ok $? "Squid B logged the tunnel for user airlock"
audit_has '"sandbox":"authed","event":"connect".*"upstream":"10.99.0.2:3130","via":"authproxy.test:3130"'
ok $? "... audited via authproxy.test:3130 (a name, resolved; a private address)"
c=$(code 3 https://origin.test/)
[ "$c" = 000 ] && audit_has '"sandbox":"wrongauth","event":"deny".*"reason":"upstream_proxy_auth"'
ok $? "wrong credentials: 407, upstream_proxy_auth"
c=$(code 4 https://insp.test/)
audit_has '"sandbox":"noauth","event":"request".*"status":502.*"reason":"upstream_proxy_auth"'
ok $? "no credentials (inspect): 502, upstream_proxy_auth ($c)"
grep -q 'TCP_DENIED/407 .* CONNECT origin.test:443' "$T/sqb/access.log"
ok $? "... Squid B answered 407"
b64=$(printf 'airlock:%s' "$CANARY_PW" | base64 -w0)
bad=""
for f in "$T/audit.jsonl" "$T/airlockd.log" "$T/vm-received" "$T/rec-origin"; do
	grep -qF -e "$CANARY_PW" -e "$b64" "$f" && bad="$bad $f"
done
[ -z "$bad" ] && [ -s "$T/vm-received" ] && [ -s "$T/rec-origin" ]
ok $? "the canary password (raw or base64) is in no audit record, airlockd's log, byte the VM or the origin got${bad:+:$bad}"
grep -qF "Proxy-Authorization: Basic $b64" "$T/sqb/access.log"
ok $? "control: Squid B got the credential as Basic on the CONNECT (log_mime_hdrs), where the same check finds it"

# --- 6. the origin's certificate is still verified -------------------------------
c=$(code 0 https://wrong.test/)
[ "$c" = 502 ] && audit_has '"event":"request".*"dst":"wrong.test:443".*"status":502.*"reason":"upstream_cert_invalid"'
ok $? "an origin whose certificate is for another name: 502 upstream_cert_invalid, as without a proxy ($c)"
grep -q 'CONNECT wrong.test:443' "$T/sqa/access.log"
ok $? "... the tunnel was there; the verification refused it end to end"

# --- 7. per policy: direct, and the floor for proxies ----------------------------
a2=$(alog sqa)
out=$(vcurl 1 https://direct.test/ 2>/dev/null)
[ "$out" = "origin direct.test" ] && grep -q '^accept 11\.0\.0\.1$' "$T/direct.test-443.log"
ok $? "\"direct\": the connection goes straight to the origin (peer 11.0.0.1)"
vcurl 0 https://origin.test/ >/dev/null 2>&1
wait_log sqa $((a2 + 1))
[ "$(alog sqa)" = $((a2 + 1)) ]
ok $? "... Squid A saw nothing of it"
audit_has '"sandbox":"direct","event":"connect"' &&
    ! grep '"sandbox":"direct","event":"connect"' "$T/audit.jsonl" | grep -q '"via"'
ok $? "... its record has no via"
vcurl 5 -k https://origin.test/ >/dev/null 2>&1
[ $? != 0 ] && audit_has '"sandbox":"loop","event":"deny".*"reason":"address_in_floor".*"via":"loopproxy.test:3128"'
ok $? "a proxy name resolving to loopback: address_in_floor, never connected"
vcurl 6 -k https://origin.test/ >/dev/null 2>&1
[ $? != 0 ] && audit_has '"sandbox":"hostaddr","event":"deny".*"reason":"address_in_floor".*"via":"11.0.0.1:3128"'
ok $? "a proxy at the host's own address: address_in_floor"

# The vault must bind the proxy's secret to its name.
pn_attach unbound 7 "$T/unbound.json"
audit_has '"sandbox":"unbound","event":"config".*"result":"none".*takes secret .proxy_elsewhere., which the vault does not bind to authproxy.test'
ok $? "a policy whose proxy secret is bound to another host does not load"
c=$(code 7 -k https://origin.test/)
[ "$c" = 000 ]
ok $? "... its VM gets nowhere ($c)"

# --- reload: the way out may not change under a live tunnel ----------------------
in_vm 0 timeout 12 bash -c "exec 3<>/dev/tcp/$G/2222; read -r l <&3; echo \"\$l\";
    sleep 1.5; echo one >&3; read -r l <&3; echo \"\$l\"; read -r l <&3;
    echo closed" >"$T/conn" 2>&1 &
cp_=$!
netns_wait_for "$T/conn" "git.test ready" 50
policy "$T/global.json" global2
AL reload >/dev/null
netns_wait_for "$T/conn" "^one$" 80 && ! grep -q '"reason":"policy_reload"' "$T/audit.jsonl"
ok $? "a reload that keeps the way out: the live tunnel goes on"
policy "$T/global.json" global3 '"direct"'
AL reload >/dev/null
wait "$cp_"
grep -q closed "$T/conn" && audit_has '"sandbox":"global","event":"deny".*"dst":"git.test:2222".*"reason":"policy_reload".*"via":"11.0.0.2:3128"'
ok $? "a reload that makes the sandbox go direct: the tunnel is closed (policy_reload)"
policy "$T/global.json" global

# A secret removed after its policy went in: refused when dialling.
AL vault rm proxy_cred >/dev/null
AL reload >/dev/null
b1=$(alog sqb)
c=$(code 2 https://origin.test/)
[ "$c" = 000 ] && audit_has '"sandbox":"authed","event":"deny".*"reason":"secret_unavailable".*"via":"authproxy.test:3130"'
ok $? "the proxy's secret removed from the vault: secret_unavailable at dial time"
code 4 https://origin.test/ >/dev/null	# a barrier: Squid B logs its 407
wait_log sqb $((b1 + 1))
[ "$(alog sqb)" = $((b1 + 1)) ]
ok $? "... no CONNECT reached Squid B (only the barrier's after it)"
grep '"sandbox":"authed","event":"config"' "$T/audit.jsonl" | tail -1 |
    grep -q '"result":"kept_previous".*which is not in the vault'
ok $? "... and the reload kept the previous policy, saying why"

# --- 4. the proxy down --------------------------------------------------------------
AL reload >/dev/null
kill "$SQUID_PID_sqa"
wait "$SQUID_PID_sqa" 2>/dev/null
vcurl 0 https://origin.test/ >/dev/null 2>&1
r1=$?
vcurl 0 https://fallback.test/ >/dev/null 2>&1
r2=$?
c=$(code 0 https://insp.test/)
[ $r1 != 0 ] && [ $r2 != 0 ] &&
    [ "$(grep -c '"sandbox":"global","event":"deny".*"reason":"upstream_proxy_unreachable".*"via":"11.0.0.2:3128"' "$T/audit.jsonl")" -ge 2 ]
ok $? "Squid A stopped: splice refused, upstream_proxy_unreachable"
[ "$c" = 502 ] && audit_has '"event":"request".*"dst":"insp.test:443".*"status":502.*"reason":"upstream_proxy_unreachable"'
ok $? "... inspect: 502, upstream_proxy_unreachable ($c)"
[ ! -s "$T/refused.test-443.log" ] && [ "$(direct_peers)" = 1 ]
ok $? "... fallback.test, which airlockd could resolve, saw nothing: no direct fallback"

# --- metrics -----------------------------------------------------------------------
AL metrics >"$T/metrics" 2>&1
for r in upstream_proxy_unreachable upstream_proxy_refused; do
	grep -q "airlock_denials_total{sandbox=\"global\",reason=\"$r\"} [1-9]" "$T/metrics"
	ok $? "metrics: denials of global by $r"
done
grep -q 'airlock_denials_total{sandbox="wrongauth",reason="upstream_proxy_auth"} [1-9]' \
    "$T/metrics"
ok $? "metrics: denials of wrongauth by upstream_proxy_auth"

pn_stop_checked
pn_done
