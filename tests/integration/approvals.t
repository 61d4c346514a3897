#!/bin/bash
# tests/integration/approvals.t: pending approvals (a policy's "unknown": "ask",
# `airlock approve`) through the real enforcement path (tests/lib/proxynet.sh).
# Sandboxes a and b ask, c has the default ("unknown": "deny").  A name no rule
# allows is refused (NXDOMAIN; a plain-HTTP 403 that names the approval's id) and
# listed by `approve ls` with its count; `allow --once` lets one connection through
# and no more, `--for` until it expires, `--always` writes the approvals file that
# survives a restart and that `policy test --layer` shows (a reload keeps the
# in-memory ones, a restart drops them); `deny --always` refuses a
# later allow; allow and deny are root's only; only the named sandbox is affected;
# the table is bounded (the overflow counted); every decision is an "approval"
# audit record with the operator's uid, and the chain verifies.  Needs root.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/proxynet.sh
pn_require curl perl setpriv

set -e
pn_setup ap
pn_vm VA 0
pn_vm VB 1
pn_vm VC 2
NAMES="origin.test new.test gone.test keep.test evil.test late.test held.test"
pn_hosts "11.0.0.2 $NAMES"
origin_cert "$T" multi $NAMES
origin_start "$I" tls 11.0.0.2 443 multi "$T/multi.pem" "$T/multi.key"
for s in a b; do
	cat >"$T/p$s.json" <<EOF
{ "policy": "ask-$s", "unknown": "ask",
  "rules": [ { "id": "origin", "host": "origin.test", "ports": [443] } ] }
EOF
done
cat >"$T/pc.json" <<'EOF'
{ "policy": "plain",
  "rules": [ { "id": "origin", "host": "origin.test", "ports": [443] } ] }
EOF
set +e
pn_start_or_skip
pn_attach a 0 "$T/pa.json" && pn_attach b 1 "$T/pb.json" && pn_attach c 2 "$T/pc.json"
ok $? "net attach a, b (unknown: ask) and c (default)"

al() { inH "$AIRLOCK" --config "$T/airlock.json" "$@"; }
vcurl() { local ns=$1; shift; ip netns exec "$ns" curl -sS --max-time 5 \
    --cacert "$T/ca.pem" "$@"; }
# pend SB NAME PORT FIELD: a field of the pending entry, from approve ls --json.
pend() {
	al approve ls --json | perl -MJSON::PP -e '
	    my ($sb, $name, $port, $f) = @ARGV;
	    my $r = decode_json(<STDIN>);
	    for my $s (@{$r->{sandboxes}}) {
		next unless $s->{sandbox} eq $sb;
		if ($f eq "npending") { print scalar @{$s->{pending}}; exit }
		if ($f eq "dropped") { print $s->{dropped}; exit }
		for my $e (@{$s->{pending}}) {
		    print $e->{$f} if $e->{name} eq $name && $e->{port} == $port;
		}
	    }' "$@"
}

al policy check "$T/pa.json" | grep -q "unknown ask"
ok $? "policy check shows unknown ask"
out=$(al policy test "$T/pa.json" new.test)
[ "$out" = "deny reason=name_not_allowed (unknown: ask)" ]
ok $? "policy test: an unknown name is still denied, asked ($out)"

# --- ask: refused, recorded, counted --------------------------------------------
! vcurl "$VA" https://new.test/ >/dev/null 2>&1
ok $? "a: new.test does not resolve (NXDOMAIN)"
c1=$(pend a new.test 0 count)
pn_mapped "$VA" new.test >/dev/null
c2=$(pend a new.test 0 count)
[ -n "$c1" ] && [ "$c1" -ge 1 ] && [ "$c2" -gt "$c1" ]
ok $? "approve ls --json: pending a new.test (dns), counted ($c1, then $c2)"
ID=$(pend a new.test 0 id)
al approve ls | grep -E "^a +$ID +new\.test \(dns\)" >/dev/null
ok $? "approve ls: the entry with its id ($ID)"
[ -z "$(pend c new.test 0 id)" ] && ! vcurl "$VC" https://new.test/ >/dev/null 2>&1 &&
    [ "$(pend c x 0 npending)" = 0 ]
ok $? "c (default unknown: deny): refused, and no pending entry"

