#!/bin/bash
# tests/integration/proxy_splice.t: airlockd's connection path end to end, through
# the real enforcement path (tests/lib/proxynet.sh): a VM namespace on a veth that
# `airlock net attach` puts under netctl's rules after airlockd started (so the
# daemon learns the sandbox through the control socket), airlockd in the host
# namespace, origins with certificates from a test CA in an "internet" namespace.
# Names reach airlockd through /etc/netns/<host-ns>/hosts.  Needs root; cleans up
# by trap.
#
# Covers: attach notifies the running daemon; splice with the origin's own
# certificate verified by curl; SNI mismatch; direct address; unmapped pool address;
# names resolving to the floor / a private range refused at dial; port not allowed;
# plain HTTP with Host check; raw TCP under a protocol tcp rule; reload (broken
# policy kept, removed host closed); the connections limit; a ClientHello without
# SNI; kill -9 refuses new connections and none reaches the origin.
# AIRLOCK_PERF=1 adds a throughput run (splice against a direct download).
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/proxynet.sh
pn_require curl openssl python3

set -e
pn_setup sp
pn_vm V 0
pn_hosts "11.0.0.2 origin.test other.test plain.test git.test git2.test" \
    "127.0.0.1 loop.test" "169.254.169.254 meta.test" "10.1.2.3 priv.test"

# --- origins --------------------------------------------------------------------
origin_cert "$T" origin.test origin.test
origin_cert "$T" other.test other.test
origin_start "$I" tls 11.0.0.2 443 origin.test "$T/origin.test.pem" \
    "$T/origin.test.key"
origin_start "$I" tls 11.0.0.2 8443 origin.test "$T/origin.test.pem" \
    "$T/origin.test.key"
origin_start "$I" http 11.0.0.2 80 plain.test
origin_start "$I" banner 11.0.0.2 22 git.test
origin_start "$I" banner 11.0.0.2 2222 git2.test

# --- airlockd, then the sandbox -------------------------------------------------
cat >"$T/policy.json" <<'EOF'
{ "policy": "splice-test",
  "rules": [
    { "id": "origin", "host": "origin.test", "ports": [443] },
    { "id": "other", "host": "other.test", "ports": [443] },
    { "id": "plain", "host": "plain.test", "ports": [80], "protocol": "http" },
    { "id": "git", "host": "git.test", "ports": [22], "protocol": "tcp" },
    { "id": "git2", "host": "git2.test", "ports": [2222], "protocol": "tcp" },
    { "id": "loop", "host": "loop.test" },
    { "id": "meta", "host": "meta.test" },
    { "id": "priv", "host": "priv.test" }
  ],
  "limits": { "connections": 4 } }
EOF
set +e
if ! pn_start; then
	echo "1..0 # SKIP airlockd did not start: $(head -c 300 "$T/airlockd.log")"
	exit 0
fi
pn_attach t1 0 "$T/policy.json"
ok $? "net attach t1 while airlockd runs"
"$AIRLOCK" --config "$T/airlock.json" stats --json | grep -q '"name":"t1"'
ok $? "airlockd knows t1 at once (control socket)"
grep -q '"sandbox":"t1","event":"sandbox","action":"attach","source":"control"' \
    "$T/audit.jsonl"
ok $? "sandbox attach audited (source control)"

inV() { ip netns exec "$V" "$@"; }
# The mapped address the VM gets for a name: the daemon's policy DNS.
mapped() {
	inV timeout 3 getent ahostsv4 "$1" 2>/dev/null | awk 'NR == 1 { print $1 }'
}
audit_has() { grep -q -- "$1" "$T/audit.jsonl"; }
vcurl() { inV curl -sS --max-time 8 --cacert "$T/ca.pem" "$@"; }

M=$(mapped origin.test)
case "$M" in
198.1[89].*) ok 0 "origin.test mapped into the pool ($M)" ;;
*) ok 1 "origin.test mapped into the pool ('$M')" ;;
esac

