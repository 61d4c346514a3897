#!/bin/bash
# tests/integration/daemon_detach.t: airlockd without --foreground.  The command
# returns 0 once the first worker serves, the supervisor runs on detached (its own
# session, standard descriptors on /dev/null, its worker its child); SIGTERM to it
# ends both and removes the control socket.  A start that fails says why on stderr
# and returns 1, leaving nothing running.
set -u
. "$(dirname "$0")/../lib/daemon.sh"

SPID=""
trap '[ -n "$SPID" ] && kill "$SPID" 2>/dev/null; dt_cleanup' EXIT

dt_config
dt_policy "$T/p1.json" p1 example.com
dt_record sb1 10.233.0.2 "$T/p1.json"
dt_run --config "$CFG"
is "$rc" 0 "without --foreground: returns 0 once it serves"
grep -q 'policy p1 added' "$T/err" && ! grep -q 'ready:' "$T/err"
ok $? "... start-up on stderr, then syslog (no 'ready' line on stderr)"
reply=$(dt_ctl '"{\"cmd\":\"ping\"}\n"')
SPID=$(printf '%s' "$reply" | sed -n 's/.*"supervisor":\([0-9]*\).*/\1/p')
WPID=$(printf '%s' "$reply" | sed -n 's/.*"pid":\([0-9]*\).*/\1/p')
[ -n "$SPID" ] && [ -n "$WPID" ] && kill -0 "$SPID" 2>/dev/null
ok $? "the control socket answers: worker $WPID, supervisor ${SPID:-none}"
is "$(pgrep -P "$SPID")" "$WPID" "the worker is the supervisor's one child"
is "$(ps -o sid= -p "$SPID" | tr -d ' ')" "$SPID" "the supervisor leads a session of its own"
for p in "$SPID" "$WPID"; do
	is "$(readlink /proc/$p/fd/0) $(readlink /proc/$p/fd/1) $(readlink /proc/$p/fd/2)" \
	    "/dev/null /dev/null /dev/null" "pid $p: stdin, stdout and stderr on /dev/null"
done
is "$(readlink /proc/$WPID/cwd)" / "the worker's working directory is /"
"$AIRLOCK" --config "$CFG" stats >/dev/null
ok $? "airlock stats works"
kill "$SPID"
for i in $(seq 50); do
	kill -0 "$SPID" 2>/dev/null || kill -0 "$WPID" 2>/dev/null || break
	sleep 0.1
done
! kill -0 "$SPID" 2>/dev/null && ! kill -0 "$WPID" 2>/dev/null
ok $? "SIGTERM to the supervisor ends it and its worker"
SPID=""
[ ! -e "$T/run/control.sock" ]
ok $? "the control socket is removed"

# A start that fails: the reason on stderr, status 1, nothing left running.
rm -rf "$T/state"
dt_run --config "$CFG"
is "$rc" 1 "a failed start without --foreground: status 1"
like "$(cat "$T/err")" "state directory $T/state: No such file or directory" \
    "... saying why on stderr"
[ ! -e "$T/run/control.sock" ]
ok $? "... and nothing answers on the control socket"

done_testing
