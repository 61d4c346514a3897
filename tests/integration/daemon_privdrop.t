#!/bin/bash
# tests/integration/daemon_privdrop.t: started as root, airlockd ends up as the
# configured user (uid, gid, groups), with no capabilities, not dumpable (its /proc
# files turn root-owned), core size 0 and no_new_privs; the root state reader it
# forked answers reloads, and it and the root netwatch child go away with the daemon; the audit log opened before
# the drop is still written after it.  Needs root and the user `airlock` (make deps).
set -u
if [ "$(id -u)" != 0 ]; then
	echo "1..0 # SKIP needs root"
	exit 0
fi
if ! getent passwd airlock >/dev/null; then
	echo "1..0 # SKIP no user airlock (make deps creates it)"
	exit 0
fi
. "$(dirname "$0")/../lib/daemon.sh"

uid=$(id -u airlock)
gid=$(id -g airlock)
dt_config
dt_policy "$T/p1.json" p1 example.com
dt_record sb1 10.233.0.2 "$T/p1.json"
chmod 600 "$T/p1.json"	# readable by root only: the reader must read it
ulimit -Sn 1024	# airlockd must raise it (checked below)
if ! dt_start; then
	ok 1 "airlockd starts"
	done_testing
fi
ok 0 "airlockd starts"
# The PID started is the supervisor; the worker is its one child.
WPID=$(al_worker)
is "$(pgrep -P "$DPID" | wc -l)" 1 "the supervisor has one child, the worker"
sst=/proc/$DPID/status
like "$(grep '^NoNewPrivs:' "$sst")" '^NoNewPrivs:	1$' "supervisor: no_new_privs set"
is "$(stat -c %u "$sst")" 0 "supervisor: not dumpable"
like "$(grep '^Max core file size' /proc/$DPID/limits)" \
    '^Max core file size +0 +0 ' "supervisor: RLIMIT_CORE 0"
st=/proc/$WPID/status
like "$(grep '^Uid:' "$st")" "^Uid:	$uid	$uid	$uid	$uid$" "uid: real, effective, saved, fs = airlock"
like "$(grep '^Gid:' "$st")" "^Gid:	$gid	$gid	$gid	$gid$" "gid: all airlock's"
like "$(grep '^Groups:' "$st")" "^Groups:	$gid ?$" "supplementary groups: airlock's only"
like "$(grep '^CapEff:' "$st")" '^CapEff:	0+$' "no effective capabilities"
like "$(grep '^CapPrm:' "$st")" '^CapPrm:	0+$' "no permitted capabilities"
like "$(grep '^NoNewPrivs:' "$st")" '^NoNewPrivs:	1$' "no_new_privs set"
# A process that is not dumpable has its /proc/PID files owned by root.
is "$(stat -c %u "$st")" 0 "not dumpable (/proc/PID/status owned by root)"
like "$(grep '^Max core file size' /proc/$WPID/limits)" \
    '^Max core file size +0 +0 ' "RLIMIT_CORE 0"
# Started with a soft limit of 1024 (above): airlockd raises it to the hard one
# (itself first raised to 65536 where the kernel lets root do that).
lim=$(awk '/^Max open files/ { print $4, $5 }' /proc/$WPID/limits)
soft=${lim% *} hard=${lim#* }
[ "$soft" -gt 1024 ] 2>/dev/null && [ "$soft" = "$hard" ]
ok $? "open-files soft limit raised from 1024 to the hard limit ($soft/$hard)"
like "$(cat "$T/daemon.log")" "ready: .* uid $uid\$" "the daemon says it runs as airlock"

# Two root children: the state reader and netwatch (it reinstalls nftables tables).
kids=$(pgrep -P "$WPID" | tr '\n' ' ')
is "$(echo $kids | wc -w)" 2 "the state reader and netwatch run as children"
for reader in $kids; do
	like "$(grep '^Uid:' /proc/$reader/status 2>/dev/null)" '^Uid:	0	0	0	0$' \
	    "child $reader keeps root"
	is "$(stat -c %u /proc/$reader/status)" 0 "child $reader is not dumpable either"
done

lines=$(wc -l <"$T/audit.jsonl")
dt_policy "$T/p1.json" p1 example.org
chmod 600 "$T/p1.json"
out=$("$AIRLOCK" --config "$CFG" reload)
is "$?" 0 "reload after the drop reads the root-only policy (through the reader)"
like "$out" '^sb1: changed, policy p1' "reload: sb1 changed"
[ "$(wc -l <"$T/audit.jsonl")" -gt "$lines" ]
ok $? "the audit log is still written after the drop"
# Given to the daemon's user so that a rotated log can be continued after SIGHUP
# (daemon_audit.t); its open fd could truncate the file anyway.
is "$(stat -c '%U %a' "$T/audit.jsonl")" "airlock 600" \
    "the audit log is 0600, owned by the daemon's user"

dt_stop
is "$dstatus" 0 "SIGTERM: exit 0"
for reader in $kids; do
	for i in $(seq 20); do
		kill -0 "$reader" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$reader" 2>/dev/null
	is "$?" 1 "child $reader exits with the daemon"
done

done_testing
