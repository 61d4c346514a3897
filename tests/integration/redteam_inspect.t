#!/bin/bash
# tests/integration/redteam_inspect.t: a hostile VM against inspect mode and the plain
# HTTP engine, through the real enforcement path (tests/lib/proxynet.sh).  Each check
# here was a way round airlock before its fix (see the commit naming the hole):
#
#  - a Range request on a rule that injects (and so redacts) a secret: an echo
#    answered in slices too short to recognise gives the VM the secret piecewise;
#    airlockd now strips Range/If-Range upstream on such rules;
#  - a response with two Content-Encoding fields, "identity" then "gzip": only the
#    first was looked at, so a compressed (unscannable) echo passed;
#  - a placeholder as a header *name* or as the request *method*: only values and
#    the target were scanned, so it went out unblocked and unaudited;
#  - encoded echoes (issue 11): an origin echoing the injected secret hex-encoded
#    gave it to the VM, and a placeholder written with JSON \u escapes in a body
#    went out.
# Since every inspected response is redacted while any secret is loaded, Range is
# stripped on every inspected rule, not only on injecting ones.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/proxynet.sh
pn_require curl

CANARY='rEdTeAm-5e3cr3t-Val-0a1b2c3d4e5f'
PH='AIRLOCK_PH_REDTEAM_0123456789abcdef'
# A placeholder that is also a valid method token (16 upper-case letters: short
# enough for the plain-HTTP peek and the inspect parser alike).
MPH='AIRLOCKPHMETHODQ'

set -e
pn_setup rti
pn_vm V 0
inV() { ip netns exec "$V" "$@"; }
ip netns exec "$I" ip addr add 11.0.0.3/24 dev eth0
pn_hosts "11.0.0.2 api.test" "11.0.0.3 other.test plain.test"
origin_cert "$T" api.test api.test
origin_cert "$T" other.test other.test
cat >"$T/airlock.json" <<EOF
{ "state_dir": "$T/state" }
EOF
: >"$T/rec-api.test"
: >"$T/rec-other.test"
: >"$T/rec-plain.test"
ORIGIN_RECORD="$T/rec-api.test" origin_start "$I" tls 11.0.0.2 443 api.test \
    "$T/api.test.pem" "$T/api.test.key"
ORIGIN_RECORD="$T/rec-other.test" origin_start "$I" tls 11.0.0.3 443 other.test \
    "$T/other.test.pem" "$T/other.test.key"
ORIGIN_RECORD="$T/rec-plain.test" origin_start "$I" http 11.0.0.3 80 plain.test
printf '%s' "$CANARY" | "$AIRLOCK" --config "$T/airlock.json" vault put canary \
    --host api.test --placeholder "$PH" >/dev/null
printf '%s' "m-$CANARY" | "$AIRLOCK" --config "$T/airlock.json" vault put mcanary \
    --host api.test --placeholder "$MPH" >/dev/null
