#!/bin/bash
# tests/integration/inspect_start.t: airlockd's start-up with the vault and the
# interception CAs (tests/lib/daemon.sh: one daemon in its own network namespace).
# No vault: starts, and a policy that injects loads as nothing (deny-all, with the
# reason in stats); a usable vault: the same policy loads and the sandbox CA is made
# (ca/SANDBOX.pem, key 0600); a vault with loose key permissions, a tampered
# vault.db, a wrong key: airlockd exits non-zero with one line naming the vault; a
# policy whose inject the vault does not bind: kept out on reload (the previous
# policy stays).
. "$(dirname "$0")/../lib/daemon.sh"

if [ "$IS_ROOT" != 1 ]; then
	echo "1..0 # SKIP needs root (privilege drop, 0600 key files)"
	exit 0
fi
if ! getent passwd airlock >/dev/null; then
	echo "1..0 # SKIP no user airlock"
	exit 0
fi
dt_config
VAL='start-test-SECRET-value-7788'
cat >"$T/inject.json" <<'EOF'
{ "policy": "injects", "rules": [
  { "id": "api", "host": "api.test",
    "inject": [ { "secret": "tok", "header": "Authorization", "value": "Bearer {secret}" } ] } ] }
EOF
cat >"$T/steal.json" <<'EOF'
{ "policy": "steals", "rules": [
  { "id": "api", "host": "evil.test",
    "inject": [ { "secret": "tok", "header": "Authorization" } ] } ] }
EOF
dt_record s1 10.233.0.2 "$T/inject.json"
stats() { "$AIRLOCK" --config "$CFG" --json stats 2>/dev/null; }

dt_start
ok $? "no vault: airlockd starts"
out=$(stats)
like "$out" '"policy":"none".*"policy_error":"[^"]*no usable vault' \
    "a policy that injects, without a vault: not loaded (deny-all), reason in stats"
dt_stop

printf '%s' "$VAL" | "$AIRLOCK" --config "$CFG" vault put tok --host api.test \
    >/dev/null 2>&1
ok $? "vault put tok --host api.test"
dt_start
ok $? "with the vault: airlockd starts"
out=$(stats)
like "$out" '"policy":"injects"' "the injecting policy loads"
[ -f "$T/state/ca/s1.pem" ] && [ "$(stat -c %a "$T/state/ca/s1.key")" = 600 ]
ok $? "the sandbox CA was made at start (key 0600)"

cp "$T/inject.json" "$T/good.json"
cp "$T/steal.json" "$T/inject.json"
kill -HUP "$DPID"
sleep 0.5
out=$(stats)
like "$out" '"policy":"injects".*"policy_error":"[^"]*does not bind' \
    "reload with an inject the vault does not bind: previous policy stays"
cp "$T/good.json" "$T/inject.json"
dt_stop
! grep -q -- "$VAL" "$T/daemon.log" "$T/audit.jsonl"
ok $? "the value is in neither the daemon's log nor the audit log"

chmod 644 "$T/state/vault.key"
dt_run --config "$CFG" --foreground
[ "$rc" != 0 ] && [ "$(wc -l <"$T/err")" -le 2 ]
ok $? "vault.key mode 0644: refuses to start (rc $rc)"
like "$(cat "$T/err")" "vault.*0644" "... with one line naming the key file's mode"
chmod 600 "$T/state/vault.key"

cp "$T/state/vault.db" "$T/vault.db.good"
perl -e 'open(F, "+<", $ARGV[0]) or die; seek(F, -40, 2); read(F, $b, 1);
    seek(F, -40, 2); print F chr(ord($b) ^ 1); close F' "$T/state/vault.db"
dt_run --config "$CFG" --foreground
[ "$rc" != 0 ]
ok $? "tampered vault.db: refuses to start (rc $rc)"
like "$(cat "$T/err")" "vault" "... saying the vault is the problem"
cp "$T/vault.db.good" "$T/state/vault.db"

cp "$T/state/vault.key" "$T/vault.key.good"
head -c 32 /dev/urandom >"$T/state/vault.key"
dt_run --config "$CFG" --foreground
[ "$rc" != 0 ]
ok $? "wrong vault key: refuses to start (rc $rc)"
like "$(cat "$T/err")" "vault" "... saying the vault is the problem"
cp "$T/vault.key.good" "$T/state/vault.key"
! grep -rq -- "$VAL" "$T/err" "$T/out"
ok $? "no error message carries the value"
done_testing
