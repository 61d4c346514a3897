#!/bin/bash
# tests/integration/proxy_audit_full.t: a full disk under the audit log makes
# airlockd fail closed (issue 10, part 4).  The log lives on a 512 KiB tmpfs mounted
# in airlockd's own mount namespace (unshare -m: the host's mounts are untouched);
# the test fills it through /proc/PID/root.  Then new connections are refused with
# audit_unavailable, airlockd says why once in its log, and the denials are counted,
# not dropped: once there is room again they are written (written + "suppressed" =
# the refusals the client saw) and connections are accepted again.  Needs root;
# cleans up by trap.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/proxynet.sh
pn_require perl unshare mount

set -e
pn_setup aq
pn_vm VA 0
pn_hosts "11.0.0.2 git2.test"
origin_start "$I" banner 11.0.0.2 2222 git2.test
cat >"$T/pa.json" <<'EOF'
{ "policy": "small",
  "rules": [ { "id": "git2", "host": "git2.test", "ports": [2222], "protocol": "tcp" } ] }
EOF
set +e
mkdir -p "$T/full"
# airlockd in a mount namespace of its own with a small tmpfs on $T/full (exec all
# the way down, so $DPID is airlockd's PID).
full_wrap() {
	exec unshare -m --propagation private sh -c \
	    'mount -t tmpfs -o size=512k,mode=0777 airlock-test "$0" && exec "$@"' \
	    "$T/full" "$@"
}
PN_WRAP=full_wrap
PN_AUDIT='{ "path": "'"$T"'/full/audit.jsonl", "fsync": "deny" }'
if ! pn_start; then
	echo "1..0 # SKIP airlockd did not start: $(head -c 300 "$T/airlockd.log")"
	exit 0
fi
LOG=/proc/$DPID/root$T/full/audit.jsonl
[ -f "$LOG" ] && [ ! -e "$T/full/audit.jsonl" ]
ok $? "the audit log is on airlockd's own tmpfs (not visible outside)"
pn_attach a 0 "$T/pa.json"
ok $? "net attach a"
GA=$(pn_mapped "$VA" git2.test)
banner() {
	ip netns exec "$VA" timeout 5 bash -c \
	    "exec 3<>/dev/tcp/$GA/${1:-2222}; read -r l <&3; echo \"\$l\"" 2>/dev/null
}

[ "$(banner)" = "git2.test ready" ]
ok $? "with room on the disk: a's allowed connection works (positive control)"
sleep 0.3	# its connect record is written at close

# Fill the file system (dd stops at ENOSPC).  The log's last page still has room
# for a few records: denied connections to new ports (a new key each, so each
# written) until one cannot be written and the log turns unavailable.
dd if=/dev/zero of="/proc/$DPID/root$T/full/fill" bs=4k 2>/dev/null
k=0
while [ "$k" -lt 40 ] && ! grep -q 'refusing new connections' "$T/airlockd.log"; do
	k=$((k + 1))
	[ -z "$(banner $((3000 + k)))" ] || break
done
grep -q 'refusing new connections' "$T/airlockd.log"
ok $? "disk full: denied connections refused as before, until the log fails ($k)"
refused=0
for i in 1 2 3 4 5; do
	[ "$(banner)" = "git2.test ready" ] || refused=$((refused + 1))
done
[ "$refused" = 5 ]
ok $? "disk full: a's allowed connection is now refused (5 of 5)"
[ "$(grep -c 'refusing new connections (audit_unavailable)' "$T/airlockd.log")" = 1 ] &&
    grep -q 'No space left on device' "$T/airlockd.log"
ok $? "airlockd says why, once: $(grep -m1 'audit log' "$T/airlockd.log")"

# Room again: the next flush (1 s timer) writes the counts, and the log is back.
rm -f "/proc/$DPID/root$T/full/fill"
for i in $(seq 50); do
	grep -q 'writable again' "$T/airlockd.log" && break
	sleep 0.2
done
grep -q 'writable again: accepting new connections' "$T/airlockd.log"
ok $? "room again: airlockd says the log is writable again"
[ "$(banner)" = "git2.test ready" ]
ok $? "... and a's allowed connection works again"
# Counts of the current second go out with the next flush.
for i in $(seq 50); do
	n_un=$(pn_denials a audit_unavailable "$LOG")
	n_port=$(pn_denials a port_not_allowed "$LOG")
	[ $((n_un + n_port)) -ge $((k + 5)) ] && break
	sleep 0.2
done
[ $((n_un + n_port)) = $((k + 5)) ] && [ "$n_un" -ge 5 ]
ok $? "no denial lost: audit_unavailable $n_un + port_not_allowed $n_port = $((k + 5))"
cp "$LOG" "$T/audit.jsonl"
"$AIRLOCK" audit verify "$T/audit.jsonl" >/dev/null 2>&1
ok $? "the audit chain verifies"
pn_done
