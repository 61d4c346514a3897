#!/bin/bash
# tests/integration/redteam_http.t: strict HTTP framing and semantics (issue 11) through
# the real enforcement path (tests/lib/proxynet.sh), with origins that record every
# byte (ORIGIN_RECORD):
#
#  - response smuggling: bytes an origin sends after the end of a response (past
#    Content-Length, after the last chunk, after a 204 or a HEAD answer) never reach
#    the VM; the origin connection ends (upstream_http_malformed) and the VM's next
#    request goes on a new connection with a new upstream one;
#  - request targets a server could read as an authority ("//h", "/\h", "/%2F%2Fh",
#    "/.//h") are refused (invalid_path), so nothing with the secret goes upstream;
#  - methods: TRACK like TRACE, unregistered tokens and rarer registered methods the
#    rule does not list are refused;
#  - HTTP/0.9, "HTTP/2.0" and the h2 preface get a visible 505 at once, not a hang;
#  - the VM's X-Forwarded-For / Forwarded / X-Real-IP never reach the origin; a rule
#    with "http": {"forwarded": true} gets airlock's own, naming the sandbox;
#  - a head the injection would push past HTTP_FIELDS_MAX is refused (431), never
#    sent (issue 22).
# Each has a positive control beside it.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/proxynet.sh
pn_require curl
pn_require openssl

CANARY='rEdTeAm-http-5e3cr3t-0a1b2c3d4e5f'
PH='AIRLOCK_PH_HTTPSTRICT_0123456789ab'

set -e
pn_setup rth
pn_vm V 0
inV() { ip netns exec "$V" "$@"; }
ip netns exec "$I" ip addr add 11.0.0.3/24 dev eth0
pn_hosts "11.0.0.2 api.test" "11.0.0.3 other.test plain.test"
origin_cert "$T" api.test api.test
origin_cert "$T" other.test other.test
cat >"$T/airlock.json" <<EOF
{ "state_dir": "$T/state" }
EOF
for h in api.test other.test plain.test; do : >"$T/rec-$h"; done
ORIGIN_RECORD="$T/rec-api.test" origin_start "$I" tls 11.0.0.2 443 api.test \
    "$T/api.test.pem" "$T/api.test.key"
ORIGIN_RECORD="$T/rec-other.test" origin_start "$I" tls 11.0.0.3 443 other.test \
    "$T/other.test.pem" "$T/other.test.key"
ORIGIN_RECORD="$T/rec-plain.test" origin_start "$I" http 11.0.0.3 80 plain.test
printf '%s' "$CANARY" | "$AIRLOCK" --config "$T/airlock.json" vault put canary \
    --host api.test --placeholder "$PH" >/dev/null
