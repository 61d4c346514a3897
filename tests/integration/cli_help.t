#!/bin/bash
# tests/integration/cli_help.t: one command-line convention on both binaries.  Every
# command and subcommand that `airlock help` lists answers --help with its usage on
# stdout and exit 0 (and `airlock help CMD SUB` the same); an unknown option to any
# of them is named on stderr with exit 2; --version on both binaries; airlockd's
# --help lists each of its options, an unknown one is named.  Needs no privileges.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
AIRLOCK=${AIRLOCK:-$top/build/airlock}
AIRLOCKD=${AIRLOCKD:-$top/build/airlockd}
. "$top/tests/lib/tap.sh"
for f in "$AIRLOCK" "$AIRLOCKD"; do
	[ -x "$f" ] || { echo "1..0 # SKIP $f not built"; exit 0; }
done
tmp=$(mktemp -d /tmp/airlock-clihelp.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT

r() { "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?; }

r "$AIRLOCK" help
is "$rc" 0 "airlock help: exit 0"
like "$(head -1 "$tmp/out")" '^usage: airlock ' "... usage on stdout"
cp "$tmp/out" "$tmp/help"
r "$AIRLOCK" --help
is "$(cat "$tmp/out")" "$(cat "$tmp/help")" "airlock --help prints the same"
r "$AIRLOCK"
is "$rc" 2 "no command: exit 2, usage on stderr"
r "$AIRLOCK" nosuchcmd
is "$rc" 2 "an unknown command: exit 2"
like "$(head -1 "$tmp/err")" "unknown command 'nosuchcmd'" "... named"
r "$AIRLOCK" --nosuchopt stats
is "$rc" 2 "an unknown global option: exit 2"
like "$(head -1 "$tmp/err")" "unknown option '--nosuchopt'" "... named"
r "$AIRLOCK" help nosuchcmd
is "$rc" 2 "help for an unknown command: exit 2"

for b in "$AIRLOCK" "$AIRLOCKD"; do
	r "$b" --version
	bn=$(basename "$b")
	[ "$rc" = 0 ] && grep -Eq "^$bn [0-9]+\.[0-9]+\.[0-9]+$" "$tmp/out"
	ok $? "$bn --version: '$(cat "$tmp/out")', exit $rc"
done

# Each "airlock CMD [SUB]" the usage lists (commands without subcommands: CMD).
groups="vault ca policy audit sandbox net vm"
pairs=""
for g in $groups; do
	r "$AIRLOCK" help "$g"
	is "$rc" 0 "airlock help $g: exit 0"
	r "$AIRLOCK" "$g" --help
	[ "$rc" = 0 ] && [ ! -s "$tmp/err" ] && grep -q "^usage: airlock $g " "$tmp/out"
	ok $? "airlock $g --help: usage on stdout, exit 0"
	for s in $(sed -n "s/^\(usage:\)\{0,1\} *airlock $g \([a-z-]*\).*/\2/p" "$tmp/out"); do
		pairs="$pairs $g:$s"
	done
done
np=0
for p in $pairs; do np=$((np + 1)); done
[ "$np" -ge 20 ]
ok $? "the groups list $np subcommands"
for p in $pairs; do
	g=${p%%:*} s=${p#*:}
	r "$AIRLOCK" "$g" "$s" --help
	[ "$rc" = 0 ] && [ ! -s "$tmp/err" ] &&
	    [ "$(head -1 "$tmp/out" | cut -d' ' -f1-4)" = "usage: airlock $g $s" ]
	ok $? "airlock $g $s --help: its usage on stdout, exit 0 ($rc)"
	r "$AIRLOCK" help "$g" "$s"
	[ "$rc" = 0 ] && [ "$(head -1 "$tmp/out" | cut -d' ' -f1-4)" = "usage: airlock $g $s" ]
	ok $? "airlock help $g $s: the same"
	# An unknown option: named, exit 2, before anything is done.
	r "$AIRLOCK" --config "$tmp/none.json" "$g" "$s" --no-such-flag
	[ "$rc" = 2 ] && grep -q -- "--no-such-flag" "$tmp/err"
	ok $? "airlock $g $s --no-such-flag: named, exit 2 (got $rc: $(head -1 "$tmp/err" | cut -c1-90))"
done
for c in reload stats metrics; do
	r "$AIRLOCK" "$c" --help
	[ "$rc" = 0 ] && grep -q "^usage: airlock $c" "$tmp/out"
	ok $? "airlock $c --help: usage on stdout, exit 0"
	r "$AIRLOCK" "$c" --no-such-flag
	[ "$rc" = 2 ] && grep -q -- "unknown option '--no-such-flag'" "$tmp/err"
	ok $? "airlock $c --no-such-flag: named, exit 2"
done

# The documented exit codes (README, "Exit status"): 2 for a configuration that
# does not load, 1 for a negative answer.
printf '{ "nosuchkey": 1 }\n' >"$tmp/bad.json"
for c in stats reload "vault ls" "ca cert" "sandbox ls" "vm ls"; do
	r "$AIRLOCK" --config "$tmp/bad.json" $c
	[ "$rc" = 2 ] && grep -q "nosuchkey" "$tmp/err"
	ok $? "airlock $c with a configuration that does not load: exit 2 ($rc)"
done
printf '{ "control_socket": "%s/none.sock", "state_dir": "%s" }\n' "$tmp" "$tmp" \
    >"$tmp/ok.json"
r "$AIRLOCK" --config "$tmp/ok.json" stats
is "$rc" 1 "airlock stats without airlockd: exit 1"
printf '{"policy":"p","rules":[{"id":"r","host":"a.test","ports":[443]}]}\n' \
    >"$tmp/p.json"
r "$AIRLOCK" policy test "$tmp/p.json" a.test:443
is "$rc" 0 "policy test, allowed: exit 0"
r "$AIRLOCK" policy test "$tmp/p.json" b.test:443
is "$rc" 1 "policy test, denied: exit 1"
r "$AIRLOCKD" --config "$tmp/bad.json" -n
is "$rc" 1 "airlockd -n, a configuration that does not load: exit 1"

# airlockd
r "$AIRLOCKD" --help
is "$rc" 0 "airlockd --help: exit 0"
for o in --config --state-dir --foreground -n -v --version; do
	grep -q -- "$o" "$tmp/out"
	ok $? "airlockd --help names $o"
done
r "$AIRLOCKD" --no-such-flag
[ "$rc" = 2 ] && grep -q "unknown option '--no-such-flag'" "$tmp/err"
ok $? "airlockd --no-such-flag: named, exit 2"
r "$AIRLOCKD" --config
[ "$rc" = 2 ] && grep -q -- "--config needs a value" "$tmp/err"
ok $? "airlockd --config without a value: said, exit 2"

done_testing
