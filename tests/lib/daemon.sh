# tests/lib/daemon.sh: shared by tests/integration/daemon_*.t (bash).  Starts one
# airlockd in the foreground with a config, state dir and audit log in a temp dir,
# and kills exactly that daemon (by PID) at exit.
#
# As root the daemon runs in a network namespace of its own (unshare -n, only lo up),
# so its 0.0.0.0 listeners never show on the machine's interfaces and the ports cannot
# collide with anything else; the control socket is a path in the temp dir, reachable
# from here.  Without root it runs here on high ports and keeps its uid.
#
# Set before sourcing: nothing.  Provides: T (temp dir), CFG, AIRLOCK, AIRLOCKD,
# DPID, the TAP helpers of tests/lib/tap.sh, dt_config, dt_policy, dt_record, dt_start,
# dt_stop, dt_run.

top=$(cd "$(dirname "$0")/../.." && pwd)
B=${AIRLOCK_BUILD:-build}
case $B in /*) ;; *) B=$top/$B ;; esac
AIRLOCK=${AIRLOCK:-$B/airlock}
AIRLOCKD=${AIRLOCKD:-$B/airlockd}
. "$top/tests/lib/tap.sh"
. "$top/tests/lib/airlockd.sh"
for f in "$AIRLOCK" "$AIRLOCKD"; do
	if [ ! -x "$f" ]; then
		echo "1..0 # SKIP $f not built"
		exit 0
	fi
done

T=$(mktemp -d /tmp/airlock-daemon.XXXXXX) || exit 1
chmod 755 "$T"
CFG=$T/airlock.json
AL_SOCK=$T/run/control.sock
DPID=""
IS_ROOT=0
[ "$(id -u)" = 0 ] && IS_ROOT=1
# Without root the ports live in the machine's namespace: pick them per test run.
PORT_BASE=$((20000 + ($$ % 15000) * 2))

dt_cleanup() {
	dt_stop
	rm -rf "$T"
}
trap dt_cleanup EXIT
trap 'exit 1' INT TERM

# dt_config [EXTRA-JSON-MEMBERS]: writes $CFG (state dir $T/state, control socket
# $T/run/control.sock, audit $T/audit.jsonl, 1 worker).
dt_config() {
	mkdir -p "$T/state/sandboxes"
	chmod 700 "$T/state" "$T/state/sandboxes"
	cat >"$CFG" <<-EOF
	{
	  "state_dir": "$T/state",
	  "control_socket": "$T/run/control.sock",
	  "proxy_port": $PORT_BASE,
	  "dns_port": $((PORT_BASE + 1)),
	  "workers": 1,
	  "audit": { "path": "$T/audit.jsonl", "fsync": "never" }${1:+,
	  $1}
	}
	EOF
}

# dt_policy FILE NAME HOST: a one-rule policy.
dt_policy() {
	printf '{"policy":"%s","rules":[{"id":"r1","host":"%s","ports":[443]}]}\n' \
	    "$2" "$3" >"$1"
}

# dt_record NAME GUEST-IP POLICY-FILE: a sandbox record as lib/sandbox.c writes it.
dt_record() {
	cat >"$T/state/sandboxes/$1.json" <<-EOF
	{"name":"$1","kind":"attach","iface":"veth-$1","host_ip":"10.233.0.1",
	 "guest_ip":"$2","prefix":30,"mac":"","policy":"$3","policy_hash":"",
	 "created":1700000000}
	EOF
	chmod 600 "$T/state/sandboxes/$1.json"
}

# dt_run ARGS...: runs airlockd to completion (in its own namespace as root);
# stdout in $T/out, stderr in $T/err, status in $rc.
dt_run() {
	if [ "$IS_ROOT" = 1 ]; then
		unshare -n sh -c 'ip link set lo up && exec "$@"' sh \
		    "$AIRLOCKD" "$@" >"$T/out" 2>"$T/err"
	else
		"$AIRLOCKD" "$@" >"$T/out" 2>"$T/err"
	fi
	rc=$?
}

# dt_start [ARGS...]: starts airlockd --config $CFG --foreground in the background,
# log in $T/daemon.log, and waits until its control socket answers.  Returns 1 if
# it did not come up within 10 s.
dt_start() {
	if [ "$IS_ROOT" = 1 ]; then
		unshare -n sh -c 'ip link set lo up && exec "$@"' sh \
		    "$AIRLOCKD" --config "$CFG" --foreground "$@" \
		    >"$T/daemon.log" 2>&1 &
	else
		"$AIRLOCKD" --config "$CFG" --foreground "$@" >"$T/daemon.log" 2>&1 &
	fi
	DPID=$!
	for _i in $(seq 100); do
		if "$AIRLOCK" --config "$CFG" stats >/dev/null 2>&1; then
			return 0
		fi
		kill -0 "$DPID" 2>/dev/null || break
		sleep 0.1
	done
	diag "airlockd did not start:"
	sed 's/^/#   /' "$T/daemon.log"
	return 1
}

# dt_stop: SIGTERM to the daemon we started, and wait for it.  Sets $dstatus.
dt_stop() {
	dstatus=""
	if [ -n "$DPID" ]; then
		kill "$DPID" 2>/dev/null
		wait "$DPID" 2>/dev/null
		dstatus=$?
		DPID=""
	fi
}

# dt_ctl BYTES: sends BYTES (a perl string expression, e.g. '"{\"cmd\":\"ping\"}\n"')
# raw to the control socket and prints the reply line ("EOF" if the daemon closed
# without one).
dt_ctl() {
	perl -MIO::Socket::UNIX -e '
	    my $s = IO::Socket::UNIX->new(Peer => $ARGV[0]) or do {
		print "CONNECT: $!\n"; exit 0 };
	    my $req = eval $ARGV[1]; die $@ if $@;
	    $SIG{PIPE} = "IGNORE";
	    print $s $req; $s->flush;
	    $SIG{ALRM} = sub { print "TIMEOUT\n"; exit 0 }; alarm $ARGV[2];
	    my $l = <$s>; print defined $l ? $l : "EOF\n";' \
	    "$T/run/control.sock" "$1" "${DT_CTL_WAIT:-5}"
}
