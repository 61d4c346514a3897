#!/bin/bash
# tests/integration/audit_sign.t: signed checkpoints and rotation of the audit log
# (audit.sign_key, audit.sign_every, audit.max_bytes, audit.keep), through
# the real enforcement path (tests/lib/proxynet.sh): a VM's connections make the
# records, airlockd's keys process signs the checkpoints, the root reader rotates
# the files.
#
# Covers: a key that is not root's alone (group bits), or missing, stops the start
# with one line; the log rotated at max_bytes into PATH.1.. (each old file ending
# with a checkpoint, each new one starting with a rotate record), checkpoints every
# 5 records and at shutdown; `verify --pubkey` across the files passes and says
# what is covered, also with the files found from the configuration.  Refused,
# each after its positive control: a wrong public key; a record edited before the
# last checkpoint by someone who recomputes the (unkeyed) chain, which still
# verifies as a chain; a checkpoint deleted the same way; a file of the middle
# missing.  A log cut after a checkpoint: the records after it reported uncovered,
# and refused with --strict.  A restart continues the chain (its start checkpoint
# signs the head on disk) and a worker killed leaves a restart the verifier
# reports; logrotate's way (rename, SIGHUP) continues the chain in a new file.
# keyd gone: checkpoints written unsigned with the reason, said once in airlockd's
# log.  The signing key never appears in the audit log or airlockd's log.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/proxynet.sh
pn_require curl openssl perl

set -e
pn_setup as
pn_vm V 0
pn_hosts "11.0.0.2 origin.test"
origin_cert "$T" origin.test origin.test
origin_start "$I" tls 11.0.0.2 443 origin.test "$T/origin.test.pem" \
    "$T/origin.test.key"
cat >"$T/policy.json" <<'EOF'
{ "policy": "sign-test",
  "rules": [ { "id": "origin", "host": "origin.test", "ports": [443] } ] }
EOF
set +e
AL() { "$AIRLOCK" --config "$T/airlock.json" "$@"; }
L=$T/audit.jsonl
audit_cfg() {
	PN_AUDIT='{ "path": "'"$L"'", "fsync": "never", "sign_key": "'"$1"'",
	  "sign_every": 5, "max_bytes": 5120, "keep": 5 }'
}
# vreq N: N connections from the VM (each a connect record).
vreq() {
	local i
	for i in $(seq "$1"); do
		ip netns exec "$V" curl -sS -o /dev/null --max-time 8 \
		    --cacert "$T/ca.pem" https://origin.test/ 2>/dev/null
	done
}
# files: the log's files, oldest first.
files() {
	local k out=""
	for k in 9 8 7 6 5 4 3 2 1; do
		[ -e "$L.$k" ] && out="$out $L.$k"
	done
	echo "$out $L"
}
verify() { "$AIRLOCK" audit verify "$@" >"$T/vout" 2>&1; }
stop_daemon() { kill "$DPID" 2>/dev/null; wait "$DPID" 2>/dev/null; DPID=""; }
# rechain FILE: the file's chain recomputed from its first line on (SHA-256, as
# anyone can without audit.key_file), the writer's own fields following it.
rechain() {
	perl -MDigest::SHA=sha256_hex -ne '
	    chomp;
	    if (!defined $prev) {
		($seq) = /"seq":(\d+)/; ($prev) = /"prev":"([0-9a-f]{64})"/; $seq--;
	    }
	    $seq++;
	    s/"seq":\d+/"seq":$seq/;
	    s/"prev":"[0-9a-f]{64}"/"prev":"$prev"/;
	    if (/"event":"(checkpoint|rotate)"/) {
		$l = $seq - 1;
		s/"last_seq":\d+/"last_seq":$l/;
		s/"head":"[0-9a-f]{64}"/"head":"$prev"/;
	    }
	    s/,"hash":"[0-9a-f]{64}"\}$//;
	    $prev = sha256_hex($_ . "}");
	    print $_, ",\"hash\":\"$prev\"}\n";' "$1"
}

"$AIRLOCK" audit keygen "$T/sign.key" >"$T/keygen.out" 2>&1
ok $? "airlock audit keygen: $(tail -1 "$T/keygen.out")"
is "$(stat -c %a "$T/sign.key")" 600 "... the key is 0600"
"$AIRLOCK" audit keygen "$T/other.key" >/dev/null 2>&1
! "$AIRLOCK" audit keygen "$T/sign.key" >"$T/kg2" 2>&1 &&
    grep -q "exists: not overwriting it" "$T/kg2"
ok $? "keygen refuses to overwrite a key"

# A key others may read, or none: the start is refused, in one line.
cp "$T/sign.key" "$T/loose.key"
chmod 640 "$T/loose.key"
audit_cfg "$T/loose.key"
pn_start
rc=$?
[ "$rc" != 0 ] && grep -q "loose.key: signing key has group or other permissions" \
    "$T/airlockd.log"
