#!/bin/bash
# tests/integration/policy_suggest.t: airlock policy suggest, end to end through the
# real enforcement path (tests/lib/proxynet.sh).  A workload runs under a policy in
# report mode (one inspected name; everything else would be denied but is let
# through and audited with would_deny), `policy suggest` turns the audit log into a
# policy, and the same workload under that policy in enforce mode passes, while a
# host it never reached, a path and a method it never used, are refused.  Also: a log
# whose chain does not verify gets no suggestion, two sandboxes need --sandbox, and
# what the suggestion is made of is only what the log holds.  Then the suggestion with
# "unknown": "ask": the new host is refused, shows in `approve ls`, and `approve
# allow --once` lets exactly one more connection through.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/proxynet.sh
pn_require curl

set -e
pn_setup psg
pn_vm V 0
inV() { ip netns exec "$V" "$@"; }
ip netns exec "$I" ip addr add 11.0.0.3/24 dev eth0
pn_hosts "11.0.0.2 origin.test git2.test" "11.0.0.3 other.test new.test"
origin_cert "$T" origin.test origin.test
origin_cert "$T" other.test other.test
origin_cert "$T" new.test new.test
origin_start "$I" tls 11.0.0.2 443 origin.test "$T/origin.test.pem" \
    "$T/origin.test.key"
origin_start "$I" banner 11.0.0.2 2222 git2.test
origin_start "$I" tls 11.0.0.3 443 other.test "$T/other.test.pem" "$T/other.test.key"
origin_start "$I" tls 11.0.0.3 8443 new.test "$T/new.test.pem" "$T/new.test.key"
cat >"$T/policy.json" <<'EOF'
{ "policy": "learn", "mode": "report",
  "rules": [ { "id": "origin", "host": "origin.test", "tls": "inspect" } ] }
EOF
set +e
pn_start_or_skip "\"upstream_ca_file\": \"$T/ca.pem\""
pn_attach sg 0 "$T/policy.json"
ok $? "net attach sg (a report-mode policy)"
AL() { "$AIRLOCK" --config "$T/airlock.json" "$@"; }
AL ca cert sg >"$T/sg-ca.pem" 2>/dev/null
cat "$T/sg-ca.pem" "$T/ca.pem" >"$T/trust.pem"
vcurl() { inV curl -sS --max-time 8 --cacert "$T/trust.pem" "$@"; }