# A name the policy allows on 443, asked on 80 in plain HTTP: a 403 that says so.
body=$(vcurl "$VA" http://origin.test/some/path 2>&1)
ID80=$(pend a origin.test 80 id)
[ -n "$ID80" ] && printf '%s' "$body" | grep -q "approval requested: id $ID80 (an operator may run: airlock approve allow a origin.test --port 80)"
ok $? "plain HTTP refusal: the 403 body names the approval id ($body)"
[ "$(pend a origin.test 80 method)" = GET ] && [ "$(pend a origin.test 80 path)" = /some/path ]
ok $? "... and the entry has the request's method and path"

# --- allow --once: one connection, then refused again; b unaffected -------------
al approve allow a new.test --once >"$T/out" 2>&1
ok $? "approve allow a new.test --once ($(head -c 200 "$T/out"))"
[ -z "$(pend a new.test 0 id)" ]
ok $? "... the pending entry is gone"
! vcurl "$VB" https://new.test/ >/dev/null 2>&1
ok $? "b does not get a's approval"
out=$(vcurl "$VA" https://new.test/ 2>&1)
[ "$out" = "origin multi" ]
ok $? "a: new.test goes through once ($out)"
! vcurl "$VA" https://new.test/ >/dev/null 2>&1
ok $? "... and is refused again after"
grep -q '"sandbox":"a","event":"connect".*"dst":"new.test:443".*"rule":"approval"' "$T/audit.jsonl"
ok $? "the connection's record names rule approval"

# --- allow --for: until it expires ------------------------------------------------
al approve allow a gone.test --for 3s >/dev/null 2>&1
ok $? "approve allow a gone.test --for 3s"
o1=$(vcurl "$VA" https://gone.test/ 2>&1)
o2=$(vcurl "$VA" https://gone.test/ 2>&1)
[ "$o1" = "origin multi" ] && [ "$o2" = "origin multi" ]
ok $? "a: gone.test goes through more than once while it lasts"
al approve ls | grep -q "^a: allowed gone.test:443 for"
ok $? "approve ls lists the live approval"
sleep 4
! vcurl "$VA" https://gone.test/ >/dev/null 2>&1
ok $? "... and is refused once it expired"
# A reload keeps the in-memory approvals (a restart does not: below).
al approve allow a held.test --for 5m >/dev/null 2>&1 && al reload >/dev/null 2>&1
out=$(vcurl "$VA" https://held.test/ 2>&1)
[ "$out" = "origin multi" ] && al approve ls | grep -q "^a: allowed held.test:443 for"
ok $? "a reload keeps a --for approval ($out)"
al approve allow a gone.test --for 31d >/dev/null 2>&1
[ $? = 2 ]
ok $? "--for longer than 30 days is a usage error"

# --- root only ----------------------------------------------------------------------
chmod 755 "$T/state"
inH setpriv --reuid nobody --regid nogroup --clear-groups \
    "$AIRLOCK" --config "$T/airlock.json" approve allow a late.test --once >"$T/out" 2>&1
r1=$?
inH setpriv --reuid nobody --regid nogroup --clear-groups \
    "$AIRLOCK" --config "$T/airlock.json" approve ls >/dev/null 2>&1
r2=$?
chmod 700 "$T/state"
[ "$r1" != 0 ] && [ "$r2" != 0 ] && ! vcurl "$VA" https://late.test/ >/dev/null 2>&1
ok $? "as another uid: approve allow and approve ls are refused ($(head -c 120 "$T/out"))"
inH setpriv --reuid nobody --regid nogroup --clear-groups \
    "$AIRLOCK" --config "$T/airlock.json" approve allow a late.test --always >"$T/out" 2>&1
[ $? = 1 ] && grep -q "root only" "$T/out" && [ ! -e "$T/state/approvals/a.json" ]
ok $? "as another uid: approve allow --always writes nothing"
out=$(DT_CTL_WAIT=3 perl -MIO::Socket::UNIX -e '
    my $s = IO::Socket::UNIX->new(Peer => $ARGV[0]) or die;
    print $s "{\"cmd\":\"approve\",\"action\":\"allow\",\"sandbox\":\"a\",\"name\":\"late.test\",\"port\":443,\"scope\":\"once\",\"extra\":1}\n";
    print scalar <$s>;' "$T/control.sock")
printf '%s' "$out" | grep -q '"ok":false'
ok $? "a malformed approve request is refused"

# --- allow --always: the approvals file, in policy test, across a restart -----------
al approve allow a keep.test --always >"$T/out" 2>&1
ok $? "approve allow a keep.test --always ($(head -c 200 "$T/out"))"
out=$(vcurl "$VA" https://keep.test/ 2>&1)
[ "$out" = "origin multi" ]
ok $? "a: keep.test goes through ($out)"
out=$(al policy test --layer "$T/state/approvals/a.json" "$T/pa.json" keep.test)
like "$out" "^allow rule=approval-[0-9a-f]{10} tls=splice file=$T/state/approvals/a.json\$" \
    "policy test --layer shows the approvals file's rule"
[ "$(stat -c %a:%u "$T/state/approvals/a.json")" = 600:0 ]
ok $? "the approvals file is 0600, root's"
! vcurl "$VB" https://keep.test/ >/dev/null 2>&1
ok $? "b does not get a's --always"
kill "$DPID"; wait "$DPID" 2>/dev/null; DPID=""
pn_start
ok $? "airlockd restarted"
out=$(vcurl "$VA" https://keep.test/ 2>&1)
[ "$out" = "origin multi" ]
ok $? "a: keep.test still goes through after the restart"
! vcurl "$VA" https://held.test/ >/dev/null 2>&1
ok $? "... while the --for approval of held.test went with the restart"

# --- deny --always: refuses, and refuses a later allow ------------------------------
pn_mapped "$VA" evil.test >/dev/null
al approve deny a evil.test --always >"$T/out" 2>&1 && [ -z "$(pend a evil.test 0 id)" ]
ok $? "approve deny a evil.test --always; the pending entry is gone"
out=$(al policy test --layer "$T/state/approvals/a.json" "$T/pa.json" evil.test)
like "$out" "^deny reason=denied_by_rule rule=approval-deny-" "policy test shows the deny"
al approve allow a evil.test --always >"$T/out" 2>&1
[ $? = 1 ] && grep -q "remove that rule first" "$T/out"
ok $? "a later allow --always is refused"
al approve allow a evil.test --once >"$T/out" 2>&1
[ $? = 1 ] && grep -q "denied_by_rule" "$T/out" && ! vcurl "$VA" https://evil.test/ >/dev/null 2>&1
ok $? "a later allow --once is refused (a deny rule is never overridden)"

# --- deny (not always): the entry goes, recorded ------------------------------------
pn_mapped "$VA" late.test >/dev/null
[ -n "$(pend a late.test 0 id)" ] && al approve deny a late.test >/dev/null 2>&1 &&
    [ -z "$(pend a late.test 0 id)" ]
ok $? "approve deny a late.test drops the pending entry"

# --- bounded ------------------------------------------------------------------------
before=$(pend a x 0 npending)
ip netns exec "$VA" perl -e 'for (1 .. 70) { system("getent", "ahostsv4", "n$_.flood.test") }' >/dev/null 2>&1
np=$(pend a x 0 npending)
dr=$(pend a x 0 dropped)
[ "$np" = 64 ] && [ "$dr" = $((before + 70 - 64)) ]
ok $? "pending entries are bounded: 64 kept, $dr dropped (had $before, asked 70)"
[ "$(pend b x 0 npending)" -lt 64 ]
ok $? "b's table is its own"

# --- audit ----------------------------------------------------------------------------
sleep 0.3
grep '"event":"approval"' "$T/audit.jsonl" >"$T/approvals.jsonl"
grep -q '"sandbox":"a","event":"approval".*"action":"allow","name":"new.test","port":443,"scope":"once","uid":0,"id":"' "$T/approvals.jsonl" &&
    grep -q '"action":"allow","name":"gone.test","port":443,"scope":"for","seconds":3,"uid":0' "$T/approvals.jsonl" &&
    grep -q '"action":"allow","name":"keep.test","port":443,"scope":"always","uid":0' "$T/approvals.jsonl" &&
    grep -q '"action":"deny","name":"evil.test","port":443,"scope":"always","uid":0' "$T/approvals.jsonl" &&
    grep -q '"action":"deny","name":"late.test","port":443,"scope":"pending","uid":0' "$T/approvals.jsonl"
ok $? "approval audit records with the operator's uid ($(wc -l <"$T/approvals.jsonl") records)"
! grep -q '"name":"late.test","port":443,"scope":"once"' "$T/approvals.jsonl"
ok $? "... and none for the refused non-root allow"
pn_stop_checked
"$AIRLOCK" audit verify "$T/audit.jsonl" >"$T/out" 2>&1
ok $? "airlock audit verify passes ($(head -c 100 "$T/out"))"
pn_done
