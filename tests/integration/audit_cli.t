#!/bin/sh
# tests/integration/audit_cli.t: `airlock audit verify|query|summary` on logs written
# by the real writer (tests/tools/audit_gen) and then tampered with.  No privileges.
#
# Run from the top of the tree (make check does); AIRLOCK is the binary,
# AIRLOCK_BUILD the build directory holding tests/tools/audit_gen.

. "$(dirname "$0")/../lib/cli.sh"
GEN=${AIRLOCK_BUILD:-$top/build}/tests/tools/audit_gen

if [ ! -x "$AIRLOCK" ] || [ ! -x "$GEN" ]; then
	echo "1..0 # SKIP no airlock or audit_gen binary ($AIRLOCK, $GEN)"
	exit 0
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# lines out N DESCRIPTION
lines() {
	[ "$(wc -l <"$tmp/$1")" -eq "$2" ]
	ok $? "$3 ($(wc -l <"$tmp/$1") lines, want $2)"
}

# A log of 6 records over two sandboxes.
cat >"$tmp/spec" <<'SPEC'
ts=2026-11-30T12:00:00.123Z sandbox=demo event=request src=10.233.0.2:51234 dst=api.github.com:443 tls=inspect method=GET path=/repos/acme/app status=200 decision=allow rule=github-api inject=github_token bytes_up=512 bytes_down=2048 ms=35
ts=2026-11-30T12:01:00.000Z sandbox=demo event=request dst=api.github.com:443 tls=inspect method=POST path=/repos/acme/app/issues status=201 decision=allow rule=github-api
ts=2026-11-30T12:02:00.000Z sandbox=demo event=deny dst=evil.example:443 decision=deny reason=name_not_allowed
ts=2026-11-30T12:03:00.000Z sandbox=demo event=dns decision=deny reason=name_not_allowed x.qname=evil.example
ts=2026-11-30T13:00:00.000Z sandbox=other event=connect dst=files.pythonhosted.org:443 tls=splice decision=allow rule=pypi-files
ts=2026-12-01T09:00:00.000Z sandbox=other event=request dst=api.github.com:443 method=DELETE path=/x%0a%22forged%22 decision=deny rule=github-api reason=method_not_allowed status=403
SPEC
log=$tmp/audit.jsonl
"$GEN" "$log" <"$tmp/spec" >"$tmp/gen" || { echo "Bail out! audit_gen failed"; exit 1; }
head=$(sed -n 's/^seq 6 head //p' "$tmp/gen")

# verify: a good log.
run audit verify "$log"
expect_rc 0 "verify: an untouched log"
has out "$log: ok, 6 records, seq 1..6, head $head" "verify: records, seq range, head"
run audit verify --head "$head" --expect-seq 6 "$log"
expect_rc 0 "verify --head/--expect-seq with the real head"
has out "found at seq 6 (0 records after it)" "verify names where the anchor is"
has out "$log: chain intact, 6 records" "... after a per-file line that waits for it"
! grep -q ": ok," "$tmp/out"
ok $? "... and no file is called ok before the anchor was checked"
: >"$tmp/empty"
run audit verify "$tmp/empty"
expect_rc 1 "verify: an empty log is not verified"
has out "not verified: no record in the file" "... and says so"
run audit verify "$log" "$tmp/empty"
expect_rc 0 "verify: an empty file after a good one (a fresh rotation) is fine"

# verify: one byte changed (the status of record 2).
sed '2s/"status":201/"status":200/' "$log" >"$tmp/t1"
run audit verify "$tmp/t1"
expect_rc 1 "verify: one byte changed"
has out "$tmp/t1:2: hash mismatch" "verify names FILE:LINE and the reason"

# Records deleted: middle, first, last.
sed 3d "$log" >"$tmp/t2"
run audit verify "$tmp/t2"
expect_rc 1 "verify: a middle record deleted"
has out "$tmp/t2:3: seq gap" "... a seq gap at line 3"
sed 1d "$log" >"$tmp/t3"
run audit verify "$tmp/t3"
expect_rc 0 "verify: the first record deleted reads as a continued chain"
has out "chain continues from an earlier file (prev " "... and says so"
run audit verify --strict "$tmp/t3"
expect_rc 1 "verify --strict: the chain's start is missing"
sed '$d' "$log" >"$tmp/t4"
run audit verify "$tmp/t4"
expect_rc 0 "verify: the last record deleted is invisible without an anchor"
run audit verify --head "$head" "$tmp/t4"
expect_rc 1 "verify --head: the last record deleted is caught"
has out "head $head not found" "... the head is not found"
run audit verify --expect-seq 6 "$tmp/t4"
expect_rc 1 "verify --expect-seq 6: the last record deleted is caught"
! grep -q ": ok," "$tmp/out"
ok $? "... without calling the file ok first"

# Swapped, copied, hand-edited.
{ sed -n 1p "$log"; sed -n 3p "$log"; sed -n 2p "$log"; sed -n '4,$p' "$log"; } \
    >"$tmp/t5"
run audit verify "$tmp/t5"
expect_rc 1 "verify: two records swapped"
{ cat "$log"; sed -n 2p "$log"; } >"$tmp/t6"
run audit verify "$tmp/t6"
expect_rc 1 "verify: a copy of a line appended"
has out "$tmp/t6:7: seq 2 after seq 6" "... the repeat is named"
{ cat "$log"; sed -n '$s/"seq":6/"seq":7/p' "$log"; } >"$tmp/t7"
run audit verify "$tmp/t7"
expect_rc 1 "verify: the last line appended again with seq+1"
has out "$tmp/t7:7: hash mismatch" "... a hash mismatch at line 7"
cat "$log" >"$tmp/t8"
printf '{"ts":"2026-' >>"$tmp/t8"
run audit verify "$tmp/t8"
expect_rc 1 "verify: a torn last line"
has out "$tmp/t8:7: torn last line" "... called torn"
run audit verify "$tmp/missing"
expect_rc 2 "verify: a missing file is a load error"

