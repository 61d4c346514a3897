#!/bin/bash
# tests/integration/man.t: the man pages (make man: docs/md2man.pl over docs/CLI.md,
# docs/AIRLOCKD.md, docs/CONFIGURATION.md and policies/SCHEMA.md).  Each page formats
# without a single warning (groff -man -t -ww -z, on the default device and on the
# terminal's), renders under man -l with its NAME section first (and lexgrog, which
# whatis and apropos use, reads that line), and says what it must: airlock.json.5
# names every key of etc/airlock.json (nested ones as audit.path), airlock.1 holds
# every usage line of `airlock help` (every command and subcommand), airlockd.8
# names in its OPTIONS every option `airlockd --help` lists.  Positive controls: the
# same groff check fails on a page with an undefined macro and on one whose table
# never ends; the converter refuses a table whose rows do not match its header, and
# writes roff-looking markdown so that it stays text.  Needs no privileges; uses
# $AIRLOCK_BUILD/man, made with `make man` when a page is not there.
set -u
. "$(dirname "$0")/../lib/build.sh"
AIRLOCK=${AIRLOCK:-$B/airlock}
AIRLOCKD=${AIRLOCKD:-$B/airlockd}
for c in perl groff man lexgrog; do
	command -v "$c" >/dev/null || { echo "1..0 # SKIP no $c (make deps)"; exit 0; }
done
for f in "$AIRLOCK" "$AIRLOCKD"; do
	[ -x "$f" ] || { echo "1..0 # SKIP $f not built"; exit 0; }
done
T=$(mktemp -d /tmp/airlock-man.XXXXXX) || exit 1
trap 'rm -rf "$T"' EXIT
M=$B/man
pages="airlock.1 airlockd.8 airlock.json.5 airlock-policy.5"
for p in $pages; do
	[ -f "$M/$p" ] && continue
	make -s -C "$top" man SAN=$SAN >"$T/make.log" 2>&1
	ok $? "make man ($(tail -1 "$T/make.log"))"
	break
done

# Every warning and error of the formatter, on the default device and on the
# terminal's: nothing at all for a good page.
groff_check() {
	{ groff -man -t -ww -z "$1"; groff -man -t -ww -z -Tutf8 "$1"; } 2>&1
}
# The page as man shows it, 80 columns, and as one line (white space squeezed).
render() {
	MANWIDTH=80 man -l "$1" 2>"$T/man.err"
}
flat() {
	tr -s ' \n' '  ' <"$1"
}

for p in $pages; do
	f=$M/$p
	name=${p%.*}
	[ -f "$f" ]
	ok $? "$p is made"
	out=$(groff_check "$f")
	is "$out" "" "$p: groff -man -t -ww -z says nothing"
	render "$f" >"$T/$p.txt"
	[ $? = 0 ] && [ ! -s "$T/man.err" ] && [ -s "$T/$p.txt" ]
	ok $? "$p: man -l renders it, nothing on stderr $(head -c 200 "$T/man.err")"
	# The first heading (a line at column 0 after the header line) and its line.
	first=$(sed -n '2,$p' "$T/$p.txt" | grep -m1 '^[^ ]')
	is "$first" "NAME" "$p: its first section is NAME"
	like "$(grep -A1 -m1 '^NAME$' "$T/$p.txt" | tail -1)" "^ +$name +- [a-z]" \
	    "$p: NAME says '$name - ...'"
	like "$(lexgrog "$f")" ": \"$name - [a-z]" "$p: lexgrog reads its NAME line"
	is "$(grep -m1 '^\.SH' "$f")" ".SH NAME" "$p: the first .SH of its source is NAME"
	flat "$T/$p.txt" >"$T/$p.flat"
done

