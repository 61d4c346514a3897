#!/bin/bash
# tests/integration/inspect_reload.t: a refused reload leaves inspection exactly as
# it was, the sandbox's CA and key material included (issue 11), through the real
# enforcement path (tests/lib/proxynet.sh).
#
# Before the fix, the key image was rebuilt from the policy files on every reload and
# installed whatever became of the policies: a policy file that failed to load gave
# its sandbox no CA in the new image, so the old policy (correctly kept) met a VM
# handshake that failed with inspect_unavailable on every inspected host until a good
# reload.  Covers: injection works; a reload with a broken policy file is refused
# and the injected request still succeeds (the origin sees the value); the same with
# the vault changed in that refused reload (the kept policy keeps its CA, but the
# vault is the current one: a rotation or a removal is never held back by a policy
# typo); a policy that loads but is refused for its vault binding, adding an
# inspected name, neither takes the CA away nor rotates the CA on disk; a good
# reload afterwards goes in, with the new value and the same CA.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/proxynet.sh
pn_require curl

CANARY='rElOaD-5e3cr3t-Val-0a1b2c3d4e5f6'
NEW='rElOaD-r0tated-Val-99887766554433'
PH='AIRLOCK_PH_RELOAD_0123456789abcdef'

set -e
pn_setup irl
pn_vm V 0
inV() { ip netns exec "$V" "$@"; }
ip netns exec "$I" ip addr add 11.0.0.3/24 dev eth0
pn_hosts "11.0.0.2 api.test" "11.0.0.3 other.test"
origin_cert "$T" api.test api.test
origin_cert "$T" other.test other.test
cat >"$T/airlock.json" <<EOF
{ "state_dir": "$T/state" }
EOF
: >"$T/rec-api.test"
: >"$T/rec-other.test"
ORIGIN_RECORD="$T/rec-api.test" origin_start "$I" tls 11.0.0.2 443 api.test \
    "$T/api.test.pem" "$T/api.test.key"
ORIGIN_RECORD="$T/rec-other.test" origin_start "$I" tls 11.0.0.3 443 other.test \
    "$T/other.test.pem" "$T/other.test.key"
printf '%s' "$CANARY" | "$AIRLOCK" --config "$T/airlock.json" vault put canary \
    --host api.test --placeholder "$PH" >/dev/null
good_policy() {		# NAME
	cat >"$T/policy.json" <<EOF
{ "policy": "$1",
  "rules": [
    { "id": "api", "host": "api.test",
      "inject": [ { "secret": "canary", "header": "Authorization",
                    "value": "Bearer {secret}" } ] },
    { "id": "other", "host": "other.test", "tls": "inspect" } ] }
EOF
}
good_policy reload-a
set +e
if ! pn_start "\"upstream_ca_file\": \"$T/ca.pem\""; then
	echo "1..0 # SKIP airlockd did not start: $(head -c 300 "$T/airlockd.log")"
	exit 0
fi
pn_attach rl 0 "$T/policy.json"
ok $? "net attach rl (an injecting policy)"
AL() { "$AIRLOCK" --config "$T/airlock.json" "$@"; }
AL ca cert rl >"$T/rl-ca.pem" 2>/dev/null
vcurl() { inV curl -sS --max-time 8 --cacert "$T/rl-ca.pem" "$@"; }
hash_of() { AL stats --json | grep -o '"policy_hash":"[0-9a-f]*"' | head -1; }
# injected N VALUE: the origin holds N requests carrying VALUE
injected() { [ "$(grep -c "^Authorization: Bearer $2"$'\r'"\$" "$T/rec-api.test")" = "$1" ]; }

out=$(vcurl https://api.test/)
[ "$out" = "origin api.test" ] && injected 1 "$CANARY"
ok $? "injected request: the origin saw the value ('$out')"
h0=$(hash_of)

# --- a broken policy file ---------------------------------------------------------
printf '{ "policy": "reload-a", "rules": [ { "id": "api", "host": ' >"$T/policy.json"
AL reload >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" = 1 ] && grep -q "FAILED, keeping policy reload-a" "$T/out"
ok $? "reload with a broken policy file: refused, the old policy stays (rc $rc)"
[ "$(hash_of)" = "$h0" ]
ok $? "... stats: the same policy hash"
out=$(vcurl https://api.test/)
[ "$out" = "origin api.test" ] && injected 2 "$CANARY"
ok $? "after the refused reload, an injected request succeeds ('$out')"
out=$(vcurl https://other.test/)
[ "$out" = "origin other.test" ]
ok $? "... and the other inspected host too ('$out')"
! grep -q '"sandbox":"rl".*"reason":"inspect_unavailable"' "$T/audit.jsonl"
ok $? "... no inspect_unavailable in the audit log"

# --- the vault changed in the same refused reload -----------------------------------
printf '%s' "$NEW" | AL vault put canary --host api.test >/dev/null
AL reload >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" = 1 ]
ok $? "vault rotated + broken policy: reload refused (rc $rc)"
out=$(vcurl https://api.test/)
[ "$out" = "origin api.test" ] && injected 2 "$CANARY" && injected 1 "$NEW"
ok $? "... the kept policy, under its CA, injects the vault's current value ('$out')"

# --- a policy that loads but is refused: a new inspected name, an unbound secret -----
# The file itself: `airlock ca cert` would sync it to the file's names on its own.
cp "$T/state/ca/rl.pem" "$T/rl-ca-before.pem"
cat >"$T/policy.json" <<'EOF'
{ "policy": "reload-bad-binding",
  "rules": [
    { "id": "api", "host": "api.test",
      "inject": [ { "secret": "canary", "header": "Authorization",
                    "value": "Bearer {secret}" } ] },
    { "id": "other", "host": "other.test",
      "inject": [ { "secret": "canary", "header": "Authorization" } ] },
    { "id": "new", "host": "new.test", "tls": "inspect" } ] }
EOF
AL reload >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" = 1 ] && grep -q "not bind" "$T/err"
ok $? "reload with an unbound injection: refused (rc $rc)"
cmp -s "$T/rl-ca-before.pem" "$T/state/ca/rl.pem"
ok $? "... the sandbox CA on disk was not reissued for the refused names"
out=$(vcurl https://api.test/)
[ "$out" = "origin api.test" ] && injected 2 "$CANARY" && injected 2 "$NEW"
ok $? "... and an injected request still succeeds ('$out')"

# --- a good reload afterwards ------------------------------------------------------
good_policy reload-b
AL reload >"$T/out" 2>"$T/err"
ok $? "a good reload afterwards: accepted"
[ "$(hash_of)" != "$h0" ]
ok $? "... the new policy is in force"
out=$(vcurl https://api.test/)
[ "$out" = "origin api.test" ] && injected 3 "$NEW"
ok $? "... and injects the rotated value ('$out')"
cmp -s "$T/rl-ca-before.pem" "$T/state/ca/rl.pem"
ok $? "... under the same sandbox CA (the inspected names did not change)"

pn_stop_checked
pn_done
