#!/bin/bash
# tests/integration/daemon_audit.t: airlockd's audit log as an operator handles it.
# audit.key_file: the chain is HMAC-keyed (verifies with the key, not without it);
# a missing key file stops the start with one line.  `airlock stats` shows the
# chain's head (seq, hash) and `airlock audit verify --head --expect-seq` anchors the
# log with it.  Rotation: the log renamed away, SIGHUP continues the chain in a new
# file at the same path (verified across both files), as the unprivileged user.
set -u
. "$(dirname "$0")/../lib/daemon.sh"

if [ "$IS_ROOT" = 1 ] && ! getent passwd airlock >/dev/null; then
	echo "1..0 # SKIP no user airlock (make deps creates it)"
	exit 0
fi
# The log in a directory the daemon's user may write (it reopens after the drop).
mkdir -p "$T/log"
[ "$IS_ROOT" = 1 ] && chown airlock "$T/log"
head -c 32 /dev/urandom >"$T/audit.key"
chmod 600 "$T/audit.key"
dt_config
dt_policy "$T/p1.json" p1 example.com
dt_record sb1 10.233.0.2 "$T/p1.json"
# audit_cfg KEYFILE-JSON: the config with the log in $T/log and the given key_file.
audit_cfg() {
	perl -0pi -e 's#"audit": \{[^}]*\}#"audit": { "path": "'"$T"'/log/audit.jsonl", "fsync": "never", "key_file": '"$1"' }#' "$CFG"
}
L=$T/log/audit.jsonl
last_hash() { tail -n 1 "$1" | sed -n 's/.*"hash":"\([0-9a-f]*\)".*/\1/p'; }
last_seq() { tail -n 1 "$1" | sed -n 's/.*"seq":\([0-9]*\),.*/\1/p'; }
verify() { "$AIRLOCK" audit verify "$@" >"$T/vout" 2>&1; }

# A key file that is not there: one line, non-zero exit.
audit_cfg "\"$T/nokey\""
dt_run --config "$CFG" --foreground
[ "$rc" != 0 ]
ok $? "missing audit.key_file: airlockd exits non-zero ($rc)"
is "$(wc -l <"$T/err")" 1 "... with one line"
like "$(cat "$T/err")" "$T/nokey" "... naming the key file"

audit_cfg "\"$T/audit.key\""
if ! dt_start; then
	ok 1 "airlockd starts with audit.key_file"
	done_testing
fi
ok 0 "airlockd starts with audit.key_file"
"$AIRLOCK" --config "$CFG" reload >/dev/null
verify --key-file "$T/audit.key" "$L"
ok $? "keyed chain verifies with the key"
verify "$L"
[ $? -ne 0 ]
ok $? "... and not without it"

# stats: the head is the log's last record.
out=$("$AIRLOCK" --config "$CFG" stats)
seq=$(last_seq "$L") h=$(last_hash "$L")
like "$out" "^audit head: seq $seq hash $h\$" "stats: audit head (seq $seq) is the last record"
js=$("$AIRLOCK" --config "$CFG" stats --json)
like "$js" "\"audit\":\\{\"seq\":$seq,\"head\":\"$h\"\\}" "stats --json: audit seq and head"
verify --key-file "$T/audit.key" --head "$h" --expect-seq "$seq" "$L"
ok $? "audit verify --head/--expect-seq anchors the log at the stats head"
# A log cut short no longer reaches the anchor.
head -n -1 "$L" >"$T/cut.jsonl"
verify --key-file "$T/audit.key" --head "$h" --expect-seq "$seq" "$T/cut.jsonl"
[ $? -ne 0 ]
ok $? "... and a log with its last record cut off fails against it"

# Rotation: rename, SIGHUP, the chain goes on in a new file.
mv "$L" "$L.1"
kill -HUP "$DPID"
for _i in $(seq 30); do
	[ -s "$L" ] && break
	sleep 0.1
done
[ -s "$L" ]
ok $? "SIGHUP after a rename: a new log at the same path"
first=$(head -n 1 "$L" | sed -n 's/.*"seq":\([0-9]*\),.*/\1/p')
is "$first" "$((seq + 1))" "... whose first record continues the sequence"
verify --key-file "$T/audit.key" "$L.1" "$L"
ok $? "... and the chain verifies across both files"
[ "$IS_ROOT" = 1 ] && like "$(stat -c %U "$L")" '^airlock$' \
    "... written by the unprivileged user"
out=$("$AIRLOCK" --config "$CFG" stats)
like "$out" "^audit head: seq $(last_seq "$L") hash $(last_hash "$L")\$" \
    "stats: the head follows into the new file"
# SIGHUP without a rotation keeps writing the same file.
n1=$(wc -l <"$L")
kill -HUP "$DPID"
sleep 0.5
[ "$(wc -l <"$L")" -gt "$n1" ] && [ ! -e "$L.2" ]
ok $? "SIGHUP without a rotation: the same file grows"
kill -0 "$DPID"
ok $? "airlockd still running"
done_testing
