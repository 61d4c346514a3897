# tests/lib/cli.sh: shared by the unprivileged `airlock` command tests (audit_cli.t,
# ca_cli.t, policy_cli.t, vault_cli.t; sh).  Sets top (the source tree) and AIRLOCK
# (the binary), sources tests/lib/tap.sh, and gives the helpers below, which work in
# $tmp, a temporary directory the test makes (and removes) itself.
#
#	. "$(dirname "$0")/../lib/cli.sh"
#	run ARGS...		# airlock ARGS: stdout in $tmp/out, stderr in $tmp/err,
#				# both appended to $tmp/all; the exit status in $rc
#	expect_rc WANT DESC	# a check that $rc is WANT (out and err shown if not)
#	expect_err TEXT		# a check that stderr holds the fixed string TEXT
#	has out|err TEXT DESC	# a check that stdout or stderr holds the fixed string TEXT

top=$(cd "$(dirname "$0")/../.." && pwd)
AIRLOCK=${AIRLOCK:-$top/build/airlock}
. "$top/tests/lib/tap.sh"

run() {
	"$AIRLOCK" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	cat "$tmp/out" "$tmp/err" >>"$tmp/all"
}

expect_rc() {
	[ "$rc" -eq "$1" ]
	ok $? "$2 (exit $rc, want $1)"
	if [ "$rc" -ne "$1" ]; then
		sed 's/^/# out: /' "$tmp/out"
		sed 's/^/# err: /' "$tmp/err"
	fi
}

expect_err() {
	grep -qF -- "$1" "$tmp/err"
	ok $? "stderr says: $1"
	grep -qF -- "$1" "$tmp/err" || sed 's/^/# got: /' "$tmp/err"
}

has() {
	grep -qF -- "$2" "$tmp/$1"
	ok $? "$3"
}