# Rotation: path.1 then path form one chain.
rot=$tmp/rot.jsonl
sed -n 1,3p "$tmp/spec" | "$GEN" "$rot" >/dev/null
mv "$rot" "$rot.1"
sed -n 4,6p "$tmp/spec" | "$GEN" "$rot" >/dev/null
run audit verify "$rot.1" "$rot"
expect_rc 0 "verify: a rotated chain, oldest first"
has out "$rot: ok, 3 records, seq 4..6" "... the new file continues at seq 4"
run audit verify "$rot" "$rot.1"
expect_rc 1 "verify: rotated files in the wrong order"
run audit verify --strict "$rot"
expect_rc 1 "verify --strict: the newer file alone lacks the chain's start"

# A keyed log (HMAC): verifies only with its key; the key file must be private.
head -c 32 /dev/urandom >"$tmp/key"
chmod 600 "$tmp/key"
sed -n 1,2p "$tmp/spec" | "$GEN" --key-file "$tmp/key" "$tmp/keyed" >/dev/null
run audit verify --key-file "$tmp/key" "$tmp/keyed"
expect_rc 0 "verify --key-file: a keyed log"
run audit verify "$tmp/keyed"
expect_rc 1 "verify: a keyed log without the key fails"
has out "give --key-file" "... with a hint"
chmod 644 "$tmp/key"
run audit verify --key-file "$tmp/key" "$tmp/keyed"
expect_rc 2 "verify: a world-readable key file is refused"
has err "permissions" "... saying why"

# verify: usage errors.
run audit verify --head 1234 "$log"
expect_rc 2 "verify --head with a short hash"
run audit verify --expect-seq x "$log"
expect_rc 2 "verify --expect-seq x"
run audit verify --bogus "$log"
expect_rc 2 "verify: an unknown option"
run audit frobnicate
expect_rc 2 "audit: an unknown subcommand"

# query.
run audit query "$log"
expect_rc 0 "query: everything"
lines out 6 "query: one line per record"
has out "2026-11-30T12:00:00.123Z demo request allow api.github.com:443 github-api GET /repos/acme/app 200" \
    "query: the readable line"
has out "other request deny api.github.com:443 github-api/method_not_allowed DELETE /x\\x0a\"forged\" 403" \
    "query: a newline in a path is shown escaped"
run audit query "$log" --sandbox demo --decision deny
expect_rc 0 "query --sandbox --decision (options after FILE)"
lines out 2 "query: demo's denials"
run audit query --host evil.example "$log"
lines out 2 "query --host: dst and dns qname"
run audit query --host .pythonhosted.org "$log"
lines out 1 "query --host .suffix"
run audit query --host pythonhosted.org "$log"
lines out 0 "query --host is exact without a leading dot"
run audit query --event dns "$log"
lines out 1 "query --event dns"
run audit query --since 2026-11-30T12:01:00Z --until 2026-11-30T12:03:00Z "$log"
lines out 3 "query --since/--until: inclusive"
run audit query --since 2026-12-01 "$log"
lines out 1 "query --since a date"
run audit query --until 2026-11-30 "$log"
lines out 5 "query --until a date: the whole day"
run audit query --json --decision allow "$log"
lines out 3 "query --json: matching records"
run audit query --json --until 2026-11-30T12:01:00Z "$log"
cp "$tmp/out" "$tmp/q2"
run audit verify "$tmp/q2"
has out "$tmp/q2: ok, 2 records, seq 1..2" "query --json prints the raw lines (they still verify)"
run --json audit query --event deny "$log"
has out '"event":"deny"' "--json before the command"
run audit query --decision maybe "$log"
expect_rc 2 "query --decision maybe"
run audit query --event nope "$log"
expect_rc 2 "query --event nope"
run audit query --since yesterday "$log"
expect_rc 2 "query --since yesterday"
run audit query "$log" --sandbox
expect_rc 2 "query: an option without its value"
{ cat "$log"; echo 'not json at all'; } >"$tmp/mixed"
run audit query "$tmp/mixed"
expect_rc 0 "query: a line that is not JSON is skipped"
has err "$tmp/mixed:7: not a JSON record" "... with a warning"

# summary.
run audit summary "$log"
expect_rc 0 "summary"
has out "sandbox demo: 4 records" "summary: per sandbox"
has out "    api.github.com 2 2026-11-30T12:00:00.123Z .. 2026-11-30T12:01:00.000Z" \
    "summary: allowed host, count, first and last seen"
has out "    evil.example 2 " "summary: denied host counts dst and dns"
has out "  name_not_allowed 2" "summary: reasons"
has out "total: 6 records, 2 sandboxes" "summary: totals"
run audit summary --json "$log"
expect_rc 0 "summary --json"
perl -MJSON::PP -e 'local $/; my $j = decode_json(<STDIN>);
    exit !($j->{sandboxes}{other}{denied}{"api.github.com"}{count} == 1 &&
    $j->{reasons}{method_not_allowed} == 1)' <"$tmp/out"
ok $? "summary --json parses, with per-sandbox denied hosts and reasons"
run audit summary "$rot.1" "$rot"
has out "total: 6 records" "summary over rotated files"
run audit summary "$tmp/missing"
expect_rc 2 "summary: a missing file"
run audit summary "$tmp/t1"
expect_rc 1 "summary of a changed log: exit 1"
has err "$tmp/t1:2: hash mismatch" "... warning where the chain breaks"
has out "total: 6 records" "... after the summary itself"

done_testing
