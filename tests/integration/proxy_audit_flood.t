#!/bin/bash
# tests/integration/proxy_audit_flood.t: one VM cannot flood the audit log (issue 10,
# part 4).  Sandbox a (limits: 16 connections, 5 new a second) runs 4 processes that
# loop connect/reset for 10 s to ports it may not reach, a new random port each
# time; every connection is refused, and the client counts each refusal.  With
# audit.fsync "deny" (every written denial synced), the log takes at most a few
# hundred lines, and the written denials plus every "suppressed" count equal the
# client's count exactly.  Sandbox b's allowed request keeps working during the
# flood (its latency is reported, not asserted), and a's allowed connection works
# once the flood is over.  Needs root; cleans up by trap.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/proxynet.sh
pn_require curl perl

set -e
pn_setup af
pn_vm VA 0
pn_vm VB 1
pn_two_origins
cat >"$T/pa.json" <<'EOF'
{ "policy": "flooder",
  "rules": [ { "id": "git2", "host": "git2.test", "ports": [2222], "protocol": "tcp" } ],
  "limits": { "connections": 16, "connections_per_second": 5 } }
EOF
cat >"$T/pb.json" <<'EOF'
{ "policy": "steady",
  "rules": [ { "id": "origin", "host": "origin.test", "ports": [443] } ] }
EOF
set +e
PN_AUDIT='{ "path": "'"$T"'/audit.jsonl", "fsync": "deny" }'
if ! pn_start; then
	echo "1..0 # SKIP airlockd did not start: $(head -c 300 "$T/airlockd.log")"
	exit 0
fi
pn_attach a 0 "$T/pa.json" && pn_attach b 1 "$T/pb.json"
ok $? "net attach a and b"
inA() { ip netns exec "$VA" "$@"; }
inB() { ip netns exec "$VB" "$@"; }
GA=$(pn_mapped "$VA" git2.test)
banner() { inA timeout 5 bash -c "exec 3<>/dev/tcp/$GA/2222; read -r l <&3; echo \"\$l\""; }
bcurl() { inB curl -sS --max-time 10 --cacert "$T/ca.pem" "$@"; }

out=$(banner 2>&1)
[ "$out" = "git2.test ready" ]
ok $? "before the flood: a's allowed connection works (positive control)"
lines0=$(wc -l <"$T/audit.jsonl")

# --- the flood: 4 processes, 10 s, connect then wait for the reset ----------------
# A connection is counted refused when the proxy resets it before sending a byte
# (the reset may beat the end of connect(): ECONNRESET there counts too); a connect
# that fails otherwise, a byte, or no answer in 5 s, is counted apart.
inA perl -MIO::Socket::INET -MIO::Select -MTime::HiRes=time -e '
    my ($dst, $out) = @ARGV;
    for my $p (1 .. 4) {
	next if fork;
	my ($refused, $other, $failed) = (0, 0, 0);
	my $end = time + 10;
	while (time < $end) {
	    my $s = IO::Socket::INET->new(PeerAddr => $dst,
		PeerPort => 3000 + int(rand(2000)), Timeout => 5);
	    if (!$s) { $!{ECONNRESET} ? $refused++ : $failed++; next }
	    my $buf;
	    if (IO::Select->new($s)->can_read(5)) {
		my $n = sysread($s, $buf, 1);
		(defined $n && $n > 0) ? $other++ : $refused++;
	    } else { $other++ }
	    close $s;
	}
	open(my $f, ">", "$out.$p") or die; print $f "$refused $other $failed\n";
	exit 0;
    }
    1 while wait != -1;' 11.0.0.2 "$T/flood" &
FP=$!
# b, meanwhile: five requests, each timed (reported only).
sleep 1
lat=""
bok=0
for i in 1 2 3 4 5; do
	r=$(bcurl -o /dev/null -w '%{http_code} %{time_total}' https://origin.test/ 2>&1)
	[ "${r%% *}" = 200 ] && bok=$((bok + 1))
	lat="$lat ${r#* }"
	sleep 1
done
[ "$bok" = 5 ]
ok $? "during a's flood: b's 5 requests through the splice succeed"
diag "b's request time during the flood (s):$lat"
r=$(bcurl -o /dev/null -w '%{time_total}' https://origin.test/ 2>&1)
wait $FP
read -r refused other failed < <(cat "$T"/flood.* |
    awk '{ r += $1; o += $2; f += $3 } END { print r + 0, o + 0, f + 0 }')
diag "client: $refused refused, $other other, $failed failed connects"
[ "$refused" -ge 100 ] && [ "$other" = 0 ] && [ "$failed" = 0 ]
ok $? "the flood: every one of a's $refused connections refused"
r2=$(bcurl -o /dev/null -w '%{time_total}' https://origin.test/ 2>&1)
diag "b's request time after the flood (s): $r2 (last during: $r)"

# Pending counts go out within a second or two (audit_flush on a 1 s timer).
sum() {
	echo $(($(pn_denials a rate_limited) + $(pn_denials a connection_limit) +
	    $(pn_denials a address_not_allowed)))
}
for i in $(seq 100); do
	[ "$(sum)" = "$refused" ] && break
	sleep 0.2
done
got=$(sum)
lines=$(($(wc -l <"$T/audit.jsonl") - lines0))
diag "audit: $lines lines for the flood; rate_limited $(pn_denials a rate_limited)," \
    "connection_limit $(pn_denials a connection_limit)," \
    "address_not_allowed $(pn_denials a address_not_allowed)"
[ "$lines" -le 300 ]
ok $? "the flood took at most 300 audit lines ($lines)"
[ "$got" = "$refused" ]
ok $? "written denials + \"suppressed\" = the client's count ($got = $refused)"
grep -q '"sandbox":"a","event":"deny".*"reason":"rate_limited",.*"suppressed":[1-9]' \
    "$T/audit.jsonl"
ok $? "rate_limited records carry \"suppressed\""
"$AIRLOCK" audit verify "$T/audit.jsonl" >/dev/null 2>&1
ok $? "the audit chain verifies"

sleep 1.2	# a's bucket refills (5 a second)
out=$(banner 2>&1)
[ "$out" = "git2.test ready" ]
ok $? "after the flood: a's allowed connection works again"
pn_done
