#!/bin/bash
# tests/integration/inspect_revoke.t: key material and redaction on inspected
# connections, through the real enforcement path (tests/lib/proxynet.sh):
#
#  - a vault change reaches an open keep-alive connection at its next request:
#    after `vault rm` + reload the removed value is never sent again on it; after a
#    rotation + reload the next request on it carries the new value;
#  - the value a rotation replaced stays redacted (an origin that was sent it
#    before can still echo it);
#  - every inspected response is scanned while any secret is loaded, not only on
#    rules that inject: another inspected rule and a plain HTTP rule;
#  - what the header redactor does not rewrite: a secret in the reason phrase is
#    dropped, a secret as a field name refuses the response.
# Each case has a positive control, and the VM's view is checked for the values.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/proxynet.sh
pn_require curl openssl

CANARY='rEv0ke-5e3cr3t-Val-0a1b2c3d4e5f'
ROTATED='r0tated-5e3cr3t-Val-99887766ffee'
PH='AIRLOCK_PH_REVOKE_0123456789abcdef'

set -e
pn_setup irv
pn_vm V 0
ip netns exec "$I" ip addr add 11.0.0.3/24 dev eth0
pn_hosts "11.0.0.2 api.test" "11.0.0.3 other.test plain.test"
origin_cert "$T" api.test api.test
origin_cert "$T" other.test other.test
cat >"$T/airlock.json" <<EOF
{ "state_dir": "$T/state" }
EOF
: >"$T/rec-api.test"
ORIGIN_RECORD="$T/rec-api.test" origin_start "$I" tls 11.0.0.2 443 api.test \
    "$T/api.test.pem" "$T/api.test.key"
origin_start "$I" tls 11.0.0.3 443 other.test "$T/other.test.pem" "$T/other.test.key"
origin_start "$I" http 11.0.0.3 80 plain.test
AL() { "$AIRLOCK" --config "$T/airlock.json" "$@"; }
printf '%s' "$CANARY" | AL vault put canary --host api.test --placeholder "$PH" >/dev/null
cat >"$T/policy.json" <<'EOF'
{ "policy": "revoke",
  "rules": [
    { "id": "api", "host": "api.test",
      "inject": [ { "secret": "canary", "header": "Authorization",
                    "value": "Bearer {secret}" } ] },
    { "id": "other", "host": "other.test", "tls": "inspect" },
    { "id": "plain", "host": "plain.test", "ports": [80], "protocol": "http" }
  ] }
EOF
set +e
if ! pn_start "\"upstream_ca_file\": \"$T/ca.pem\""; then
	echo "1..0 # SKIP airlockd did not start: $(head -c 300 "$T/airlockd.log")"
	exit 0
fi
pn_attach t1 0 "$T/policy.json"
ok $? "net attach t1"
AL ca cert t1 >"$T/t1-ca.pem"

inV() { ip netns exec "$V" "$@"; }
: >"$T/vm-received"
vcurl() { inV curl -sS --max-time 8 --cacert "$T/t1-ca.pem" "$@" | tee -a "$T/vm-received"; }
audit_has() { grep -q -- "$1" "$T/audit.jsonl"; }
A=$(inV getent ahostsv4 api.test | awk 'NR == 1 { print $1 }')
count() { grep -c -- "$1" "$T/rec-api.test"; }

# two_requests ACTION: two GET /ka on one TLS connection to api.test (keep-alive),
# ACTION between them; what the VM read is in $T/ka.out.
two_requests() {
	local p
	rm -f "$T/gate"
	: >"$T/ka.out"
	( printf 'GET /ka HTTP/1.1\r\nHost: api.test\r\n\r\n'
	  while [ ! -e "$T/gate" ]; do sleep 0.05; done
	  printf 'GET /ka HTTP/1.1\r\nHost: api.test\r\n\r\n'
	  sleep 2 ) | inV timeout 20 openssl s_client -quiet -no_ign_eof \
	    -connect "$A:443" -servername api.test -CAfile "$T/t1-ca.pem" \
	    >"$T/ka.out" 2>"$T/ka.err" &
	p=$!
	netns_wait_for "$T/ka.out" "origin api.test" 100 || diag "first response: $(cat "$T/ka.err")"
	$1
	touch "$T/gate"
	wait "$p"
	cat "$T/ka.out" >>"$T/vm-received"
}
nothing() { :; }
reload() { AL reload >/dev/null 2>&1; }

