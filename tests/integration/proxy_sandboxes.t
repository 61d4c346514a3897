#!/bin/bash
# tests/integration/proxy_sandboxes.t: two sandboxes side by side through the real
# enforcement path (tests/lib/proxynet.sh: `airlock net attach` after airlockd
# started).  Sandbox a floods (many concurrent connections, a new-connection rate
# far over its limits): its surplus is refused and audited, and sandbox b's traffic
# goes on.  limits.bytes_per_second slows b's download (only a lower bound on the
# time is asserted: a loaded machine is slower, never faster).  `net detach`
# closes the sandbox's live connection; its address is then no sandbox's, and a
# connection from it is reset with an audited unknown_sandbox denial.  `sandbox
# create/destroy` reach the running daemon too.  Needs root; cleans up by trap.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/proxynet.sh
pn_require curl perl

set -e
pn_setup sb
pn_vm VA 0
pn_vm VB 1
pn_two_origins
cat >"$T/pa.json" <<'EOF'
{ "policy": "flooder",
  "rules": [ { "id": "git2", "host": "git2.test", "ports": [2222], "protocol": "tcp" } ],
  "limits": { "connections": 8, "connections_per_second": 10 } }
EOF
# 300000 bytes a second, both directions together (a burst of one second's worth).
cat >"$T/pb.json" <<'EOF'
{ "policy": "steady",
  "rules": [ { "id": "origin", "host": "origin.test", "ports": [443] },
             { "id": "git2", "host": "git2.test", "ports": [2222], "protocol": "tcp" } ],
  "limits": { "bytes_per_second": 300000 } }
EOF
set +e
if ! pn_start; then
	echo "1..0 # SKIP airlockd did not start: $(head -c 300 "$T/airlockd.log")"
	exit 0
fi
pn_attach a 0 "$T/pa.json" && pn_attach b 1 "$T/pb.json"
ok $? "net attach a and b while airlockd runs"
# sandbox create/destroy (a tap of its own) reach the running daemon the same way.
al() { inH "$AIRLOCK" --config "$T/airlock.json" "$@"; }
al sandbox create c --policy "$T/pb.json" >/dev/null &&
    al stats --json | grep -q '"name":"c","iface":"al-c"'
ok $? "sandbox create c: airlockd knows it at once"
al sandbox destroy c >/dev/null && ! al stats --json | grep -q '"name":"c"' &&
    grep -q '"sandbox":"c","event":"sandbox","action":"detach","source":"control"' \
    "$T/audit.jsonl"
ok $? "sandbox destroy c: airlockd forgets it (audited)"

inA() { ip netns exec "$VA" "$@"; }
inB() { ip netns exec "$VB" "$@"; }
bcurl() { inB curl -sS --max-time 10 --cacert "$T/ca.pem" "$@"; }
audit_n() { grep -c -- "$1" "$T/audit.jsonl"; }
GA=$(pn_mapped "$VA" git2.test)
GB=$(pn_mapped "$VB" git2.test)

# --- a floods: 150 connections as fast as it can, each held for 2 s --------------
inA perl -MIO::Socket::INET -e '
    my @s;
    for (1 .. 150) {
	my $s = IO::Socket::INET->new(PeerAddr => $ARGV[0], PeerPort => 2222,
	    Timeout => 2);
	push @s, $s if $s;
    }
    sleep 2;' "$GA" &