ok $? "a signing key with group permissions: airlockd does not start"
stop_daemon
audit_cfg "$T/none.key"
pn_start
rc=$?
[ "$rc" != 0 ] && grep -q "none.key: No such file" "$T/airlockd.log"
ok $? "a missing signing key: airlockd does not start"
stop_daemon
rm -f "$L"*

audit_cfg "$T/sign.key"
pn_start_or_skip
ok 0 "airlockd starts with audit.sign_key (the positive control)"
pn_attach s1 0 "$T/policy.json"
ok $? "net attach s1"
vreq 40
stop_daemon
ls "$L".* >/dev/null 2>&1
ok $? "the log was rotated at max_bytes: $(cd "$T" && echo audit.jsonl*)"
[ -e "$L.3" ] && [ ! -e "$L.6" ]
ok $? "... into several files, audit.keep (5) at most"
bad=0
for f in $(files); do
	[ "$f" = "$L" ] || tail -n 1 "$f" | grep -q '"event":"checkpoint","at":"max_bytes"' ||
	    bad=1
	[ "$f" = "$(files | awk '{print $1}')" ] ||
	    head -n 1 "$f" | grep -q '"event":"rotate","source":"max_bytes"' || bad=1
done
[ "$bad" = 0 ]
ok $? "each old file ends with a checkpoint, each new one starts with a rotate record"
tail -n 1 "$L" | grep -q '"event":"checkpoint","at":"shutdown"'
ok $? "the log ends with the shutdown checkpoint"
[ "$(cat $(files) | grep -c '"at":"count"')" -ge 5 ]
ok $? "checkpoints every 5 records ($(cat $(files) | grep -c '"at":"count"'))"
! cat $(files) | grep -q '"unsigned"'
ok $? "... every one signed"

verify --pubkey "$T/sign.key.pub" $(files)
ok $? "verify --pubkey across the files passes"
grep -q "^signatures: records 1\.\.[0-9]* signed" "$T/vout" &&
    grep -q "the log ends with a signed checkpoint" "$T/vout"
ok $? "... and says which span is covered: $(grep '^signatures: records' "$T/vout" | cut -c1-90)"
AL audit verify --pubkey "$T/sign.key.pub" >"$T/vout2" 2>&1
ok $? "verify --pubkey without FILE finds the rotated files itself"
is "$(grep '^signatures: records' "$T/vout2")" "$(grep '^signatures: records' "$T/vout")" \
    "... and covers the same span"

verify --pubkey "$T/other.key.pub" $(files)
[ $? = 1 ] && grep -q "signed with another key" "$T/vout"
ok $? "a wrong public key is refused"

# A file of the middle dropped.
set -- $(files)
verify --pubkey "$T/sign.key.pub" "$1" "$3" "$4"
[ $? = 1 ] && grep -q "a file of the chain is missing before this one" "$T/vout"
ok $? "a missing middle file is reported as a gap ($(grep -o 'seq gap[^(]*' "$T/vout"))"

# Someone who can recompute the chain edits a record before the last checkpoint.
# The files joined are one chain (rotate records inside are only records).
mkdir -p "$T/tamper"
cat $(files) >"$T/tamper/all"
verify --pubkey "$T/sign.key.pub" "$T/tamper/all"
ok $? "control: the files joined verify, signatures too"
rechain "$T/tamper/all" >"$T/tamper/same"
cmp -s "$T/tamper/same" "$T/tamper/all"
ok $? "control: the rechain script reproduces the log byte for byte"
line=$(grep -n '"event":"connect"' "$T/tamper/all" | sed -n 3p | cut -d: -f1)
sed "${line}s/\"dst\":\"origin.test:443\"/\"dst\":\"elsewhere.test:443\"/" \
    "$T/tamper/all" | rechain /dev/stdin >"$T/tamper/edit"
verify "$T/tamper/edit"
ok $? "a record edited (line $line), the chain recomputed: still a valid chain"
verify --pubkey "$T/sign.key.pub" "$T/tamper/edit"
[ $? = 1 ] && grep -q "bad signature" "$T/vout"
ok $? "... but not its signatures: $(grep -v ': ok,' "$T/vout" | head -1 | cut -c1-110)"

# A checkpoint deleted the same way.
cl=$(grep -n '"event":"checkpoint"' "$T/tamper/all" | sed -n 2p | cut -d: -f1)
sed "${cl}d" "$T/tamper/all" | rechain /dev/stdin >"$T/tamper/del"
verify "$T/tamper/del"
ok $? "a checkpoint deleted (line $cl), the chain recomputed: a valid chain"
verify --pubkey "$T/sign.key.pub" "$T/tamper/del"
[ $? = 1 ] && grep -q "bad signature" "$T/vout"
ok $? "... refused by its signatures: $(grep -v ': ok,' "$T/vout" | head -1 | cut -c1-110)"

