#!/bin/bash
# tests/integration/proxy_restart.t: the supervisor (proxy/proxy_supervise.c) through
# the real enforcement path (tests/lib/proxynet.sh).  The worker killed with SIGKILL
# during a download: the download ends, a new worker starts, the sandbox's next
# connection works, and while no worker ran nothing got past the policy (a stream
# of refused probes, none reaching their origin).  The worker killed by its seccomp
# filter (gdb makes it call mount(2)): the supervisor logs the system call once and
# restarts it.  A helper (netwatch) killed: the worker exits and all restart.
# Needs root; cleans up by trap.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/proxynet.sh
pn_require curl openssl

set -e
pn_setup rs
pn_vm V 0
pn_hosts "11.0.0.2 origin.test"
origin_cert "$T" origin.test origin.test
origin_start "$I" tls 11.0.0.2 443 origin.test "$T/origin.test.pem" \
    "$T/origin.test.key"
# Port 8443 is not in the policy: whatever reaches it got past the policy.
origin_start "$I" tls 11.0.0.2 8443 origin.test "$T/origin.test.pem" \
    "$T/origin.test.key"
cat >"$T/policy.json" <<'EOF'
{ "policy": "restart-test",
  "rules": [ { "id": "origin", "host": "origin.test", "ports": [443] } ] }
EOF
set +e
pn_start_or_skip
pn_attach r1 0 "$T/policy.json"
ok $? "net attach r1"

inV() { ip netns exec "$V" "$@"; }
vcurl() { inV curl -sS --max-time 8 --cacert "$T/ca.pem" "$@"; }
M=$(pn_mapped "$V" origin.test)
accepts() { grep -c '^accept$' "$T/origin.test-$1.log" 2>/dev/null; }
# new_worker OLD: waits (10 s) for a worker other than OLD that answers; prints it.
new_worker() {
	local i w
	for i in $(seq 100); do
		w=$(al_worker)
		[ -n "$w" ] && [ "$w" != "$1" ] && { echo "$w"; return 0; }
		sleep 0.1
	done
	return 1
}

W1=$(al_worker)
[ -n "$W1" ] && [ "$(pgrep -P "$DPID")" = "$W1" ]
ok $? "the supervisor ($DPID) runs one worker ($W1)"
is "$(vcurl https://origin.test/ 2>&1)" "origin origin.test" "an allowed request"
vcurl --resolve "origin.test:8443:$M" https://origin.test:8443/ >/dev/null 2>&1
[ $? -ne 0 ] && [ "$(accepts 8443)" = 0 ]
ok $? "port 8443 is refused (the probe of this test, positive control below)"

# --- SIGKILL during a download ---------------------------------------------------
inV curl -sS --max-time 60 --limit-rate 200k --cacert "$T/ca.pem" -o "$T/dl" \
    https://origin.test/size/20000000 2>"$T/dl.err" &
CURL=$!
for i in $(seq 50); do
	[ -s "$T/dl" ] && break
	sleep 0.1
done
[ -s "$T/dl" ]
ok $? "a download is under way"
# Probes every 50 ms across the kill and the restart: 8443 (refused by policy),
# 443 (allowed).
(
	for i in $(seq 60); do
		inV curl -s --max-time 2 --cacert "$T/ca.pem" -o /dev/null \
		    --resolve "origin.test:8443:$M" https://origin.test:8443/ &&
		    echo "8443 passed"
		inV curl -s --max-time 2 --cacert "$T/ca.pem" -o /dev/null \
		    https://origin.test/ && echo "443 ok" || echo "443 failed"
		sleep 0.05
	done
) >"$T/probes" 2>&1 &
PROBES=$!
sleep 0.3
kill -KILL "$W1"
wait "$CURL"
rc=$?
size=$(stat -c %s "$T/dl" 2>/dev/null)
[ "$rc" != 0 ] && [ "${size:-0}" -lt 20000000 ]
ok $? "the download ends with the worker (curl rc $rc, $size of 20000000 bytes)"
W2=$(new_worker "$W1")
ok $? "a new worker serves (${W2:-none})"
wait "$PROBES"
grep -q "worker (pid $W1) killed by signal 9" "$T/airlockd.log" &&
    grep -q "worker restarted: pid $W2" "$T/airlockd.log"