# airlock.json.5: every key of the shipped configuration.
keys=$(perl -MJSON::PP -e '
	local $/; my $c = JSON::PP->new->decode(<STDIN>);
	for my $k (sort keys %$c) {
		print "$k\n";
		next unless ref($c->{$k}) eq "HASH";
		print "$k.$_\n" for sort keys %{$c->{$k}};
	}' <"$top/etc/airlock.json")
nk=0
for k in $keys; do
	nk=$((nk + 1))
	grep -qE "(^|[^A-Za-z0-9_.])$(printf '%s' "$k" | sed 's/\./\\./g')([^A-Za-z0-9_]|\$)" \
	    "$T/airlock.json.5.flat"
	ok $? "airlock.json.5 names the key $k"
done
[ "$nk" -ge 15 ]
ok $? "etc/airlock.json has $nk keys (nested ones included)"

# airlock.1: each usage line of `airlock help` and of `airlock help COMMAND` (a line
# that does not start with "airlock" continues the one before it).
usages() {
	sed -e 's/^usage: //' -e 's/^ *//' | awk '
		/^airlock / { if (u != "") print u; u = $0; next }
		{ u = u " " $0 }
		END { if (u != "") print u }'
}
"$AIRLOCK" help >"$T/help"
cmds=$(sed -n '3,$p' "$T/help" | awk '{ print $2 }')
: >"$T/usages"
head -1 "$T/help" | usages >>"$T/usages"
sed -n 2p "$T/help" | usages >>"$T/usages"
for c in $cmds; do
	"$AIRLOCK" help "$c" | usages >>"$T/usages"
done
nu=0
while IFS= read -r u; do
	nu=$((nu + 1))
	grep -qF -- "$u" "$T/airlock.1.flat"
	ok $? "airlock.1 holds '$u'"
done <"$T/usages"
[ "$nu" -ge 25 ]
ok $? "airlock help lists $nu usages ($(echo $cmds))"
for c in $cmds; do
	subs=$(grep "^airlock $c " "$T/usages" | awk '{ print $3 }' | grep '^[a-z][a-z-]*$')
	for s in ${subs:-""}; do
		grep -qx "   $c${s:+ $s}" "$T/airlock.1.txt"
		ok $? "airlock.1 has a section for $c${s:+ $s}"
	done
done

# airlockd.8: every option airlockd --help names, in its OPTIONS section.
"$AIRLOCKD" --help >"$T/dhelp"
opts=$(grep -oE '(^|[][ ,|])--?[a-z][a-z-]*' "$T/dhelp" | sed 's/^[][ ,|]//' | sort -u)
sed -n '/^OPTIONS$/,/^[A-Z]/p' "$T/airlockd.8.txt" | flat /dev/stdin >"$T/dopts"
no=0
for o in $opts; do
	no=$((no + 1))
	grep -qE -- "(^|[^A-Za-z0-9-])$o([^A-Za-z0-9-]|\$)" "$T/dopts"
	ok $? "airlockd.8 OPTIONS names $o"
done
[ "$no" -ge 8 ]
ok $? "airlockd --help lists $no options ($(echo $opts))"

# Positive controls: the check above fails on a broken page.
sed '/^\.SH NAME/i .XY a macro no one defined' "$M/airlockd.8" >"$T/macro.8"
out=$(groff_check "$T/macro.8")
like "$out" "macro 'XY' not defined" "positive control: an undefined macro is reported"
grep -v '^\.TE$' "$M/airlock.json.5" >"$T/nota.5"
out=$(groff_check "$T/nota.5")
like "$out" "premature end of file" "positive control: a table without .TE is reported"

# The converter: a table row with a cell too few is refused, named by its line.
printf '# T\n\n## A\n\n| a | b |\n|---|---|\n| 1 | 2 |\n| 3 |\n' >"$T/bad.md"
perl "$top/docs/md2man.pl" t 7 "a test" <"$T/bad.md" >"$T/bad.7" 2>"$T/bad.err"
[ $? != 0 ] && grep -q "line 8: a table row of 1 cell under a header of 2" "$T/bad.err"
ok $? "md2man refuses a table row that does not match its header ($(cat "$T/bad.err"))"
# ... and roff-looking text stays text: lines starting with . or ', backslashes,
# a table cell holding a pipe.
cat >"$T/odd.md" <<'EOF'
# T

## A

.SH not a heading, \fB not bold, 'quote
and `\e` in code

```
.TH in code
'\" t
a \ backslash
```

| x | y |
|---|---|
| `a \| b` | .so /etc/passwd |
EOF
perl "$top/docs/md2man.pl" t 7 "a test" <"$T/odd.md" >"$T/odd.7"
ok $? "md2man converts roff-looking markdown"
out=$(groff_check "$T/odd.7")
is "$out" "" "... to a page groff says nothing about"
render "$T/odd.7" >"$T/odd.txt"
flat "$T/odd.txt" >"$T/odd.flat"
for s in '.SH not a heading, \fB not bold, '"'"'quote' '\e' '.TH in code' "'\\\" t" \
    'a \ backslash' 'a | b' '.so /etc/passwd'; do
	grep -qF -- "$s" "$T/odd.flat"
	ok $? "... which shows $s as it was written"
done
is "$(sed 1d "$T/odd.txt" | grep '^[A-Z]' | tr '\n' ' ')" "NAME A " \
    "... and the sections NAME and A, no other"

done_testing