# Cut two records after a checkpoint.
cl=$(grep -n '"event":"checkpoint"' "$T/tamper/all" | sed -n 3p | cut -d: -f1)
head -n $((cl + 2)) "$T/tamper/all" >"$T/tamper/cut"
verify --pubkey "$T/sign.key.pub" "$T/tamper/cut"
ok $? "a log cut after a checkpoint verifies (what is there is signed)"
grep -q "2 record(s) after the last signed checkpoint .* are not covered" "$T/vout" &&
    grep -q "does not end with a checkpoint" "$T/vout"
ok $? "... and says the records after it are not covered"
verify --strict --pubkey "$T/sign.key.pub" "$T/tamper/cut"
[ $? = 1 ]
ok $? "... which --strict refuses"
verify --strict --pubkey "$T/sign.key.pub" $(files)
ok $? "control: --strict passes the whole log"

# A restart: the chain goes on, its start checkpoint signs the head on disk.
last=$(tail -n 1 "$L" | sed -n 's/.*"seq":\([0-9]*\),.*/\1/p')
pn_start_or_skip
vreq 3
cat $(files) | grep -q "\"seq\":$((last + 1)),\"event\":\"checkpoint\",\"at\":\"start\""
ok $? "after a restart the first record is a start checkpoint (seq $((last + 1)))"
# logrotate's way: rename, then SIGHUP.
for k in 4 3 2 1; do
	[ -e "$L.$k" ] && mv "$L.$k" "$L.$((k + 1))"
done
mv "$L" "$L.1"
kill -HUP "$DPID"
for _i in $(seq 30); do
	[ -s "$L" ] && break
	sleep 0.1
done
head -n 1 "$L" | grep -q '"event":"rotate","source":"sighup"' &&
    tail -n 1 "$L.1" | grep -q '"event":"checkpoint","at":"sighup"'
ok $? "SIGHUP after a rename: the old file ends with a checkpoint, the new starts with a rotate record"
vreq 3
# The worker killed after a record that is not a checkpoint: no final checkpoint,
# and the next worker's start says so.
for _i in 1 2 3 4 5; do
	sleep 0.3
	tail -n 1 "$L" | grep -q '"event":"checkpoint"' || break
	vreq 1
done
W=$(al_worker)
kill -KILL "$W"
for _i in $(seq 100); do
	NW=$(al_worker)
	[ -n "$NW" ] && [ "$NW" != "$W" ] && break
	sleep 0.1
done
vreq 2
verify --pubkey "$T/sign.key.pub" $(files)
ok $? "the chain verifies across the restart, the rename and the kill"
grep -q "restarted after seq [0-9]* without its final checkpoint" "$T/vout"
ok $? "... and the verifier reports the restart without a final checkpoint"
[ "$(grep -c 'restarted after seq [0-9]* without its final checkpoint' "$T/vout")" = 1 ]
ok $? "... once (the clean restart before it is not reported)"

# keyd gone (the reader stopped, so that nothing restarts yet): unsigned.  Without
# rotation, which would wait for the stopped reader.
stop_daemon
PN_AUDIT='{ "path": "'"$L"'", "fsync": "never", "sign_key": "'"$T/sign.key"'",
  "sign_every": 5 }'
pn_start_or_skip
NW=$(al_worker)
READER="" KEYD=""
for c in $(pgrep -P "$(al_worker)"); do
	k=$(pgrep -P "$c" | head -1)
	[ -n "$k" ] && { READER=$c; KEYD=$k; }
done
[ -n "$KEYD" ]
ok $? "keyd found ($KEYD, child of the reader $READER)"
kill -STOP "$READER"
kill -KILL "$KEYD"
vreq 12
sleep 1.5
n_uns=$(grep -c '"unsigned":"keys process: ' "$L")
[ "$n_uns" -ge 2 ]
ok $? "keyd gone: checkpoints are written unsigned with the reason ($n_uns)"
grep '"unsigned"' "$L" | head -1 | grep -q '"unsigned":"keys process: it is gone"'
ok $? "... naming it: $(grep -o '"unsigned":"[^"]*"' "$L" | head -1)"
is "$(grep -c 'written unsigned' "$T/airlockd.log")" 1 "... and airlockd's log says so once"
kill -CONT "$READER"
for _i in $(seq 100); do
	NW2=$(al_worker)
	[ -n "$NW2" ] && [ "$NW2" != "$NW" ] && break
	sleep 0.1
done
vreq 6
sleep 1.5
tail -n 20 "$L" | grep '"event":"checkpoint"' | tail -1 | grep -q '"sig":"'
ok $? "with a new keyd, checkpoints are signed again"
verify --pubkey "$T/sign.key.pub" $(files)
ok $? "the chain verifies with the unsigned checkpoints in it"
grep -q "note: checkpoint at seq [0-9]* (count) is not signed: keys process" "$T/vout"
ok $? "... which the verifier names"

key_line=$(sed -n 2p "$T/sign.key")
! grep -qF -- "$key_line" $(files) "$T/airlockd.log"
ok $? "the signing key is in neither the audit log nor airlockd's log"
pn_stop_checked
pn_done
