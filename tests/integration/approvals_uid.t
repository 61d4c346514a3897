#!/bin/bash
# tests/integration/approvals_uid.t: airlockd's own check that `approve allow` and
# `approve deny` come from root (the control socket's SO_PEERCRED uid), beneath the
# socket's 0600.  An airlockd run as user nobody (in a network namespace of its own)
# answers its own uid, so nobody's `approve ls` is answered (positive control) while
# nobody's `approve allow` and `approve deny` are refused by the daemon itself, and
# write no approval record.  Needs root (to make the namespace and change uid).
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/lib/tap.sh"
B=${AIRLOCK_BUILD:-build}
case $B in /*) ;; *) B=$top/$B ;; esac
AIRLOCK=$B/airlock
AIRLOCKD=$B/airlockd
[ "$(id -u)" = 0 ] || { echo "1..0 # SKIP needs root"; exit 0; }
for c in setpriv unshare; do
	command -v "$c" >/dev/null || { echo "1..0 # SKIP no $c"; exit 0; }
done
for f in "$AIRLOCK" "$AIRLOCKD"; do
	[ -x "$f" ] || { echo "1..0 # SKIP $f not built"; exit 0; }
done
T=$(mktemp -d /tmp/airlock-apuid.XXXXXX) || exit 1
DPID=""
cleanup() {
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
mkdir -p "$T/state/sandboxes" "$T/run"
cat >"$T/airlock.json" <<EOF
{ "state_dir": "$T/state", "control_socket": "$T/run/control.sock",
  "proxy_port": 25001, "dns_port": 25053, "workers": 1,
  "audit": { "path": "$T/audit.jsonl", "fsync": "never" } }
EOF
chmod 755 "$T"
chown -R nobody:nogroup "$T/state" "$T/run"
chmod 700 "$T/state" "$T/state/sandboxes" "$T/run"
touch "$T/audit.jsonl" && chown nobody:nogroup "$T/audit.jsonl"
asnobody() { setpriv --reuid nobody --regid nogroup --clear-groups "$@"; }
unshare -n sh -c 'ip link set lo up && exec "$@"' sh setpriv --reuid nobody \
    --regid nogroup --clear-groups "$AIRLOCKD" --config "$T/airlock.json" \
    --foreground >"$T/daemon.log" 2>&1 &
DPID=$!
up=1
for _i in $(seq 100); do
	asnobody "$AIRLOCK" --config "$T/airlock.json" stats >/dev/null 2>&1 && { up=0; break; }
	kill -0 "$DPID" 2>/dev/null || break
	sleep 0.1
done
if [ "$up" != 0 ]; then
	echo "1..0 # SKIP airlockd did not start as nobody: $(head -c 200 "$T/daemon.log")"
	exit 0
fi
asnobody "$AIRLOCK" --config "$T/airlock.json" approve ls >"$T/out" 2>&1
ok $? "airlockd's own uid: approve ls is answered ($(head -c 80 "$T/out"))"
asnobody "$AIRLOCK" --config "$T/airlock.json" approve allow a x.test --once >"$T/out" 2>&1
[ $? = 1 ] && grep -q "root's only" "$T/out"
ok $? "airlockd's own uid: approve allow refused by the daemon ($(head -c 120 "$T/out"))"
asnobody "$AIRLOCK" --config "$T/airlock.json" approve deny a x.test >"$T/out" 2>&1
[ $? = 1 ] && grep -q "root's only" "$T/out"
ok $? "... and approve deny"
asnobody "$AIRLOCK" --config "$T/airlock.json" approve allow a x.test --for 1m >"$T/out" 2>&1
[ $? = 1 ] && grep -q "root's only" "$T/out"
ok $? "... and approve allow --for"
! grep -q '"event":"approval"' "$T/audit.jsonl"
ok $? "no approval record written"
kill "$DPID"; wait "$DPID" 2>/dev/null; DPID=""
! grep -q "Sanitizer" "$T/daemon.log"
ok $? "no sanitizer report in airlockd's log (SAN builds)"
done_testing