# The workload: inspected requests, a spliced name, raw TCP.
workload() {
	local bad=0 p
	for p in /items/1 /items/22 /items/333 /docs/a; do
		[ "$(vcurl "https://origin.test$p")" = "origin origin.test" ] || bad=1
	done
	[ "$(vcurl -X POST --data x https://origin.test/items/1)" = "origin origin.test" ] ||
	    bad=1
	[ "$(vcurl https://other.test/)" = "origin other.test" ] || bad=1
	inV timeout 5 bash -c 'exec 3<>/dev/tcp/git2.test/2222 && head -c 5 <&3' \
	    >"$T/banner" 2>&1 || bad=1
	return $bad
}
workload
ok $? "the workload runs in report mode"
sleep 1.2	# the audit log's one-second flush
grep -q '"would_deny":true' "$T/audit.jsonl"
ok $? "report mode audited would-be denials"

# --- the suggestion -------------------------------------------------------------------
AL policy suggest "$T/audit.jsonl" >"$T/suggested.json" 2>"$T/suggest.err"
ok $? "policy suggest ($(tail -1 "$T/suggest.err"))"
sed 's/^/# /' "$T/suggested.json" | head -60
AL policy check "$T/suggested.json" >/dev/null
ok $? "the suggestion passes policy check"
grep -q '"mode": "enforce"' "$T/suggested.json" &&
    ! grep -q 'new.test' "$T/suggested.json"
ok $? "... is in enforce mode and names nothing the log does not"
grep -q '"id": "origin.test-[0-9]*-records"' "$T/suggested.json" &&
    grep -q '"id": "git2.test-tcp-[0-9]*-record' "$T/suggested.json"
ok $? "... each rule's id counts its records"
grep -q '"/items/\*"' "$T/suggested.json"
ok $? "... three numeric ids under /items make /items/*"

# --- the same workload in enforce mode ----------------------------------------------
cp "$T/suggested.json" "$T/policy.json"
AL reload >"$T/reload.out" 2>&1
ok $? "reload with the suggested policy ($(grep sg "$T/reload.out" | head -1))"
: >"$T/audit.before"
cp "$T/audit.jsonl" "$T/audit.before"
workload
ok $? "the workload passes under the suggested policy in enforce mode"
out=$(vcurl -sS -o /dev/null -w '%{http_code}' https://origin.test/admin)
is "$out" 403 "a path it never used is refused (403)"
out=$(vcurl -sS -o /dev/null -w '%{http_code}' -X DELETE https://origin.test/items/1)
is "$out" 403 "a method it never used is refused (403)"
vcurl https://new.test:8443/ >"$T/new.out" 2>&1
ok $((! $?)) "a host it never reached is refused ($(head -c 80 "$T/new.out"))"
sleep 1.2
tail -n +$(($(wc -l <"$T/audit.before") + 1)) "$T/audit.jsonl" >"$T/audit.after"
! grep -q '"would_deny"' "$T/audit.after" &&
    grep -q '"qname":"new.test"' "$T/audit.after"
ok $? "enforce mode: no would_deny records, new.test denied at DNS"

# --- the suggestion grown by an operator: "unknown": "ask", airlock approve ---------
perl -MJSON::PP -e 'local $/; my $j = decode_json(<STDIN>); $j->{unknown} = "ask";
    print JSON::PP->new->canonical->pretty->encode($j)' <"$T/suggested.json" \
    >"$T/policy.json"
AL reload >"$T/reload.out" 2>&1
ok $? "reload with the suggestion plus \"unknown\": \"ask\""
vcurl https://new.test:8443/ >"$T/new.out" 2>&1
ok $((! $?)) "the new host is still refused under ask ($(head -c 80 "$T/new.out"))"
AL approve ls --json >"$T/ls.json" 2>&1
perl -MJSON::PP -e 'local $/; my $j = decode_json(<STDIN>);
    exit !grep { $_->{name} eq "new.test" } map { @{$_->{pending}} } @{$j->{sandboxes}}' \
    <"$T/ls.json"
ok $? "... and shows up in approve ls ($(head -c 160 "$T/ls.json"))"
AL approve allow sg new.test --port 8443 --once >"$T/allow.out" 2>&1
ok $? "approve allow sg new.test --port 8443 --once ($(head -c 80 "$T/allow.out"))"
[ "$(vcurl https://new.test:8443/)" = "origin new.test" ]
ok $? "... lets one connection through"
vcurl https://new.test:8443/ >"$T/new.out" 2>&1
ok $((! $?)) "... and exactly one: the next is refused"
[ "$(vcurl https://origin.test/items/1)" = "origin origin.test" ]
ok $? "the suggested rules still hold under ask (positive control)"

# --- refusals ------------------------------------------------------------------------
cp "$T/audit.jsonl" "$T/tampered.jsonl"
sed -i '3s/"sandbox":"sg"/"sandbox":"sG"/' "$T/tampered.jsonl"
AL policy suggest "$T/tampered.jsonl" >"$T/t.out" 2>"$T/t.err"
rc=$?
[ "$rc" = 1 ] && [ ! -s "$T/t.out" ] && grep -q "chain does not vouch" "$T/t.err"
ok $? "a log whose chain does not verify: no suggestion, exit 1 ($(head -c 120 "$T/t.err"))"
pn_vm W 1
cat >"$T/policy-b.json" <<'EOF'
{ "policy": "learn-b", "mode": "report", "rules": [] }
EOF
pn_attach sb 1 "$T/policy-b.json"
ip netns exec "$W" curl -sS --max-time 8 --cacert "$T/trust.pem" \
    https://other.test/ >/dev/null 2>&1
sleep 1.2
AL policy suggest "$T/audit.jsonl" >"$T/two.out" 2>"$T/two.err"
rc=$?
[ "$rc" = 2 ] && grep -q "more than one sandbox" "$T/two.err"
ok $? "two sandboxes in the log and no --sandbox: refused (rc $rc)"
AL policy suggest --sandbox sb "$T/audit.jsonl" >"$T/sb.json" 2>/dev/null &&
    grep -q '"host": "other.test"' "$T/sb.json" && ! grep -q origin.test "$T/sb.json"
ok $? "--sandbox sb: only sb's destinations"
AL policy suggest --sandbox nobody "$T/audit.jsonl" >/dev/null 2>"$T/none.err"
is "$?" 1 "a sandbox with no records: nothing to suggest, exit 1"
AL policy suggest --bogus "$T/audit.jsonl" >/dev/null 2>"$T/bogus.err"
rc=$?
[ "$rc" = 2 ] && grep -q "bogus" "$T/bogus.err"
ok $? "an unknown option is named (rc $rc)"
pn_stop_checked
pn_done