out=$(vcurl https://origin.test/ 2>&1)
[ "$out" = "origin origin.test" ]
ok $? "allowed name: curl (policy DNS) verifies the origin's certificate via splice"
sleep 0.2
audit_has '"event":"connect".*"dst":"origin.test:443".*"tls":"splice"'
ok $? "connect record with dst and tls splice"
grep '"dst":"origin.test:443"' "$T/audit.jsonl" | grep -q '"rule":"origin".*"bytes_up":[1-9]'
ok $? "connect record carries rule and bytes"

# SNI other.test to origin.test's mapped address.
vcurl --resolve "other.test:443:$M" https://other.test/ >/dev/null 2>&1
[ $? -ne 0 ]
ok $? "SNI that differs from the mapped name: refused"
audit_has '"reason":"sni_mismatch"'
ok $? "audited sni_mismatch"
audit_has '"dst":"origin.test:443".*"reason":"sni_mismatch".*"sni":"other.test"'
ok $? "... naming the SNI the VM sent (sni) beside the mapped name (dst)"
! grep '"event":"connect"' "$T/audit.jsonl" | grep -q '"sni":'
ok $? "... which allowed connections do not carry"

vcurl -k https://11.0.0.2/ >/dev/null 2>&1
[ $? -ne 0 ]
ok $? "direct connection to a real address: refused"
audit_has '"dst":"11.0.0.2:443".*"reason":"address_not_allowed"'
ok $? "audited address_not_allowed"

vcurl --resolve origin.test:443:198.19.255.254 https://origin.test/ >/dev/null 2>&1
[ $? -ne 0 ]
ok $? "unmapped address in the mapped pool: refused"
audit_has '"reason":"unmapped_address"'
ok $? "audited unmapped_address"

for nm in loop meta priv; do
	A=$(mapped $nm.test)
	vcurl -k --resolve "$nm.test:443:$A" "https://$nm.test/" >/dev/null 2>&1
	[ $? -ne 0 ]
	ok $? "$nm.test resolving to the floor/private range: refused at dial"
done
audit_has '"dst":"loop.test:443".*"reason":"address_in_floor"' &&
    audit_has '"dst":"meta.test:443".*"reason":"address_in_floor"' &&
    audit_has '"dst":"priv.test:443".*"reason":"private_address"'
ok $? "audited address_in_floor (loopback, metadata) and private_address"

vcurl --resolve "origin.test:8443:$M" https://origin.test:8443/ >/dev/null 2>&1
[ $? -ne 0 ]
ok $? "port the rule does not allow: refused"
audit_has '"dst":"origin.test:8443".*"reason":"port_not_allowed"' &&
    [ ! -s "$T/origin.test-8443.log" ]
ok $? "audited port_not_allowed; the origin saw nothing"

P=$(mapped plain.test)
out=$(vcurl --resolve "plain.test:80:$P" http://plain.test/ 2>&1)
[ "$out" = "origin plain.test" ]
ok $? "plain HTTP with the right Host: relayed"
vcurl --resolve "plain.test:80:$P" -H "Host: other.test" http://plain.test/ \
    >/dev/null 2>&1
[ $? -ne 0 ] && audit_has '"reason":"host_mismatch"'
ok $? "plain HTTP with another Host: refused (host_mismatch)"
audit_has '"dst":"plain.test:80".*"reason":"host_mismatch".*"host":"other.test"'
ok $? "... naming the Host the VM sent"

G=$(mapped git.test)
out=$(inV timeout 5 bash -c "exec 3<>/dev/tcp/$G/22; read -r l <&3; echo \"\$l\";
    echo hello >&3; read -r l <&3; echo \"\$l\"" 2>&1)
[ "$out" = "git.test ready
hello" ]
ok $? "raw TCP (server speaks first) under a protocol tcp rule"
out=$(inV timeout 5 bash -c "exec 3<>/dev/tcp/$M/443; echo 'SSH-2.0-x' >&3;
    read -r l <&3" 2>&1)
[ $? -ne 0 ] && audit_has '"dst":"origin.test:443".*"reason":"protocol_not_allowed"'
ok $? "raw TCP to a tls rule: refused (protocol_not_allowed)"

# The quiet timer (a client silent for 300 ms is a server-speaks-first protocol)
# applies only where a raw TCP rule could allow the destination: a ClientHello that
# comes late (a loaded VM) to a tls-only rule is still served, and a client silent
# to the end of the peek deadline is decided as raw TCP then.
: >"$T/silent.out"
inV timeout 20 python3 -c '
import socket, sys, time
s = socket.create_connection((sys.argv[1], 443)); t = time.monotonic()
try:
    how = "closed" if s.recv(1) == b"" else "data"
except ConnectionResetError:
    how = "closed"
print(how, round(time.monotonic() - t))
' "$M" >"$T/silent.out" 2>&1 &
SILENT=$!
out=$(inV timeout 10 python3 -c '
import socket, ssl, sys, time
ctx = ssl.create_default_context(cafile=sys.argv[2])
s = socket.create_connection((sys.argv[1], 443)); time.sleep(1.0)
t = ctx.wrap_socket(s, server_hostname="origin.test")
t.sendall(b"GET / HTTP/1.1\r\nHost: origin.test\r\nConnection: close\r\n\r\n")
print(t.recv(12).decode())
' "$M" "$T/ca.pem" 2>&1)
[ "$out" = "HTTP/1.1 200" ]
ok $? "a ClientHello 1 s late to a tls rule: served (got: $out)"
wait "$SILENT"
read -r how secs <"$T/silent.out"
[ "$how" = closed ] && [ "${secs:-0}" -ge 5 ] &&
    [ "$(grep -c '"dst":"origin.test:443".*"reason":"protocol_not_allowed"' "$T/audit.jsonl")" -ge 2 ]
ok $? "a client silent to a tls rule: closed at the peek deadline, protocol_not_allowed ($(cat "$T/silent.out"))"

# Reload: a broken policy keeps the old one; a policy without the git rule closes the
# live git connection (policy_reload) and leaves the git2 one alone.
G2=$(mapped git2.test)
inV timeout 10 bash -c "exec 3<>/dev/tcp/$G/22; read -r l <&3; echo \"\$l\";
    read -r l <&3; echo closed" >"$T/connA" 2>&1 &
A=$!
inV timeout 10 bash -c "exec 3<>/dev/tcp/$G2/2222; read -r l <&3; echo \"\$l\";
    sleep 2.5; echo ping >&3; read -r l <&3; echo \"B:\$l\"" >"$T/connB" 2>&1 &
Bp=$!
sleep 0.8
cp "$T/policy.json" "$T/policy.good"
echo '{ "policy": "broken", "rules": [ { "id": "x", "host": "*" } ] }' \
    >"$T/policy.json"
kill -HUP "$DPID"
sleep 0.5
grep -qx "git.test ready" "$T/connA" && ! grep -q closed "$T/connA" &&
    ! audit_has '"reason":"policy_reload"'
ok $? "reload with a broken policy: the live connection goes on"
grep -v '"id": "git", ' "$T/policy.good" >"$T/policy.json"
kill -HUP "$DPID"
wait "$A"
grep -q closed "$T/connA" && audit_has '"dst":"git.test:22".*"reason":"policy_reload"'
ok $? "reload that removes the host: its live connection is closed, audited"
wait "$Bp"
grep -qx "B:ping" "$T/connB"
ok $? "reload: a connection the new policy still allows goes on"
out=$(inV timeout 5 bash -c "exec 3<>/dev/tcp/$G/22; read -r l <&3" 2>&1)
[ $? -ne 0 ] && audit_has '"dst":"git.test:22".*"reason":"name_not_allowed"'
ok $? "after the reload a new connection to the removed host is refused"

# limits.connections: 4 live; the fifth is refused.
pids=""
for i in 1 2 3 4; do
	inV timeout 5 bash -c "exec 3<>/dev/tcp/$G2/2222; read -r l <&3; sleep 2" &
	pids="$pids $!"
done
sleep 0.8
out=$(inV timeout 3 bash -c "exec 3<>/dev/tcp/$G2/2222; read -r l <&3;
    echo \"\$l\"" 2>&1)
[ "$out" != "git2.test ready" ] && audit_has '"reason":"connection_limit"'
ok $? "limits.connections: the fifth live connection is refused"
wait $pids
out=$(inV timeout 3 bash -c "exec 3<>/dev/tcp/$G2/2222; read -r l <&3;
    echo \"\$l\"" 2>&1)
[ "$out" = "git2.test ready" ]
ok $? "limits.connections: room again once they closed"

# A ClientHello without SNI (openssl s_client -noservername).
inV timeout 5 openssl s_client -connect "$M:443" -noservername \
    -CAfile "$T/ca.pem" </dev/null >/dev/null 2>&1
[ $? -ne 0 ] && audit_has '"reason":"sni_missing"'
ok $? "ClientHello without SNI: refused (sni_missing)"

# Throughput, on request (AIRLOCK_PERF=1): from the VM through the splice against
# the same from the host namespace straight to the origin (same veth to the origin,
# same machine, same run).  100 MiB downloads over TLS (curl); with wrk, keep-alive
# requests over TLS (1 thread, 3 connections: the policy allows 4; 3 s) and
# airlockd's CPU time per request.  Measurements only: no assertion.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$(al_worker)/stat"; }
wrk_rps() { sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p'; }
wrk_n() { sed -n 's/^ *\([0-9]*\) requests in.*/\1/p'; }
if [ -n "${AIRLOCK_PERF:-}" ]; then
	for i in 1 2 3; do
		sp=$(vcurl -o /dev/null -w '%{speed_download}' \
		    https://origin.test/size/104857600 2>/dev/null)
		di=$(inH curl -sS --max-time 8 --cacert "$T/ca.pem" -o /dev/null \
		    -w '%{speed_download}' https://origin.test/size/104857600 \
		    2>/dev/null)
		echo "# 100 MiB run $i: splice $((${sp%.*} / 1048576)) MiB/s," \
		    "direct $((${di%.*} / 1048576)) MiB/s"
	done
	if command -v wrk >/dev/null; then
		for i in 1 2; do
			c0=$(cpu_ticks)
			inV wrk -t1 -c3 -d3s https://origin.test/ka >"$T/wrk" 2>&1
			c1=$(cpu_ticks)
			inH wrk -t1 -c3 -d3s https://origin.test/ka >"$T/wrkd" 2>&1
			rs=$(wrk_rps <"$T/wrk") rd=$(wrk_rps <"$T/wrkd")
			ns=$(wrk_n <"$T/wrk")
			echo "# keep-alive run $i: splice ${rs:-?} req/s, direct" \
			    "${rd:-?} req/s; airlockd" \
			    "$(((c1 - c0) * 10000000 / $(getconf CLK_TCK) / ${ns:-1} / 10)) us" \
			    "CPU per request ($ns requests)"
		done
	fi
fi

# kill -9: redirected connections are refused, none reaches the origin.
before=$(wc -l <"$T/origin.test-443.log")
WPID=$(al_worker)
kill -9 "$DPID"
wait "$DPID" 2>/dev/null
DPID=""
# The worker dies with its supervisor (PR_SET_PDEATHSIG): gone within 5 s.
for i in $(seq 50); do kill -0 "$WPID" 2>/dev/null || break; sleep 0.1; done
! kill -0 "$WPID" 2>/dev/null
ok $? "supervisor killed: its worker ($WPID) is gone too"
vcurl --resolve "origin.test:443:$M" https://origin.test/ >/dev/null 2>&1
rc=$?
[ $rc -eq 7 ]
ok $? "airlockd killed: connection refused (curl exit $rc)"
after=$(wc -l <"$T/origin.test-443.log")
[ "$before" = "$after" ]
ok $? "airlockd killed: nothing reached the origin"

pn_done