cat >"$T/policy.json" <<'EOF'
{ "policy": "redteam-http",
  "rules": [
    { "id": "api", "host": "api.test", "http": { "forwarded": true },
      "inject": [ { "secret": "canary", "header": "Authorization",
                    "value": "Bearer {secret}" } ] },
    { "id": "other", "host": "other.test", "tls": "inspect" },
    { "id": "plain", "host": "plain.test", "ports": [80], "protocol": "http",
      "http": { "methods": [ "GET", "HEAD", "PROPFIND", "FROB" ] } }
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
# Raw bytes to an inspected origin over TLS; prints what came back (the proxy
# closes after a refusal; the timeout only bounds a hang).
vtls() {
	printf "$2" | inV timeout 20 openssl s_client -quiet -connect "$1:443" \
	    -servername "$1" -CAfile "$T/rt-ca.pem" -alpn http/1.1 2>/dev/null
}

# --- response smuggling --------------------------------------------------------------
# Positive control: plain keep-alive, two requests on one connection.
out=$(vcurl -v https://other.test/ka https://other.test/ka 2>&1)
[ "$(echo "$out" | grep -c '^origin other.test')" = 2 ] &&
    echo "$out" | grep -qi "re-using existing connection"
ok $? "keep-alive: two answers on one connection"
for p in smuggle-cl smuggle-chunked smuggle-204; do
	sleep 2.2	# the aggregated denials flushed (each second, so within 2 s)
	n0=$(pn_denials rt upstream_http_malformed)
	out=$(vcurl https://other.test/$p https://other.test/ka 2>&1)
	! echo "$out" | grep -q SMUGGLED && echo "$out" | grep -q '^origin other.test'
	ok $? "$p: the VM's next request gets its own answer, never the smuggled one"
	sleep 2.2
	[ "$(pn_denials rt upstream_http_malformed)" -gt "$n0" ]
	ok $? "... audited upstream_http_malformed"
done
out=$(vcurl https://other.test/smuggle-cl 2>&1)
[ "$out" = first ]
ok $? "the response before the smuggled bytes arrives whole ($out)"
out=$(vcurl -I https://other.test/smuggle-cl --next --max-time 8 \
    --cacert "$T/rt-ca.pem" https://other.test/ka 2>&1)
! echo "$out" | grep -q "SMUGGLED\|^first" && echo "$out" | grep -q '^origin other.test'
ok $? "HEAD: a body after the head is not the next answer"
out=$(vcurl https://api.test/smuggle-cl https://api.test/ka 2>&1)
! echo "$out" | grep -q SMUGGLED && echo "$out" | grep -q '^origin api.test'
ok $? "on the injecting rule too"
out=$(vcurl http://plain.test/smuggle-cl http://plain.test/ka 2>&1)
! echo "$out" | grep -q SMUGGLED && echo "$out" | grep -q '^origin plain.test'
ok $? "and on plain HTTP"

# --- request targets ------------------------------------------------------------------
: >"$T/rec-api.test"
for t in '//evil.example/x' '/%2F%2Fevil.example/x' '/.//evil.example/x' \
    '/\evil.example/x' '/a/..//evil.example/x'; do
	code=$(vcurl --path-as-is -o /dev/null -w '%{http_code}' "https://api.test$t")
	[ "$code" = 400 ]
	ok $? "target $t: 400 ($code)"
done
audit_has '"dst":"api.test:443".*"reason":"invalid_path"'
ok $? "... audited invalid_path"
! grep -q "evil.example" "$T/rec-api.test" && ! grep -q -- "$CANARY" "$T/rec-api.test"
ok $? "... not one of them reached the origin (nor the secret with it)"
code=$(vcurl --path-as-is -o /dev/null -w '%{http_code}' "https://api.test/a//b")
[ "$code" = 200 ] && grep -q "^GET /a//b HTTP/1.1" "$T/rec-api.test"
ok $? "positive control: /a//b passes ($code)"

# --- methods --------------------------------------------------------------------------
code=$(vcurl -o /dev/null -w '%{http_code}' -X TRACK https://other.test/)
[ "$code" = 405 ] && audit_has '"method":"TRACK".*"reason":"trace_refused"'
ok $? "TRACK: 405 trace_refused ($code)"
code=$(vcurl -o /dev/null -w '%{http_code}' -X FROB https://other.test/)
[ "$code" = 403 ] && audit_has '"method":"FROB".*"reason":"method_not_allowed"'
ok $? "an unregistered method: 403 method_not_allowed ($code)"
code=$(vcurl -o /dev/null -w '%{http_code}' -X PROPFIND https://other.test/)
[ "$code" = 403 ]
ok $? "PROPFIND on a rule that does not list it: 403 ($code)"
# Plain HTTP in legacy or other versions: a visible refusal at once from the peek,
# not a reset or a wait for the 10 s deadline.
PL=$(inV getent ahostsv4 plain.test | awk 'NR == 1 { print $1 }')
plainraw() {	# bytes to plain.test:80; prints the first line of the answer
	inV timeout 5 bash -c "exec 3<>/dev/tcp/$PL/80; printf '$1' >&3; read -r l <&3;
	    echo \"\$l\"" 2>/dev/null | tr -d '\r'
}
: >"$T/rec-plain.test"
out=$(plainraw 'GET /\r\n')
[ "$out" = "HTTP/1.1 505 HTTP Version Not Supported" ]
ok $? "plain HTTP/0.9 request line: 505 at once ($out)"
out=$(plainraw 'GET / HTTP/2.0\r\nHost: plain.test\r\n\r\n')
[ "$out" = "HTTP/1.1 505 HTTP Version Not Supported" ] &&
    audit_has '"dst":"plain.test:80".*"reason":"http_version_not_supported"'
ok $? "plain HTTP/2.0 request line: 505, audited ($out)"
out=$(plainraw 'GET / HTTP/1.1\r\nHost: plain.test\r\nHost: plain.test\r\n\r\n')
[ "$out" = "HTTP/1.1 400 Bad Request" ] && [ ! -s "$T/rec-plain.test" ]
ok $? "plain HTTP head the peek refuses (duplicate Host): 400, the origin saw nothing ($out)"
out=$(plainraw 'GET /ka HTTP/1.1\r\nHost: plain.test\r\n\r\n')
[ "$out" = "HTTP/1.1 200 OK" ]
ok $? "control: a plain HTTP/1.1 request gets its answer ($out)"
code=$(vcurl -o /dev/null -w '%{http_code}' -X PROPFIND http://plain.test/)
[ "$code" = 200 ]
ok $? "positive control: PROPFIND where the rule lists it ($code)"
code=$(vcurl -o /dev/null -w '%{http_code}' -X FROB http://plain.test/)
[ "$code" = 403 ]
ok $? "an unregistered method is refused even where listed ($code)"
! grep -q "^FROB\|^TRACK" "$T/rec-other.test" "$T/rec-plain.test"
ok $? "... no refused method reached an origin"
code=$(vcurl -o /dev/null -w '%{http_code}' -X DELETE https://other.test/)
[ "$code" = 200 ]
ok $? "positive control: DELETE on a rule without methods ($code)"

# --- versions: a visible refusal at once ---------------------------------------------
out=$(vtls other.test 'GET /\r\n')
echo "$out" | grep -q "^HTTP/1.1 505 "
ok $? "HTTP/0.9 over TLS: 505 at once ($(echo "$out" | head -1))"
out=$(vtls other.test 'GET / HTTP/2.0\r\nHost: other.test\r\n')
echo "$out" | grep -q "^HTTP/1.1 505 "
ok $? "HTTP/2.0 request line: 505 before the head is complete"
out=$(vtls other.test 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n')
echo "$out" | grep -q "^HTTP/1.1 505 " && echo "$out" | grep -q "airlock:"
ok $? "h2 preface on an http/1.1 connection: 505 with a body"
audit_has '"dst":"other.test:443".*"reason":"http_version_not_supported"'
ok $? "... audited http_version_not_supported"
out=$(vtls other.test 'GET /ka HTTP/1.0\r\nHost: other.test\r\n\r\n')
echo "$out" | grep -q "^HTTP/1.1 200 " && echo "$out" | grep -q "^origin other.test"
ok $? "positive control: HTTP/1.0 with Host"

# --- client identity -----------------------------------------------------------------
: >"$T/rec-other.test"
: >"$T/rec-api.test"
id_hdrs=(-H 'X-Forwarded-For: 6.6.6.6' -H 'Forwarded: for=6.6.6.6;host=evil.example'
    -H 'X-Real-IP: 6.6.6.6' -H 'X-Forwarded-Host: evil.example'
    -H 'True-Client-IP: 6.6.6.6' -H 'X-Custom: kept')
vcurl -o /dev/null "${id_hdrs[@]}" https://other.test/
vcurl -o /dev/null "${id_hdrs[@]}" https://api.test/
vcurl -o /dev/null "${id_hdrs[@]}" http://plain.test/
! grep -q "6\.6\.6\.6\|evil.example" "$T/rec-other.test" "$T/rec-api.test" \
    "$T/rec-plain.test"
ok $? "the VM's identity fields never reach an origin"
# (over HTTP/2, curl's choice towards an inspected origin, names come lower case)
grep -qi "^x-custom: kept" "$T/rec-other.test" && grep -q "^X-Custom: kept" "$T/rec-plain.test"
ok $? "positive control: other fields do"
grep -q '^Forwarded: for="_airlock-rt";proto=https' "$T/rec-api.test" &&
    [ "$(grep -ci '^forwarded:' "$T/rec-api.test")" = 1 ]
ok $? "a rule with forwarded: airlock's own Forwarded, naming the sandbox"
! grep -qi '^forwarded:' "$T/rec-other.test"
ok $? "... and none on a rule without it"

# --- the fuzz finding: a head the injection would push past the limit -----------------
: >"$T/rec-api.test"
many=()
for i in $(seq 1 95); do many+=(-H "X-F$i: v"); done
code=$(vcurl -o /dev/null -w '%{http_code}' "${many[@]}" https://api.test/)
[ "$code" = 431 ] && [ ! -s "$T/rec-api.test" ]
ok $? "98 fields + 4 airlock adds (Authorization, Accept-Encoding, Forwarded, Connection): 431, nothing sent ($code)"
audit_has '"dst":"api.test:443".*"reason":"http_head_too_large"'
ok $? "... audited http_head_too_large"
code=$(vcurl -o /dev/null -w '%{http_code}' "${many[@]}" https://other.test/)
[ "$code" = 200 ]
ok $? "positive control: the same head + Connection only, on another rule ($code)"

pn_stop_checked
pn_done
