#!/bin/bash
# tests/integration/inspect_tls.t: strict TLS on both sides of inspect mode (issue 11),
# through the real enforcement path (tests/lib/proxynet.sh), with `openssl s_client`
# as the VM and origins that record every byte they receive.
#
# Upstream: a certificate whose subject CN is the name but that has no
# subjectAltName is refused (upstream_cert_invalid) and the origin receives not one
# byte, the injected secret included; the same origin with a subjectAltName
# certificate works (control).  An origin that offers only RSA key exchange (no
# forward secrecy) is refused before any request byte.
# VM side: TLS 1.2 with CBC suites only, or with RSA key exchange, or without the
# extended master secret, is refused (client_tls_failed); an ALPN offer without
# http/1.1 gets the fatal no_application_protocol alert; controls: TLS 1.2 with ECDHE
# + AES-GCM and EMS, TLS 1.3, ALPN http/1.1, ALPN h2,http/1.1 and no ALPN at all get
# through to the origin.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/proxynet.sh
pn_require curl openssl

CANARY='tLsStRiCt-5e3cr3t-Val-0a1b2c3d4e5f'

set -e
pn_setup itl
pn_vm V 0
inV() { ip netns exec "$V" "$@"; }
for a in 3 4 5; do
	ip netns exec "$I" ip addr add 11.0.0.$a/24 dev eth0
done
pn_hosts "11.0.0.2 api.test" "11.0.0.3 cn.test" "11.0.0.4 rsa.test" "11.0.0.5 rsafs.test"
origin_cert "$T" api.test api.test
ORIGIN_CERT_CN_ONLY=1 origin_cert "$T" cn.test cn.test
origin_cert "$T" cnsan cn.test
# An RSA certificate for rsa.test (served with RSA key exchange only) and rsafs.test
# (ECDHE-RSA: the control).
(
	cd "$T"
	openssl req -new -newkey rsa:2048 -nodes -keyout rsa.test.key -out rsa.csr \
	    -subj /CN=rsa.test >/dev/null 2>&1
	printf 'subjectAltName=DNS:rsa.test,DNS:rsafs.test\nextendedKeyUsage=serverAuth\n' \
	    >rsa.ext
	openssl x509 -req -in rsa.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
	    -days 2 -extfile rsa.ext -out rsa.test.pem >/dev/null 2>&1
)
openssl x509 -in "$T/cn.test.pem" -noout -ext subjectAltName 2>/dev/null |
    grep -q DNS: && { echo "1..0 # SKIP could not make a CN-only certificate"; exit 0; }
cat >"$T/airlock.json" <<EOF
{ "state_dir": "$T/state" }
EOF
: >"$T/rec-api.test"
: >"$T/rec-cn.test"
ORIGIN_RECORD="$T/rec-api.test" origin_start "$I" tls 11.0.0.2 443 api.test \
    "$T/api.test.pem" "$T/api.test.key"
ORIGIN_RECORD="$T/rec-cn.test" origin_start "$I" tls 11.0.0.3 443 cn.test \
    "$T/cn.test.pem" "$T/cn.test.key"
# The RSA origins: openssl s_server -www, TLS 1.2 with one suite each.
rsa_origin() {		# ADDR CIPHER OUT
	ip netns exec "$I" openssl s_server -www -accept "$1:443" -tls1_2 \
	    -cipher "$2" -cert "$T/rsa.test.pem" -key "$T/rsa.test.key" \
	    >"$3" 2>&1 </dev/null &
	ORIGIN_PIDS="$ORIGIN_PIDS $!"
	for i in $(seq 50); do grep -q ACCEPT "$3" && break; sleep 0.1; done
}
printf '%s' "$CANARY" | "$AIRLOCK" --config "$T/airlock.json" vault put canary \
    --host cn.test >/dev/null
cat >"$T/policy.json" <<'EOF'
{ "policy": "tls-strict",
  "rules": [
    { "id": "api", "host": "api.test", "tls": "inspect" },
    { "id": "cn", "host": "cn.test",
      "inject": [ { "secret": "canary", "header": "Authorization",
                    "value": "Bearer {secret}" } ] },
    { "id": "rsa", "host": "rsa.test", "tls": "inspect" },
    { "id": "rsafs", "host": "rsafs.test", "tls": "inspect" } ] }
EOF
set +e
if ! pn_start "\"upstream_ca_file\": \"$T/ca.pem\""; then
	echo "1..0 # SKIP airlockd did not start: $(head -c 300 "$T/airlockd.log")"
	exit 0
fi
pn_attach ts 0 "$T/policy.json"
ok $? "net attach ts"
"$AIRLOCK" --config "$T/airlock.json" ca cert ts >"$T/ts-ca.pem" 2>/dev/null
vcurl() { inV curl -sS --max-time 8 --cacert "$T/ts-ca.pem" "$@"; }
audit_count() { grep -c -- "$1" "$T/audit.jsonl"; }
# Denials are aggregated per second (the rest counted as "suppressed" in a later
# record, flushed each second, so within 2 s): wait for the flush, count records + suppressed.
denials() { sleep 2.2; pn_denials ts client_tls_failed; }
# vm_tls OUT ARGS...: an HTTP request to api.test over s_client; stdout+stderr in OUT
vm_tls() {
	local out=$1
	shift
	printf 'GET / HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n' |
	    inV timeout 10 openssl s_client -quiet -connect api.test:443 \
	    -servername api.test -CAfile "$T/ts-ca.pem" -verify_return_error "$@" \
	    >"$out" 2>&1
}
got_origin() { grep -q "^origin api.test" "$1"; }

