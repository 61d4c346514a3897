#!/bin/bash
# tests/integration/proxy_revoke.t: a revocation reaches every live connection, the
# ones still in their first bytes included.  The VM holds a connection after a
# few bytes of its ClientHello (or request head, or raw TCP prefix) under a policy
# that allows it; the operator reloads a policy that no longer does (or switches
# report -> enforce, or detaches the sandbox); the VM then sends the rest.  It is
# refused (policy_reload / sandbox_removed) and the origin sees nothing.  Each
# case has its positive control: the same sequence with a policy that still allows
# the destination goes through.  Through the real enforcement path
# (tests/lib/proxynet.sh); tests/tools/holdproxy holds real clients (curl) in the
# middle of their first bytes.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/proxynet.sh
pn_require curl
HOLD=$B/tests/tools/holdproxy
if [ ! -x "$HOLD" ]; then
	echo "1..0 # SKIP $HOLD not built"
	exit 0
fi

set -e
pn_setup rv
pn_vm V 0
pn_hosts "11.0.0.2 origin.test plain.test git.test"
origin_cert "$T" origin.test origin.test
: >"$T/rec-tls"
: >"$T/rec-http"
ORIGIN_RECORD="$T/rec-tls" origin_start "$I" tls 11.0.0.2 443 origin.test \
    "$T/origin.test.pem" "$T/origin.test.key"
ORIGIN_RECORD="$T/rec-http" origin_start "$I" http 11.0.0.2 80 plain.test
origin_start "$I" banner 11.0.0.2 22 git.test

# p1 allows everything the cases use; each pN-without-X drops one destination.
rules_all='{ "id": "origin", "host": "origin.test", "ports": [443] },
    { "id": "plain", "host": "plain.test", "ports": [80], "protocol": "http" },
    { "id": "git", "host": "git.test", "ports": [22], "protocol": "tcp" },
    { "id": "net", "cidr": "11.0.0.2/32", "ports": [443] }'
policy() {	# policy FILE MODE RULES
	printf '{ "policy": "%s", "mode": "%s", "rules": [ %s ] }\n' \
	    "$(basename "$1" .json)" "$2" "$3" >"$1"
}
policy "$T/p1.json" enforce "$rules_all"
policy "$T/p-no-origin.json" enforce "$(echo "$rules_all" | grep -v '"origin"')"
policy "$T/p-no-plain.json" enforce "$(echo "$rules_all" | grep -v '"plain"')"
policy "$T/p-no-git.json" enforce "$(echo "$rules_all" | grep -v '"git"')"
policy "$T/p-no-net.json" enforce "$(echo "$rules_all" | grep -v '"net"' |
    sed '$ s/,$//')"
# report mode lets through what enforce refuses (other.test is in no rule)
policy "$T/p-report.json" report '{ "id": "plain", "host": "plain.test",
    "ports": [80], "protocol": "http" }'
policy "$T/p-enforce.json" enforce '{ "id": "plain", "host": "plain.test",
    "ports": [80], "protocol": "http" }'
cp "$T/p1.json" "$T/policy.json"

set +e
if ! pn_start; then
	echo "1..0 # SKIP airlockd did not start: $(head -c 300 "$T/airlockd.log")"
	exit 0
fi
pn_attach t1 0 "$T/policy.json"
ok $? "net attach t1"

inV() { ip netns exec "$V" "$@"; }
mapped() {
	inV timeout 3 getent ahostsv4 "$1" 2>/dev/null | awk 'NR == 1 { print $1 }'
}
# Audit records since mark_audit.
mark_audit() { AMARK=$(wc -l <"$T/audit.jsonl"); }
new_audit() { tail -n +"$((AMARK + 1))" "$T/audit.jsonl"; }
reload_to() {	# reload_to POLICY-FILE
	cp "$1" "$T/policy.json"
	"$AIRLOCK" --config "$T/airlock.json" reload >/dev/null
}

# hold N DST DPORT ACTION CURL-ARGS...: curl through holdproxy, which passes the
# first N bytes to DST:DPORT, then ACTION runs, then the rest follows.  The status
# is curl's; its output is in $T/curl.out.
hold() {
	local n=$1 dst=$2 dport=$3 act=$4 hp cp rc
	shift 4
	rm -f "$T/gate" "$T/hp.out"
	inV "$HOLD" 17001 "$dst" "$dport" "$n" "$T/gate" >"$T/hp.out" 2>&1 &
	hp=$!
	netns_wait_for "$T/hp.out" ready 100
	inV curl -sS --max-time 20 --cacert "$T/ca.pem" "$@" >"$T/curl.out" 2>&1 &
	cp=$!
	netns_wait_for "$T/hp.out" held 100 || diag "holdproxy: $(cat "$T/hp.out")"
	$act
	touch "$T/gate"
	wait "$cp"
	rc=$?
	wait "$hp"
	return $rc
}
nothing() { :; }

