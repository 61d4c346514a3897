#!/bin/bash
# tests/integration/daemon_config.t: airlockd's start-up refusals and -n.  Each
# failure must be one clear line on stderr and a non-zero exit: bad config, a port in
# use, a missing state dir, an unknown user, a control socket path taken by another
# daemon or by a file.  As root the daemon runs in a namespace of its own (see
# tests/lib/daemon.sh).
set -u
. "$(dirname "$0")/../lib/daemon.sh"

dt_config
dt_policy "$T/good.json" good example.com

# -n: configuration and recorded policies.
dt_run --config "$CFG" -n
is "$rc" 0 "-n: good config, no sandboxes: exit 0"
like "$(cat "$T/out")" '^configuration OK$' "-n says configuration OK"

dt_record sb1 10.233.0.2 "$T/good.json"
dt_run --config "$CFG" -n
is "$rc" 0 "-n: a sandbox with a good policy: exit 0"
like "$(cat "$T/out")" '^sb1: policy good OK' "-n names the sandbox's policy"

echo '{"policy":"bad","rules":[{"id":"x","host":"exa mple.com"}]}' >"$T/bad.json"
dt_record sb2 10.233.0.6 "$T/bad.json"
dt_run --config "$CFG" -n
is "$rc" 1 "-n: a sandbox with a broken policy: exit 1"
like "$(cat "$T/out")" "^sb2: $T/bad.json:1:[0-9]+: \\\$\\.rules\\[0\\]\\.host:" \
    "-n prints file:line:col: path: reason"
rm -f "$T/state/sandboxes/sb2.json"

# Bad config: unknown key, then a JSON syntax error.
echo '{"proxy_port": 15001, "bogus": 1}' >"$T/badcfg.json"
dt_run --config "$T/badcfg.json" --foreground
is "$rc" 1 "unknown config key: exit 1"
is "$(wc -l <"$T/err" | tr -d ' ')" 1 "unknown config key: one line"
like "$(cat "$T/err")" "^airlockd: $T/badcfg.json:.*bogus" "the line names file and key"

echo '{"proxy_port": ' >"$T/badcfg.json"
dt_run --config "$T/badcfg.json" --foreground
is "$rc" 1 "config syntax error: exit 1"
is "$(wc -l <"$T/err" | tr -d ' ')" 1 "config syntax error: one line"

dt_run --config "$T/nonexistent.json" --foreground
is "$rc" 1 "missing config file given with --config: exit 1"
is "$(wc -l <"$T/err" | tr -d ' ')" 1 "missing config file: one line"

# Missing state directory.
dt_config '"user": "airlock"'
sed -i "s|\"state_dir\": \"$T/state\"|\"state_dir\": \"$T/nostate\"|" "$CFG"
dt_run --config "$CFG" --foreground
is "$rc" 1 "missing state dir: exit 1"
is "$(grep -v 'not started as root' "$T/err")" \
    "airlockd: state directory $T/nostate: No such file or directory" \
    "missing state dir: one clear line"
[ ! -e "$T/run/control.sock" ]
ok $? "no control socket left behind after a failed start"

# An audit log that cannot be opened.
dt_config
sed -i "s|\"path\": \"$T/audit.jsonl\"|\"path\": \"$T/noaudit/audit.jsonl\"|" "$CFG"
dt_run --config "$CFG" --foreground
is "$rc" 1 "audit log in a missing directory: exit 1"
like "$(grep -v 'not started as root' "$T/err")" \
    "^airlockd: audit log: $T/noaudit/audit.jsonl: No such file or directory$" \
    "audit log in a missing directory: one clear line"

# A port in use.
dt_config
if [ "$IS_ROOT" = 1 ]; then
	unshare -n sh -c 'ip link set lo up &&
	    perl -MIO::Socket::INET -e '\''$s = IO::Socket::INET->new(LocalAddr =>
	    "0.0.0.0", LocalPort => $ARGV[0], Listen => 5, ReuseAddr => 1) or die;
	    sleep 10'\'' '"$PORT_BASE"' & sleep 0.3; "$@"; r=$?; kill $!; exit $r' \
	    sh "$AIRLOCKD" --config "$CFG" --foreground >"$T/out" 2>"$T/err"
	rc=$?
else
	perl -MIO::Socket::INET -e '$s = IO::Socket::INET->new(LocalAddr =>
	    "0.0.0.0", LocalPort => $ARGV[0], Listen => 5, ReuseAddr => 1) or die;
	    sleep 10' "$PORT_BASE" &
	ppid=$!
	sleep 0.3
	"$AIRLOCKD" --config "$CFG" --foreground >"$T/out" 2>"$T/err"
	rc=$?
	kill "$ppid"
fi
is "$rc" 1 "proxy port in use: exit 1"
is "$(grep -v 'not started as root' "$T/err")" \
    "airlockd: proxy port $PORT_BASE: Address already in use" \
    "proxy port in use: the clear line"

# The control socket path is a regular file.
mkdir -p "$T/run"
echo x >"$T/run/control.sock"
dt_run --config "$CFG" --foreground
is "$rc" 1 "control socket path is a file: exit 1"
like "$(grep -v 'not started as root' "$T/err")" \
    "^airlockd: control socket $T/run/control.sock: exists and is not a socket$" \
    "control socket path is a file: one clear line"
rm -f "$T/run/control.sock"

if [ "$IS_ROOT" = 1 ]; then
	dt_config '"user": "nosuchuser-al"'
	dt_run --config "$CFG" --foreground
	is "$rc" 1 "unknown user: exit 1"
	is "$(cat "$T/err")" \
	    "airlockd: user 'nosuchuser-al' does not exist (make deps creates it)" \
	    "unknown user: one clear line"
	dt_config '"user": "root"'
	dt_run --config "$CFG" --foreground
	is "$rc" 1 "user root: refused"
else
	ok 0 "# SKIP unknown user (needs root)"
	ok 0 "# SKIP unknown user line (needs root)"
	ok 0 "# SKIP user root (needs root)"
fi
# -n checks what a start would refuse: the user too.
dt_config '"user": "nosuchuser-al"'
dt_run --config "$CFG" -n
is "$rc" 1 "-n: a user that does not exist: exit 1"
like "$(cat "$T/out")" "^user 'nosuchuser-al' does not exist" "... and -n says so"
dt_config '"user": "root"'
dt_run --config "$CFG" -n
is "$rc" 1 "-n: user root: exit 1"

# A second daemon on the same control socket is refused, the first keeps running.
dt_config
if dt_start; then
	sed -i "s|\"proxy_port\": $PORT_BASE|\"proxy_port\": $((PORT_BASE + 2))|" "$CFG"
	"$AIRLOCKD" --config "$CFG" --foreground >"$T/out" 2>"$T/err"
	rc=$?
	is "$rc" 1 "second daemon on the same control socket: exit 1"
	like "$(grep -v 'not started as root' "$T/err")" \
	    "^airlockd: control socket .*: another airlockd is running$" \
	    "second daemon: one clear line"
	kill -0 "$DPID"
	ok $? "the first daemon still runs"
	"$AIRLOCK" --config "$CFG" stats >/dev/null 2>&1
	ok $? "and still answers"
	dt_stop
	is "$dstatus" 0 "SIGTERM: clean exit 0"
	# A stale socket (daemon gone) does not stop the next start.
	if dt_start; then
		ok 0 "a stale control socket is replaced"
	else
		ok 1 "a stale control socket is replaced"
	fi
	dt_stop
else
	ok 1 "daemon starts"
fi

done_testing