# --- upstream: subjectAltName only ------------------------------------------------
code=$(vcurl -o /dev/null -w '%{http_code}' https://cn.test/)
[ "$code" = 502 ] && [ "$(audit_count '"dst":"cn.test:443".*"reason":"upstream_cert_invalid"')" -ge 1 ]
ok $? "an origin certificate with the name in CN and no subjectAltName: 502, upstream_cert_invalid ($code)"
[ ! -s "$T/rec-cn.test" ]
ok $? "... the origin received zero bytes (no request, no secret)"
! grep -rq -- "$CANARY" "$T/rec-cn.test" "$T/audit.jsonl"
ok $? "... the secret is nowhere it could have gone"
# Control: the same name, the same origin process, a certificate with the SAN.
origin_stop_all
ORIGIN_RECORD="$T/rec-cn.test" origin_start "$I" tls 11.0.0.3 443 cn.test \
    "$T/cnsan.pem" "$T/cnsan.key"
ORIGIN_RECORD="$T/rec-api.test" origin_start "$I" tls 11.0.0.2 443 api.test \
    "$T/api.test.pem" "$T/api.test.key"
out=$(vcurl https://cn.test/)
[ "$out" = "origin cn.test" ] &&
    grep -q "^Authorization: Bearer $CANARY"$'\r'"\$" "$T/rec-cn.test"
ok $? "control: a subjectAltName certificate for cn.test is accepted, secret injected ('$out')"

# --- upstream: forward secrecy -------------------------------------------------------
rsa_origin 11.0.0.4 AES128-GCM-SHA256 "$T/rsa.out"
rsa_origin 11.0.0.5 ECDHE-RSA-AES128-GCM-SHA256 "$T/rsafs.out"
code=$(vcurl -o /dev/null -w '%{http_code}' https://rsa.test/)
[ "$code" = 502 ] && [ "$(audit_count '"dst":"rsa.test:443".*"reason":"upstream_tls_failed"')" -ge 1 ]
ok $? "an origin offering only RSA key exchange: 502, upstream_tls_failed ($code)"
grep -q "no shared cipher" "$T/rsa.out"
ok $? "... the handshake failed there (no shared cipher): no request was sent"
out=$(vcurl https://rsafs.test/)
echo "$out" | grep -q "Ciphers supported in s_server"
ok $? "control: the same certificate with ECDHE-RSA (forward secrecy) is accepted"

# --- VM side: controls -----------------------------------------------------------------
vm_tls "$T/c1" -tls1_2
got_origin "$T/c1"
ok $? "control: TLS 1.2 (ECDHE + AEAD, EMS) reaches the origin"
vm_tls "$T/c2" -tls1_3
got_origin "$T/c2"
ok $? "control: TLS 1.3 reaches the origin"
vm_tls "$T/c3" -alpn http/1.1
got_origin "$T/c3"
ok $? "control: ALPN http/1.1 reaches the origin"
out=$(vcurl --http2 -w ' %{http_version}' https://api.test/)
[ "$out" = "origin api.test
 2" ]
ok $? "control: ALPN h2,http/1.1 reaches the HTTP/1.1 origin (h2 chosen, translated)"
vm_tls "$T/c5"
got_origin "$T/c5"
ok $? "control: no ALPN at all reaches the origin"
vcurl -o /dev/null https://api.test/
ok $? "control: curl reaches the origin"

# --- VM side: refusals -------------------------------------------------------------------
d0=$(denials)
vm_tls "$T/r1" -tls1_2 -cipher AES128-SHA
! got_origin "$T/r1"
ok $? "TLS 1.2 offering only AES128-SHA (RSA, CBC): refused"
vm_tls "$T/r2" -tls1_2 -cipher ECDHE-ECDSA-AES128-SHA:ECDHE-RSA-AES128-SHA:ECDHE-ECDSA-AES256-SHA384
! got_origin "$T/r2"
ok $? "TLS 1.2 offering only ECDHE with CBC: refused"
vm_tls "$T/r3" -tls1_2 -cipher AES128-GCM-SHA256:AES256-GCM-SHA384
! got_origin "$T/r3"
ok $? "TLS 1.2 offering only RSA key exchange with AES-GCM: refused"
cat >"$T/noems.cnf" <<'EOF'
openssl_conf = oc
[oc]
ssl_conf = sc
[sc]
system_default = sd
[sd]
Options = -ExtendedMasterSecret
EOF
OPENSSL_CONF="$T/noems.cnf" vm_tls "$T/r4" -tls1_2
! got_origin "$T/r4"
ok $? "TLS 1.2 without the extended master secret: refused"
OPENSSL_CONF="$T/noems.cnf" vm_tls "$T/c6" -tls1_3
got_origin "$T/c6"
ok $? "control: the same client without EMS on TLS 1.3 gets through (EMS is a TLS 1.2 matter)"
[ "$(denials)" -ge $((d0 + 4)) ]
ok $? "... each refusal audited as client_tls_failed ($(($(denials) - d0)))"
for p in h3 foo imap; do
	vm_tls "$T/a-$p" -alpn "$p"
	! got_origin "$T/a-$p" && grep -q "no application protocol" "$T/a-$p"
	ok $? "ALPN offer '$p' (nothing airlock speaks): the no_application_protocol alert"
done
[ "$(denials)" -ge $((d0 + 7)) ]
ok $? "... audited as client_tls_failed"
out=$(vcurl --http2-prior-knowledge -w ' %{http_version}' https://api.test/)
[ "$out" = "origin api.test
 2" ]
ok $? "control: ALPN offer 'h2' alone: h2 chosen once the origin verified ('$(echo $out)')"

pn_stop_checked
pn_done