M=$(mapped origin.test)
P=$(mapped plain.test)
G=$(mapped git.test)
tls_args=(--connect-to "origin.test:443:127.0.0.1:17001" https://origin.test/)
http_args=(--connect-to "plain.test:80:127.0.0.1:17001" http://plain.test/)

# --- splice: 5 bytes of the ClientHello, reload, the rest --------------------------
mark_audit
hold 5 "$M" 443 nothing "${tls_args[@]}"
[ $? -eq 0 ] && grep -qx "origin origin.test" "$T/curl.out"
ok $? "control: a held ClientHello completed under the same policy is spliced"

mark_audit
: >"$T/rec-tls"
hold 5 "$M" 443 "reload_to $T/p-no-origin.json" "${tls_args[@]}"
[ $? -ne 0 ] && ! grep -q "origin origin.test" "$T/curl.out"
ok $? "splice: ClientHello held across a reload that revokes the name: refused"
new_audit | grep -q '"dst":"origin.test:443".*"reason":"policy_reload"' &&
    ! new_audit | grep '"dst":"origin.test:443"' | grep -q '"decision":"allow"'
ok $? "splice: audited policy_reload, no allow after the reload"
[ ! -s "$T/rec-tls" ]
ok $? "splice: the origin received nothing"
reload_to "$T/p1.json"

mark_audit
hold 5 "$M" 443 "reload_to $T/p-no-plain.json" "${tls_args[@]}"
[ $? -eq 0 ] && grep -qx "origin origin.test" "$T/curl.out"
ok $? "control: a reload that revokes another name leaves the held one alone"
reload_to "$T/p1.json"

# --- plain HTTP: part of the request head, reload, the rest -------------------------
mark_audit
: >"$T/rec-http"
hold 5 "$P" 80 "reload_to $T/p-no-plain.json" "${http_args[@]}"
[ $? -ne 0 ] || ! grep -q "origin plain.test" "$T/curl.out"
ok $? "plain HTTP: request head held across a revoking reload: refused"
new_audit | grep -q '"dst":"plain.test:80".*"reason":"policy_reload"' &&
    [ ! -s "$T/rec-http" ]
ok $? "plain HTTP: audited policy_reload; the origin received nothing"
reload_to "$T/p1.json"
hold 5 "$P" 80 "reload_to $T/p-no-git.json" "${http_args[@]}"
[ $? -eq 0 ] && grep -qx "origin plain.test" "$T/curl.out"
ok $? "control: plain HTTP held across a reload that keeps it: relayed"
reload_to "$T/p1.json"

# --- report -> enforce ---------------------------------------------------------------
reload_to "$T/p-report.json"
mark_audit
hold 5 "$M" 443 nothing "${tls_args[@]}"
[ $? -eq 0 ]
ok $? "control: report mode lets a name in no rule through (would deny)"
: >"$T/rec-tls"
mark_audit
hold 5 "$M" 443 "reload_to $T/p-enforce.json" "${tls_args[@]}"
[ $? -ne 0 ] && new_audit | grep -q '"dst":"origin.test:443".*"reason":"policy_reload"' &&
    [ ! -s "$T/rec-tls" ]
ok $? "report -> enforce while a ClientHello is held: refused (policy_reload)"
reload_to "$T/p1.json"

# --- raw TCP: a prefix that could still be an HTTP method, reload, the rest ----------
raw_held() {	# raw_held ACTION: prints what the banner origin said, if anything
	rm -f "$T/gate"
	inV timeout 15 bash -c "exec 3<>/dev/tcp/$G/22 || exit 1; printf AB >&3
	    echo held >'$T/raw.st'
	    while [ ! -e '$T/gate' ]; do sleep 0.05; done
	    printf '\001x\n' >&3; read -r -t 5 l <&3; echo \"\$l\"" >"$T/raw.out" 2>&1 &
	local p=$!
	netns_wait_for "$T/raw.st" held 100
	$1
	touch "$T/gate"
	wait "$p"
	rm -f "$T/raw.st"
}
raw_held nothing
grep -qx "git.test ready" "$T/raw.out"
ok $? "control: raw TCP held in its peek, then completed: relayed"
mark_audit
raw_held "reload_to $T/p-no-git.json"
! grep -q "git.test ready" "$T/raw.out" &&
    new_audit | grep -q '"dst":"git.test:22".*"reason":"policy_reload"'
ok $? "raw TCP: held across a revoking reload: refused (policy_reload)"
reload_to "$T/p1.json"

# --- cidr rule: a ClientHello to the address itself -----------------------------------
hold 5 11.0.0.2 443 nothing "${tls_args[@]}"
[ $? -eq 0 ] && grep -qx "origin origin.test" "$T/curl.out"
ok $? "control: cidr rule: held ClientHello to the address completes"
mark_audit
: >"$T/rec-tls"
hold 5 11.0.0.2 443 "reload_to $T/p-no-net.json" "${tls_args[@]}"
[ $? -ne 0 ] && new_audit | grep -q '"dst":"11.0.0.2:443".*"reason":"policy_reload"' &&
    [ ! -s "$T/rec-tls" ]
ok $? "cidr rule: held across a reload without it: refused (policy_reload)"
reload_to "$T/p1.json"

# --- the sandbox goes away -------------------------------------------------------------
mark_audit
: >"$T/rec-tls"
hold 5 "$M" 443 "pn_detach t1" "${tls_args[@]}"
[ $? -ne 0 ] && new_audit | grep -q '"reason":"sandbox_removed"' && [ ! -s "$T/rec-tls" ]
ok $? "sandbox detached while a ClientHello is held: refused (sandbox_removed)"

pn_done
