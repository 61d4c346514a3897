# tests/lib/tap.sh: the TAP helpers of the shell tests (sh or bash; `set -u` safe).
# Sourced by tests/lib/daemon.sh, tests/lib/proxynet.sh and tests/lib/cli.sh, or
# directly by a test:
#
#	. "$(dirname "$0")/../lib/tap.sh"
#	plan N			# "1..N" up front (or done_testing at the end)
#	ok STATUS DESC		# "ok N - DESC" when STATUS is 0, else "not ok N - DESC"
#	pass DESC / fail DESC	# ok 0 DESC / ok 1 DESC
#	skip REASON [N]		# N checks (default 1) reported skipped
#	check DESC CMD...	# passes when CMD succeeds
#	fails DESC CMD...	# passes when CMD fails
#	is GOT WANT DESC	# string equality; got/want as diagnostics on failure
#	like GOT ERE DESC	# GOT matches the extended regex ERE (grep -E)
#	diag TEXT...		# "# TEXT"
#	done_testing		# "1..N" for the N checks run; exits 1 if any failed
#
# n counts the checks so far, failed the failed ones.  Every helper returns 0, so a
# failed check never stops a script that runs under `set -e`: the rest still report.

n=0
failed=0

ok() {
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		failed=$((failed + 1))
	fi
}

# skip REASON [N]: N (default 1) checks skipped, each reported "ok N # SKIP REASON".
skip() {
	_tap_k=0
	while [ "$_tap_k" -lt "${2:-1}" ]; do
		n=$((n + 1))
		echo "ok $n # SKIP $1"
		_tap_k=$((_tap_k + 1))
	done
}

pass() {
	ok 0 "$1"
}

fail() {
	ok 1 "$1"
}

check() {
	_tap_d=$1
	shift
	if "$@"; then ok 0 "$_tap_d"; else ok 1 "$_tap_d"; fi
}

fails() {
	_tap_d=$1
	shift
	if "$@"; then ok 1 "$_tap_d"; else ok 0 "$_tap_d"; fi
}

is() {
	if [ "$1" = "$2" ]; then
		ok 0 "$3"
	else
		ok 1 "$3"
		echo "#   got: '$1'"
		echo "#  want: '$2'"
	fi
}

like() {
	if printf '%s\n' "$1" | grep -Eq -- "$2"; then
		ok 0 "$3"
	else
		ok 1 "$3"
		echo "#   got: '$1'"
		echo "#  want: /$2/"
	fi
}

diag() {
	echo "# $*"
}

plan() {
	echo "1..$1"
}

done_testing() {
	echo "1..$n"
	[ "$failed" = 0 ]
	exit $?
}
