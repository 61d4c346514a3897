#!/bin/bash
# tests/integration/daemon_control.t: the control socket.  `airlock stats` (table and
# JSON) over it; its mode (0600, directory 0700); hostile input refused (overlong
# line, not JSON, duplicate and unknown keys, unknown command, bad sandbox name, NUL);
# the peer check (SO_PEERCRED: root or the daemon's uid only); `airlock stats` when
# airlockd is not running.
set -u
. "$(dirname "$0")/../lib/daemon.sh"

dt_config
dt_policy "$T/p1.json" p1 example.com
dt_record sb1 10.233.0.2 "$T/p1.json"
if ! dt_start; then
	ok 1 "airlockd starts"
	done_testing
fi
ok 0 "airlockd starts"

out=$("$AIRLOCK" --config "$CFG" stats)
ok $? "airlock stats: exit 0"
like "$out" '^SANDBOX +POLICY +LIVE +ALLOWED +DENIED' "stats: table header"
like "$out" '^sb1 +p1 +0 +0 +0 +0 +0' "stats: a row for sb1 with zero counters"
out=$("$AIRLOCK" --config "$CFG" stats --json)
ok $? "airlock stats --json: exit 0"
like "$out" '^\{"ok":true,.*"sandboxes":\[\{"name":"sb1",.*"policy":"p1",.*"conns_live":0' \
    "stats --json: sb1 with its policy and counters"
out2=$("$AIRLOCK" --config "$CFG" --json stats)
is "$out2" "$out" "--json before the command does the same"

is "$(stat -c %a "$T/run/control.sock")" 600 "control socket is 0600"
is "$(stat -c %a "$T/run")" 700 "its directory, created by airlockd, is 0700"

like "$(dt_ctl '"{\"cmd\":\"ping\"}\n"')" '^\{"ok":true,"pid":[0-9]+,"supervisor":'"$DPID"'\}$' \
    "ping: the worker's PID and the supervisor's (the PID started)"
like "$(dt_ctl '"A" x 5000')" '^\{"ok":false,"error":"request line too long"\}$' \
    "an overlong line is refused"
like "$(dt_ctl '"{\"cmd\":\"ping\"" . (" " x 5000) . "}\n"')" \
    '"error":"request line too long"' "an overlong JSON line is refused"
like "$(dt_ctl '"hello\n"')" '^\{"ok":false,"error":"malformed request' \
    "not JSON: refused"
like "$(dt_ctl '"[\"reload\"]\n"')" '^\{"ok":false,"error":"malformed request' \
    "a JSON array: refused"
like "$(dt_ctl '"{\"cmd\":\"ping\",\"cmd\":\"reload\"}\n"')" '^\{"ok":false' \
    "duplicate key: refused"
like "$(dt_ctl '"{\"cmd\":\"stats\",\"all\":true}\n"')" \
    '^\{"ok":false,"error":"malformed request: unknown key"\}$' "unknown key: refused"
like "$(dt_ctl '"{\"cmd\":\"shutdown\"}\n"')" \
    '^\{"ok":false,"error":"unknown command"\}$' "unknown command: refused"
like "$(dt_ctl '"{\"cmd\":\"sandbox_add\",\"name\":\"../../etc/passwd\"}\n"')" \
    '^\{"ok":false,"error":"malformed request: \\"name\\" must be a sandbox name"\}$' \
    "a name that is not a sandbox name: refused"
like "$(dt_ctl '"{\"cmd\":\"sandbox_add\",\"name\":1}\n"')" '^\{"ok":false' \
    "a name that is not a string: refused"
like "$(dt_ctl '"{\"cmd\":\"pi\\\\u0000ng\"}\n"')" '^\{"ok":false' \
    "an escaped NUL: refused"
like "$(dt_ctl '"{\"cmd\":\"ping\"}\0\n"')" '^\{"ok":false' "a raw NUL: refused"
like "$(DT_CTL_WAIT=1 dt_ctl '"{\"cmd\":\"ping\"}"')" '^TIMEOUT$' \
    "no newline: no reply yet (the daemon waits for the line)"
like "$(dt_ctl '"{\"cmd\":\"ping\"}\n"')" '^\{"ok":true' "still answers after all that"

if [ "$IS_ROOT" = 1 ] && id nobody >/dev/null 2>&1; then
	out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups \
	    "$AIRLOCK" --config "$CFG" stats 2>&1)
	rc=$?
	is "$rc" 1 "another uid: refused by the socket's mode"
	like "$out" 'Permission denied' "another uid: permission denied"
	# Open the file mode on purpose: the daemon's own peer check must still refuse.
	chmod 711 "$T/run"
	chmod 666 "$T/run/control.sock"
	out=$(setpriv --reuid=nobody --regid=nogroup --clear-groups \
	    "$AIRLOCK" --config "$CFG" stats 2>&1)
	rc=$?
	chmod 700 "$T/run"
	chmod 600 "$T/run/control.sock"
	is "$rc" 1 "another uid with the mode opened: refused (SO_PEERCRED)"
	like "$out" 'closed the control connection without a reply|Broken pipe|reset by peer' \
	    "SO_PEERCRED refusal: the connection is closed, no reply"
	like "$(cat "$T/daemon.log")" 'control: refused a client with uid 65534' \
	    "the refusal is logged"
else
	for i in 1 2 3 4 5; do ok 0 "# SKIP peer checks need root"; done
fi

dt_stop
is "$dstatus" 0 "SIGTERM: exit 0"
out=$("$AIRLOCK" --config "$CFG" stats 2>&1)
rc=$?
is "$rc" 1 "stats without airlockd: exit 1"
like "$out" '^airlock: stats: airlockd is not running \(control socket ' \
    "stats without airlockd: a clear message"

done_testing