ok $? "the supervisor logs the kill and the restart"
is "$(grep -c '8443 passed' "$T/probes")" 0 "no probe to the refused port passed meanwhile"
is "$(accepts 8443)" 0 "... and none reached that origin"
failed443=$(grep -c '443 failed' "$T/probes")
ok443=$(grep -c '443 ok' "$T/probes")
[ "$ok443" -gt 0 ]
ok $? "allowed requests went through before and after ($ok443 ok, $failed443 refused)"
is "$(vcurl https://origin.test/ 2>&1)" "origin origin.test" \
    "the sandbox's next connection works"
vcurl --resolve "origin.test:8443:$M" https://origin.test:8443/ >/dev/null 2>&1
[ $? -ne 0 ] && [ "$(accepts 8443)" = 0 ]
ok $? "the new worker refuses port 8443 too"
grep -q '"sandbox":"r1".*"dst":"origin.test:8443".*"decision":"deny"' "$T/audit.jsonl"
ok $? "... and audits it"
st=/proc/$W2/status
grep -q '^Seccomp:	2$' "$st" && grep -q '^NoNewPrivs:	1$' "$st" &&
    grep -q '^CapEff:	0000000000000000$' "$st"
ok $? "the new worker is confined as the first was (Seccomp 2, NoNewPrivs, CapEff 0)"

# --- the worker killed by its seccomp filter -----------------------------------------
if command -v gdb >/dev/null; then
	# mount(2): in no filter of airlockd's.  gdb stops the worker and makes it call
	# syscall(SYS_mount, 0, 0, 0, 0, 0); the filter kills it then and there.
	# (gdb itself may abort when its inferior dies mid-call: its noise is dropped.)
	(ulimit -c 0; cd "$T" && timeout 60 gdb -p "$W2" -batch -nx \
	    -ex 'call (long)syscall(165, 0, 0, 0, 0, 0)' >"$T/gdb.out" 2>&1) 2>/dev/null
	W3=$(new_worker "$W2")
	ok $? "after a seccomp kill a new worker serves (${W3:-none})"
	grep -q "worker (pid $W2) killed by its seccomp filter" "$T/airlockd.log"
	ok $? "the supervisor says the filter killed it"
	nk=$(grep -c "seccomp: worker pid $W2 (airlockd) killed on system call 165 (mount)" \
	    "$T/airlockd.log")
	is "$nk" 1 "... and names the system call, once"
	is "$(vcurl https://origin.test/ 2>&1)" "origin origin.test" \
	    "the sandbox's next connection works"
else
	skip "gdb not installed: seccomp kill not tried" 4
	W3=$W2
fi

# --- a helper killed: netwatch (the worker's child without children) -------------
NWP=""
for c in $(pgrep -P "$W3"); do
	[ -z "$(pgrep -P "$c")" ] && NWP=$c
done
[ -n "$NWP" ] && kill -KILL "$NWP"
W4=$(new_worker "$W3")
ok $? "netwatch killed: the worker exits and a new one serves (${W4:-none})"
grep -q "netwatch ended" "$T/airlockd.log"
ok $? "... the log says why"
is "$(vcurl https://origin.test/ 2>&1)" "origin origin.test" "traffic flows again"
"$AIRLOCK" audit verify "$T/audit.jsonl" >"$T/verify.out" 2>&1
ok $? "the audit chain continues across every restart ($(head -c 80 "$T/verify.out"))"
is "$(accepts 8443)" 0 "nothing ever reached the refused port"

pn_stop_checked
! kill -0 "$W4" 2>/dev/null
ok $? "SIGTERM to the supervisor ends the worker too"
pn_done