# --- the key generation per request -------------------------------------------------
: >"$T/rec-api.test"
two_requests nothing
[ "$(grep -c 'origin api.test' "$T/ka.out")" = 2 ] &&
    [ "$(count "^Authorization: Bearer $CANARY")" = 2 ]
ok $? "control: two requests on one keep-alive connection, both injected"

: >"$T/rec-api.test"
two_requests "eval printf '%s' '$ROTATED' | AL vault put canary --host api.test >/dev/null; reload"
[ "$(count "^Authorization: Bearer $CANARY")" = 1 ] &&
    [ "$(count "^Authorization: Bearer $ROTATED")" = 1 ]
ok $? "rotation + reload: the next request on the open connection carries the new value"

# The replaced value stays redacted: an origin that received it can still echo it.
out=$(vcurl -H "X-Old: $CANARY" https://api.test/echo)
# (curl speaks HTTP/2 to airlock, which sends names as HTTP/2 has them: lower case)
echo "$out" | grep -q "^x-old: $PH" && ! echo "$out" | grep -q -- "$CANARY"
ok $? "the value a rotation replaced is still redacted in echoes"
echo "$out" | grep -q "^Authorization: Bearer $PH" && ! echo "$out" | grep -q -- "$ROTATED"
ok $? "control: the new value is redacted too"

: >"$T/rec-api.test"
two_requests "eval AL vault rm canary >/dev/null; reload"
[ "$(count "^Authorization: Bearer ")" = 1 ] &&
    [ "$(grep -c 'origin api.test' "$T/ka.out")" = 1 ] && grep -q '403' "$T/ka.out"
ok $? "vault rm + reload: the open connection's next request is refused, the value not sent"
audit_has '"dst":"api.test:443".*"reason":"secret_unavailable"'
ok $? "... audited secret_unavailable"
printf "%s" "$ROTATED" | AL vault put canary --host api.test --placeholder "$PH" >/dev/null
reload

# --- redaction on every inspected rule -----------------------------------------------
out=$(vcurl -H "X-Data: $ROTATED" https://other.test/echo)
echo "$out" | grep -q "^x-data: $PH" && ! echo "$out" | grep -q -- "$ROTATED"
ok $? "an inspected rule that injects nothing: the echoed value is redacted"
audit_has '"event":"exfil".*"dst":"other.test:443".*"reason":"secret_redacted".*"secret":"canary"'
ok $? "... with an exfil record naming the secret"
out=$(inV curl -sS --max-time 8 -H "X-Data: $ROTATED" http://plain.test/echo | tee -a "$T/vm-received")
echo "$out" | grep -q "^X-Data: $PH" && ! echo "$out" | grep -q -- "$ROTATED"
ok $? "plain HTTP: the echoed value is redacted"
out=$(vcurl https://other.test/echo)
echo "$out" | grep -q "^Host: other.test"
ok $? "control: an echo without a secret passes unchanged"

# --- reason phrase and field names --------------------------------------------------
# (a reason phrase exists in HTTP/1.1 only: these two ask for HTTP/1.1)
out=$(vcurl --http1.1 -i "https://other.test/reflect/reason/$ROTATED")
echo "$out" | head -1 | grep -q "^HTTP/1.1 200" && ! echo "$out" | grep -q -- "$ROTATED"
ok $? "a secret in the reason phrase: dropped, the response passes"
out=$(vcurl --http1.1 -i "https://other.test/reflect/reason/Fine")
echo "$out" | head -1 | grep -q "^HTTP/1.1 200 Fine"
ok $? "control: an ordinary reason phrase is kept"
code=$(inV curl -sS --max-time 8 --cacert "$T/t1-ca.pem" -o "$T/fo" -w '%{http_code}' \
    "https://other.test/reflect/field/$ROTATED")
cat "$T/fo" >>"$T/vm-received"
[ "$code" = 502 ] && audit_has '"reason":"secret_in_field_name"'
ok $? "a secret as a response field name: refused (502 secret_in_field_name) ($code)"
code=$(inV curl -sS --max-time 8 --cacert "$T/t1-ca.pem" -o /dev/null -w '%{http_code}' \
    "https://other.test/reflect/field/X-Fine")
[ "$code" = 200 ]
ok $? "control: an ordinary field name passes ($code)"

# --- the VM never saw a value ----------------------------------------------------------
! grep -q -e "$CANARY" -e "$ROTATED" "$T/vm-received"
ok $? "no secret value ever reached the VM"

pn_done