FP=$!
sleep 0.3
out=$(bcurl https://origin.test/ 2>&1)
[ "$out" = "origin origin.test" ]
ok $? "during a's flood: b's curl through the splice works"
out=$(inB timeout 5 bash -c "exec 3<>/dev/tcp/$GB/2222; read -r l <&3;
    echo \"\$l\"" 2>&1)
[ "$out" = "git2.test ready" ]
ok $? "during a's flood: b's raw TCP connection works"
live=$("$AIRLOCK" --config "$T/airlock.json" stats --json |
    perl -ne 'print $1 if /"name":"a"[^}]*"conns_live":(\d+)/')
[ -n "$live" ] && [ "$live" -le 8 ]
ok $? "a's live connections stay within limits.connections (8; got '$live')"
wait $FP
# Denials are aggregated per second ("suppressed"): the counts are out within ~2 s.
wait_denials() {	# wait_denials REASON MIN
	local i
	for i in $(seq 50); do
		[ "$(pn_denials a "$1")" -ge "$2" ] && break
		sleep 0.2
	done
	pn_denials a "$1"
}
n_lim=$(wait_denials connection_limit 130)
n_ok=$(audit_n '"sandbox":"a","event":"connect"')
[ "$n_lim" -ge 130 ] && [ "$n_ok" -le 10 ]
ok $? "the flood over limits.connections refused, audited ($n_lim connection_limit, $n_ok allowed)"
# New connections, one at a time (each closed at once, so never 8 live): 40 in well
# under a second is far over connections_per_second (10, a burst of 10).
inA perl -MIO::Socket::INET -e '
    for (1 .. 40) {
	my $s = IO::Socket::INET->new(PeerAddr => $ARGV[0], PeerPort => 2222,
	    Timeout => 2) or next;
	close $s;
	select(undef, undef, undef, 0.005);
    }' "$GA"
n_rate=$(wait_denials rate_limited 10)
[ "$n_rate" -ge 10 ]
ok $? "a's new connections over limits.connections_per_second: refused, audited ($n_rate rate_limited)"
[ "$(audit_n '"sandbox":"b","event":"deny"')" = 0 ]
ok $? "no denial for b"

# --- limits.bytes_per_second: 1,200,000 bytes at 300,000/s take >= 3 s after the
# one-second burst; assert 2 s (a lower bound only) and the whole body.
t0=$(date +%s%N)
got=$(bcurl -o /dev/null -w '%{size_download}' https://origin.test/size/1200000 2>&1)
t1=$(date +%s%N)
ms=$(((t1 - t0) / 1000000))
[ "$got" = 1200000 ]
ok $? "b's download under bytes_per_second completes ($got bytes)"
[ "$ms" -ge 2000 ]
ok $? "... and is held to the rate (took $ms ms, at least 2000)"
sleep 0.2
grep '"sandbox":"b","event":"connect".*"dst":"origin.test:443"' "$T/audit.jsonl" |
    tail -n 1 | grep -q '"bytes_down":12[0-9][0-9][0-9][0-9][0-9]'
ok $? "... its connect record counts the bytes"

# --- detach: b's live connection closes; b's address is no sandbox's afterwards
inB timeout 8 bash -c "exec 3<>/dev/tcp/$GB/2222; read -r l <&3; echo \"\$l\";
    read -r l <&3; echo closed" >"$T/connB" 2>&1 &
CP=$!
sleep 0.5
pn_detach b
ok $? "net detach b while airlockd runs"
wait $CP
grep -qx "git2.test ready" "$T/connB" && grep -qx closed "$T/connB"
ok $? "detach closes b's live connection"
sleep 0.2
grep -q '"sandbox":"b","event":"deny".*"dst":"git2.test:2222".*"reason":"sandbox_removed"' \
    "$T/audit.jsonl" &&
    grep -q '"sandbox":"b","event":"sandbox","action":"detach","source":"control"' \
    "$T/audit.jsonl"
ok $? "... audited (sandbox_removed, and the detach)"
! "$AIRLOCK" --config "$T/airlock.json" stats --json | grep -q '"name":"b"'
ok $? "airlockd no longer lists b"
# Without netctl's rules the old guest can reach the proxy port on its host address
# only directly: airlockd resets it, audited without a sandbox.
out=$(inB timeout 3 bash -c "exec 3<>/dev/tcp/$(pn_hostip 1)/15001; echo x >&3;
    read -r l <&3" 2>&1)
[ $? -ne 0 ]
ok $? "a connection from the detached address is refused"
grep -q '"event":"deny","src":"'"$(pn_guest 1)"':[0-9]*","dst":"'"$(pn_hostip 1)"':15001","decision":"deny","reason":"unknown_sandbox"' \
    "$T/audit.jsonl"
ok $? "... audited: deny, no sandbox, reason unknown_sandbox"
# a is untouched by all of it.
out=$(inA timeout 5 bash -c "exec 3<>/dev/tcp/$GA/2222; read -r l <&3;
    echo \"\$l\"" 2>&1)
[ "$out" = "git2.test ready" ]
ok $? "a still works"
pn_done
