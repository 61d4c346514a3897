# tests/lib/netns.sh: shared shell helpers for tests that run in network namespaces.
#
# Source it from an integration test (sh or bash):
#
#	. "$(dirname "$0")/../lib/netns.sh"
#	netns_require			# prints "1..0 # skip ..." and exits unless root
#					# with a working `ip netns`
#	netns_new H host		# a fresh namespace, unique per run ($$); its
#	netns_new V vm			#   name goes into the variable H (then V)
#	netns_veth "$H" vh0 "$V" vv0	# a veth pair between them (links up)
#	netns_exec "$H" cmd ...		# run inside one
#
# Every namespace made by netns_new is deleted by netns_cleanup, which the EXIT trap
# installed by netns_require calls even when the test fails or is interrupted.  Tests
# with cleanup of their own set NETNS_CLEANUP_HOOK to a function name; it runs first.
# Nothing here ever touches the machine's own namespace: every ip/nft command that
# changes something runs under `ip netns exec` in a namespace made here.

NETNS_LIST=""
NETNS_TMP=""
NETNS_CLEANUP_HOOK=""

# netns_require: skip the whole test (TAP "1..0 # skip") when it cannot run here.
netns_require() {
	if [ "$(id -u)" != 0 ]; then
		echo "1..0 # skip network namespace tests need root"
		exit 0
	fi
	if ! command -v ip >/dev/null 2>&1; then
		echo "1..0 # skip no ip(8)"
		exit 0
	fi
	_probe="al-probe-$$"
	if ! ip netns add "$_probe" >/dev/null 2>&1; then
		echo "1..0 # skip ip netns unavailable"
		exit 0
	fi
	ip netns del "$_probe" >/dev/null 2>&1
	NETNS_TMP=$(mktemp -d "${TMPDIR:-/tmp}/airlock-netns.XXXXXX")
	trap netns_cleanup EXIT
	trap 'exit 129' HUP
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

# netns_new VAR TAG: creates namespace al-TAG-PID with loopback up and stores its name
# in the variable VAR.  (Not $(...): the list of namespaces to delete must be
# updated in this shell, not in a subshell.)
netns_new() {
	_n="al-$2-$$"
	ip netns add "$_n" || return 1
	NETNS_LIST="$NETNS_LIST $_n"
	ip netns exec "$_n" ip link set lo up
	eval "$1=\$_n"
}

# netns_exec NS CMD...: runs CMD inside NS.
netns_exec() {
	_ns=$1
	shift
	ip netns exec "$_ns" "$@"
}

# netns_veth NS1 IF1 NS2 IF2: a veth pair IF1 (in NS1) <-> IF2 (in NS2), both up.
netns_veth() {
	ip netns exec "$1" ip link add "$2" type veth peer name "$4" netns "$3" &&
	ip netns exec "$1" ip link set "$2" up &&
	ip netns exec "$3" ip link set "$4" up
}

# netns_bg NS LOGFILE CMD...: starts CMD in NS in the background, output to LOGFILE;
# remembers its PID so that netns_cleanup kills it (by PID only).
NETNS_PIDS=""
netns_bg() {
	_ns=$1
	_log=$2
	shift 2
	ip netns exec "$_ns" "$@" >"$_log" 2>&1 &
	NETNS_PIDS="$NETNS_PIDS $!"
}

# netns_wait_for FILE TEXT [TENTHS]: waits until FILE contains TEXT (default 3 s).
netns_wait_for() {
	_i=0
	while [ "$_i" -lt "${3:-30}" ]; do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
		_i=$((_i + 1))
	done
	return 1
}

# netns_cleanup: kills what netns_bg started, deletes every namespace made here (their
# interfaces, tables and taps go with them), removes the temporary directory.
netns_cleanup() {
	_rc=$?
	if [ -n "$NETNS_CLEANUP_HOOK" ]; then
		"$NETNS_CLEANUP_HOOK" || true
	fi
	for _p in $NETNS_PIDS; do
		kill "$_p" 2>/dev/null
		wait "$_p" 2>/dev/null
	done
	for _n in $NETNS_LIST; do
		ip netns del "$_n" 2>/dev/null
	done
	NETNS_LIST=""
	[ -n "$NETNS_TMP" ] && rm -rf "$NETNS_TMP"
	return $_rc
}