cat >"$T/policy.json" <<'EOF'
{ "policy": "redteam",
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
pn_attach rt 0 "$T/policy.json"
ok $? "net attach rt"
"$AIRLOCK" --config "$T/airlock.json" ca cert rt >"$T/rt-ca.pem" 2>/dev/null
vcurl() { inV curl -sS --max-time 8 --cacert "$T/rt-ca.pem" "$@"; }
audit_has() { grep -q -- "$1" "$T/audit.jsonl"; }

# --- Range on a redacting rule ---------------------------------------------------
out=$(vcurl -H "Range: bytes=0-3" -H "If-Range: \"x\"" https://api.test/echo)
echo "$out" | grep -q "^Authorization: Bearer $PH"
ok $? "an echo through the injecting rule comes back whole and redacted"
! grep -qi "^Range:" "$T/rec-api.test" && ! grep -qi "^If-Range:" "$T/rec-api.test"
ok $? "... Range and If-Range never reached the origin of a redacting rule"
! echo "$out" | grep -q -- "$CANARY"
ok $? "... and the secret is not in what the VM got"
vcurl -o /dev/null -H "Range: bytes=0-3" https://other.test/echo
! grep -qi "^Range:" "$T/rec-other.test"
ok $? "Range is stripped on every inspected rule while a secret is loaded (redacted too)"

# --- two Content-Encoding fields ---------------------------------------------------
code=$(vcurl -o "$T/ce2" -w '%{http_code}' https://api.test/echo-ce2)
[ "$code" = 502 ] && audit_has '"dst":"api.test:443".*"reason":"upstream_compressed"'
ok $? "Content-Encoding identity then gzip on a redacting rule: 502 ($code)"
! grep -q -- "$CANARY" "$T/ce2"
ok $? "... and not one byte of the echo reached the VM"

# --- encoded echoes ----------------------------------------------------------------
hexof() { printf '%s' "$1" | od -An -tx1 -v | tr -d ' \n'; }
out=$(vcurl https://api.test/echo-hex)
echo "$out" | grep -q -- "$(hexof "Bearer $PH")"
ok $? "a hex echo of the injected header comes back with the placeholder, in hex"
! echo "$out" | grep -qi -- "$(hexof "$CANARY")" && grep -q "Bearer $CANARY" "$T/rec-api.test"
ok $? "... the origin got the secret, the VM not its hex"
JPH='\u0041IRLOCK_PH\u005fREDTEAM_0123456789abcdef'
code=$(vcurl -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' \
    --data-binary "{\"t\":\"$JPH\"}" https://other.test/echo)
[ "$code" = 403 ] && audit_has '"dst":"other.test:443".*"reason":"placeholder_in_body".*"secret":"canary"'
ok $? "a placeholder in JSON \\u escapes in a body: 403 + exfil ($code)"
! grep -qF -- "REDTEAM_0123456789abcdef" "$T/rec-other.test"
ok $? "... the origin never saw it"
code=$(vcurl -o /dev/null -w '%{http_code}' --data-binary '{"t":"\u0041IRLOCK \/ok"}' \
    https://other.test/)
[ "$code" = 200 ]
ok $? "an ordinary JSON body with escapes still passes ($code)"

# --- a placeholder where only values were scanned ----------------------------------
code=$(vcurl -o /dev/null -w '%{http_code}' -H "$PH: 1" http://plain.test/)
[ "$code" = 403 ] && audit_has '"event":"exfil".*"dst":"plain.test:80".*"secret":"canary"'
ok $? "plain HTTP, a placeholder as a header name: 403 + exfil ($code)"
! grep -q -- "$PH" "$T/rec-plain.test"
ok $? "... the origin never saw it"
# (HTTP/1.1: over HTTP/2 a client sends field names lower case, and the lowered
# placeholder is not the placeholder)
code=$(vcurl --http1.1 -o /dev/null -w '%{http_code}' -H "X-$PH-Y: 1" https://other.test/)
[ "$code" = 403 ]
ok $? "inspected TLS, a placeholder inside a header name: 403 ($code)"
code=$(vcurl -o /dev/null -w '%{http_code}' -X "$MPH" https://other.test/)
[ "$code" = 403 ] && audit_has '"dst":"other.test:443".*"reason":"placeholder_in_url".*"secret":"mcanary"'
ok $? "a placeholder as the method (a rule without methods): 403 + exfil ($code)"
code=$(vcurl -o /dev/null -w '%{http_code}' -X "$MPH" http://plain.test/)
[ "$code" = 403 ]
ok $? "... over plain HTTP too ($code)"
! grep -q -- "$MPH" "$T/rec-other.test" && ! grep -q -- "$MPH" "$T/rec-plain.test" &&
    ! grep -q -- "$PH" "$T/rec-other.test" && ! grep -q -- "$PH" "$T/rec-plain.test"
ok $? "... neither origin ever saw a placeholder"
code=$(vcurl -o /dev/null -w '%{http_code}' -X PATCH https://other.test/)
[ "$code" = 200 ]
ok $? "an ordinary method on the same rule still passes ($code)"

pn_stop_checked
pn_done
