#!/bin/bash
# tests/integration/inspect_basic.t: TLS inspection end to end through the real
# enforcement path (tests/lib/proxynet.sh: `airlock net attach`, netctl's rules,
# airlockd in a host namespace, origins in an "internet" namespace that record every
# byte they receive).  A canary secret in the vault, bound to api.test and injected
# by the policy as "Authorization: Bearer {secret}".
#
# Covers: the VM trusts the sandbox CA (airlock ca cert) and talks HTTPS through the
# proxy; the canary arrives at api.test in the injected header, placeholder
# substitution in a header value and in Basic credentials; an echo of it comes back
# redacted (Content-Length and chunked, split across 7-byte chunks) with an exfil
# record; a compressed answer is refused; the canary is in no byte the VM received,
# no other origin's recording, not in the audit log, airlockd's log, `vault ls`, or
# any file of the state directory but vault.db; placeholders to an unbound host, in
# the URL, in the body, encoded, split across writes: blocked with exfil records;
# method/path denials 403 with sandbox/policy/rule; keep-alive Host switch 421; TRACE;
# parsing traps; upstream certificates expired, wrong name, self-signed, signed by
# airlock's own CA: refused before any request byte reaches the origin; a policy
# injecting a secret the vault does not bind is not loaded.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/proxynet.sh
pn_require curl openssl perl

CANARY='cAnArY-5e3cr3t-Val-8f1d2c3b4a59'
PH='AIRLOCK_PH_CANARY_0123456789abcdef'
OTHER='0ther-s3cret-VALUE-77aa88bb99cc'
OPH='AIRLOCK_PH_OTHER_fedcba9876543210'

set -e
pn_setup ins
pn_vm V 0
inV() { ip netns exec "$V" "$@"; }
for a in 3 4 5 6 7 8; do
	ip netns exec "$I" ip addr add 11.0.0.$a/24 dev eth0
done
pn_hosts "11.0.0.2 api.test splice.test" "11.0.0.3 other.test" "11.0.0.4 expired.test" \
    "11.0.0.5 wrong.test" "11.0.0.6 self.test" "11.0.0.7 airca.test" \
    "11.0.0.8 plain.test tcp.test"
AL() { inH "$AIRLOCK" --config "$T/airlock.json" "$@"; }

# Origins: good certificates for api.test and other.test; the traps.
origin_cert "$T" api.test api.test
origin_cert "$T" other.test other.test
origin_cert "$T" wrongcert not-wrong.test
(
	cd "$T"
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -keyout expired.test.key -out expired.csr -subj /CN=expired.test \
	    >/dev/null 2>&1
	printf 'subjectAltName=DNS:expired.test\n' >expired.ext
	openssl x509 -req -in expired.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
	    -days 0 -extfile expired.ext -out expired.test.pem >/dev/null 2>&1
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
	    -keyout self.test.key -out self.test.pem -days 2 -subj /CN=self.test \
	    -addext subjectAltName=DNS:self.test >/dev/null 2>&1
)
# airlock's host CA, and a leaf for airca.test from it.
cat >"$T/airlock.json" <<EOF
{ "state_dir": "$T/state" }
EOF
"$AIRLOCK" --config "$T/airlock.json" ca init >/dev/null
mkdir -p "$T/airca"
"$B/tests/tools/ca_mint" "$T/state" - airca.test "$T/airca" >/dev/null
# The upstream trust: the test CA and (wrongly) airlock's own CA.
cat "$T/ca.pem" "$T/state/ca.pem" >"$T/upstream-ca.pem"

start_origin() {	# NAME ADDR CERT KEY
	ORIGIN_RECORD="$T/rec-$1" origin_start "$I" tls "$2" 443 "$1" "$3" "$4"
}
: >"$T/rec-api.test"
start_origin api.test 11.0.0.2 "$T/api.test.pem" "$T/api.test.key"
start_origin other.test 11.0.0.3 "$T/other.test.pem" "$T/other.test.key"
start_origin expired.test 11.0.0.4 "$T/expired.test.pem" "$T/expired.test.key"
start_origin wrong.test 11.0.0.5 "$T/wrongcert.pem" "$T/wrongcert.key"
start_origin self.test 11.0.0.6 "$T/self.test.pem" "$T/self.test.key"
start_origin airca.test 11.0.0.7 "$T/airca/leaf.pem" "$T/airca/leaf.key"
ORIGIN_RECORD="$T/rec-plain.test" origin_start "$I" http 11.0.0.8 80 plain.test
ORIGIN_RECORD="$T/rec-tcp.test" origin_start "$I" banner 11.0.0.8 22 tcp.test

# The vault: the canary for api.test, another secret bound to other.test.
printf '%s' "$CANARY" | "$AIRLOCK" --config "$T/airlock.json" vault put canary \
    --host api.test --placeholder "$PH" >/dev/null
printf '%s' "$OTHER" | "$AIRLOCK" --config "$T/airlock.json" vault put other \
    --host other.test --placeholder "$OPH" >/dev/null

cat >"$T/policy.json" <<'EOF'
{ "policy": "inspect-test",
  "rules": [
    { "id": "api", "host": "api.test",
      "http": { "methods": ["GET", "POST", "TRACE"], "paths": ["/echo*", "/ka", "/ka/**", "/conn", "/"] },
      "inject": [ { "secret": "canary", "header": "Authorization",
                    "value": "Bearer {secret}" } ] },
    { "id": "other", "host": "other.test", "http": { "websocket": true } },
    { "id": "expired", "host": "expired.test", "tls": "inspect" },
    { "id": "wrong", "host": "wrong.test", "tls": "inspect" },
    { "id": "self", "host": "self.test", "tls": "inspect" },
    { "id": "airca", "host": "airca.test", "tls": "inspect" },
    { "id": "plain", "host": "plain.test", "ports": [80], "protocol": "http",
      "http": { "methods": ["GET"] } },
    { "id": "tcp", "host": "tcp.test", "ports": [22], "protocol": "tcp" },
    { "id": "splice", "host": "splice.test" }
  ] }
EOF
cat >"$T/bad-policy.json" <<'EOF'
{ "policy": "binds-wrong",
  "rules": [
    { "id": "steal", "host": "other.test",
      "inject": [ { "secret": "canary", "header": "Authorization" } ] } ] }
EOF
set +e
if ! pn_start "\"upstream_ca_file\": \"$T/upstream-ca.pem\""; then
	echo "1..0 # SKIP airlockd did not start: $(head -c 300 "$T/airlockd.log")"
	exit 0
fi
pn_attach t1 0 "$T/policy.json" 2>"$T/attach.err"
ok $? "net attach t1 (an inspecting policy)"
sed "s/^/# /" "$T/attach.err"
AL ca cert t1 >"$T/t1-ca.pem" 2>/dev/null
grep -q "BEGIN CERTIFICATE" "$T/t1-ca.pem"
ok $? "airlock ca cert t1: the sandbox CA the VM trusts"

vcurl() { inV curl -sS --max-time 8 --cacert "$T/t1-ca.pem" "$@"; }
audit_has() { grep -q -- "$1" "$T/audit.jsonl"; }
: >"$T/vm-received"
keep() { tee -a "$T/vm-received"; }

# --- injection -------------------------------------------------------------------
out=$(vcurl https://api.test/ | keep)
[ "$out" = "origin api.test" ]
ok $? "inspected GET through the sandbox CA reaches api.test ('$out')"
grep -q "^Authorization: Bearer $CANARY"$'\r'"\$" "$T/rec-api.test"
ok $? "the canary arrived at api.test in the injected Authorization header"
sleep 0.3
audit_has '"event":"request".*"dst":"api.test:443","tls":"inspect","method":"GET","path":"/","status":200,"decision":"allow","rule":"api","rule_file":"'"$T"'/policy.json","inject":\["canary"\]'
ok $? "request record: method, path, status, rule and its file, inject names"

# A placeholder may stand only in a field the rule injects its secret into.
code=$(vcurl -o "$T/o0" -w '%{http_code}' -H "X-Token: $PH" https://api.test/echo)
cat "$T/o0" >>"$T/vm-received"
[ "$code" = 403 ] && audit_has '"event":"exfil".*"dst":"api.test:443".*"reason":"placeholder_in_header".*"secret":"canary"'
ok $? "placeholder in a field the rule does not inject into: 403 + exfil placeholder_in_header ($code)"
! grep -q "^X-Token:" "$T/rec-api.test"
ok $? "... nothing was substituted into it; the request never reached the origin"
code=$(vcurl -o "$T/o0" -w '%{http_code}' -H "Authorization: Bearer $OPH" https://api.test/echo)
cat "$T/o0" >>"$T/vm-received"
[ "$code" = 403 ] && audit_has '"event":"exfil".*"dst":"api.test:443".*"reason":"placeholder_unbound_host".*"secret":"other"' &&
    ! grep -q -- "$OTHER" "$T/rec-api.test"
ok $? "another secret's placeholder in the injected field: refused, not overwritten ($code)"
out=$(vcurl https://api.test/echo | keep)
echo "$out" | grep -q "^Authorization: Bearer $PH"$'\r'"\?\$" && ! echo "$out" | grep -q -- "$CANARY"
ok $? "the injected value echoed back comes back redacted to the placeholder"
audit_has '"event":"exfil".*"reason":"secret_redacted".*"secret":"canary"'
ok $? "... the redaction has an exfil record naming the secret"

vcurl -o /dev/null -H "Authorization: Basic $(printf 'bot:%s' "$PH" | base64 -w0)" \
    https://api.test/echo
b=$(printf 'bot:%s' "$CANARY" | base64 -w0)
# (curl speaks HTTP/2 to airlock: the VM's field name comes lower case)
grep -qi "^authorization: Basic $b" "$T/rec-api.test"
ok $? "Basic credentials in the injected field: placeholder decoded, replaced, re-encoded"
out=$(vcurl https://api.test/echo-chunked | keep)
echo "$out" | grep -q "^Authorization: Bearer $PH"
ok $? "chunked echo split in 7-byte chunks: the injected value redacted to the placeholder"

vcurl -o /dev/null -w '%{http_code}\n' https://api.test/echo-gzip >"$T/gz" 2>&1
[ "$(cat "$T/gz")" = 502 ] && audit_has '"reason":"upstream_compressed"'
ok $? "a compressed answer on a secret-carrying host: refused (502, upstream_compressed)"

# --- exfiltration guard -----------------------------------------------------------
code=$(vcurl -o "$T/o1" -w '%{http_code}' -H "X-Token: $PH" https://other.test/echo)
cat "$T/o1" >>"$T/vm-received"
[ "$code" = 403 ] && audit_has '"event":"exfil".*"dst":"other.test:443".*"reason":"placeholder_unbound_host".*"secret":"canary"'
ok $? "placeholder to a host the rule does not inject it for: 403 + exfil ($code)"
code=$(vcurl -o "$T/o2" -w '%{http_code}' "https://api.test/echo?k=$PH")
cat "$T/o2" >>"$T/vm-received"
[ "$code" = 403 ] && audit_has '"reason":"placeholder_in_url"'
ok $? "placeholder in the URL: 403 + exfil ($code)"
code=$(vcurl -o "$T/o3" -w '%{http_code}' --data "x=$PH" https://api.test/echo)
cat "$T/o3" >>"$T/vm-received"
[ "$code" = 403 ] && audit_has '"reason":"placeholder_in_body"'
ok $? "placeholder in the body: 403 + exfil ($code)"
enc=$(printf '%s' "$PH" | base64 -w0)
code=$(vcurl -o /dev/null -w '%{http_code}' -H "X-Data: $enc" https://other.test/)
[ "$code" = 403 ] && audit_has '"reason":"placeholder_encoded"'
ok $? "base64-encoded placeholder in a header: 403 ($code)"
pct=$(printf '%s' "$PH" | perl -pe 's/(.)/sprintf("%%%02X", ord($1))/ge')
code=$(vcurl -o /dev/null -w '%{http_code}' --data "q=$pct" https://other.test/echo)
[ "$code" = 403 ]
ok $? "percent-encoded placeholder in a body: 403 ($code)"
code=$(vcurl -o /dev/null -w '%{http_code}' -H "X-Token: $OPH" https://other.test/)
[ "$code" = 403 ]
ok $? "placeholder of a secret bound to other.test, where no rule injects it: 403 ($code)"
# Split across two TLS writes: a raw client writes the head in two pieces.
M=$(inV getent ahostsv4 api.test | awk 'NR == 1 { print $1 }')
MO=$(inV getent ahostsv4 other.test | awk 'NR == 1 { print $1 }')
nb=$(grep -c '"dst":"other.test:443".*"reason":"placeholder_unbound_host"' "$T/audit.jsonl")
split=$(inV timeout 8 perl -e '
	use IO::Handle; $| = 1;
	my ($ph) = @ARGV; my $h = substr($ph, 0, 10); my $t = substr($ph, 10);
	print STDOUT "";
	open(my $s, "|-", "openssl s_client -quiet -connect '"$MO"':443 -servername other.test -CAfile '"$T/t1-ca.pem"' 2>/dev/null") or die;
	$s->autoflush(1);
	print $s "GET / HTTP/1.1\r\nHost: other.test\r\nX-A: $h";
	sleep 1;
	print $s "$t\r\nConnection: close\r\n\r\n";
	sleep 2; close $s;' "$PH" 2>&1)
sleep 0.3
[ "$(grep -c '"dst":"other.test:443".*"reason":"placeholder_unbound_host"' "$T/audit.jsonl")" -gt "$nb" ]
ok $? "placeholder split across two writes: blocked too"

# --- request checks ---------------------------------------------------------------
code=$(vcurl -o "$T/o4" -w '%{http_code}' https://api.test/private)
[ "$code" = 403 ] && grep -q "sandbox t1, policy inspect-test, rule api: path_not_allowed" "$T/o4"
ok $? "path not allowed: 403 naming sandbox, policy, rule, reason ($code)"
code=$(vcurl -o "$T/o5" -w '%{http_code}' -X DELETE https://api.test/)
[ "$code" = 403 ] && grep -q "method_not_allowed" "$T/o5"
ok $? "method not allowed: 403 ($code)"
code=$(vcurl -o /dev/null -w '%{http_code}' -X TRACE https://api.test/)
[ "$code" = 405 ] && audit_has '"reason":"trace_refused"'
ok $? "TRACE refused before any injection, even where the rule lists it ($code)"
before=$(grep -c '^TRACE' "$T/rec-api.test")
[ "$before" = 0 ]
ok $? "... and the origin never saw it"
codes=$(vcurl -o /dev/null -o /dev/null -w '%{http_code} ' https://api.test/ka \
    -H "Host: api.test" --next -o /dev/null -w '%{http_code}' -H "Host: other.test" \
    --cacert "$T/t1-ca.pem" https://api.test/ka)
case "$codes" in
"200 421") ok 0 "keep-alive: a second request with another Host gets 421 ($codes)" ;;
*) ok 1 "keep-alive: a second request with another Host gets 421 ('$codes')" ;;
esac
grep '"reason":"host_mismatch"' "$T/audit.jsonl" |
    grep -q '"dst":"api.test:443".*"host":"other.test"'
ok $? "... its record names the Host the VM sent (host) beside dst"
! grep '"event":"request"' "$T/audit.jsonl" | grep '"decision":"allow"' |
    grep -q '"host":'
ok $? "... which allowed requests do not carry"

# --- parsing traps (raw requests over TLS) ----------------------------------------
raw() {	# raw PERL-STRING: the status line airlockd answers
	inV timeout 6 perl -e '
	    open(my $s, "|-", "openssl s_client -quiet -connect '"$M"':443 -servername api.test -CAfile '"$T/t1-ca.pem"' >'"$T/raw.out"' 2>/dev/null") or die;
	    print $s eval $ARGV[0]; sleep 1; close $s;' "$1" >/dev/null 2>&1
	head -1 "$T/raw.out" | tr -d '\r'
}
trap_is() {	# REQUEST STATUS DESC
	local got
	got=$(raw "$1")
	case "$got" in
	"HTTP/1.1 $2 "*) ok 0 "$3 -> $2" ;;
	*) ok 1 "$3 -> $2 (got '$got')" ;;
	esac
}
trap_is '"POST /echo HTTP/1.1\r\nHost: api.test\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"' 400 "CL with TE"
trap_is '"POST /echo HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: gzip\r\n\r\n"' 501 "TE gzip"
trap_is '"GET / HTTP/1.1\r\nHost: api.test\r\nX-A: a\r\n b\r\n\r\n"' 400 "obs-fold"
trap_is '"GET / HTTP/1.1\nHost: api.test\n\n"' 400 "bare LF"
trap_is '"GET / HTTP/1.1\r\nHost: api.test\r\nX-A: a\0b\r\n\r\n"' 400 "NUL in a field"
trap_is '"GET / HTTP/1.1\r\nHost: api.test\r\nHost: api.test\r\n\r\n"' 400 "duplicate Host"
trap_is '"GET https://other.test/ HTTP/1.1\r\nHost: api.test\r\n\r\n"' 400 "absolute-form authority differs from Host"
trap_is '"GET http://api.test/abs?q=1 HTTP/1.1\r\nHost: api.test\r\n\r\n"' 400 "absolute-form inside TLS"
sleep 0.3
grep '"reason":"invalid_path"' "$T/audit.jsonl" |
    grep -q '"host":"api.test","target":"http://api.test/abs"'
ok $? "... its record holds the target as sent, the query cut (audit.log_query off)"
trap_is '"GET /\r\n\r\n"' 505 "HTTP/0.9 (no version: not supported)"
trap_is '"POST /echo HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"' 400 "bad chunk size"
trap_is '"GET / HTTP/1.1\r\nHost: api.test\r\nX-Big: " . ("a" x 40000) . "\r\n\r\n"' 431 "header section over the limit"

# --- upstream verification --------------------------------------------------------
for h in expired wrong self airca; do
	code=$(vcurl -o "$T/u-$h" -w '%{http_code}' "https://$h.test/")
	[ "$code" = 502 ] && grep -q "refused" "$T/u-$h"
	ok $? "upstream $h.test: refused, 502 to the VM ($code)"
	[ ! -s "$T/rec-$h.test" ]
	ok $? "upstream $h.test: not one request byte reached it"
done
audit_has '"dst":"airca.test:443".*"reason":"upstream_cert_invalid"'
ok $? "a certificate from airlock's own CA is refused although the trust file has it"

# --- WebSocket: only where the rule allows it, relayed after the 101 -------------
ws() {	# HOST ADDR PATH: the upgrade, then one line each way
	inV timeout 9 perl -e '
	    open(my $s, "|-", "openssl s_client -quiet -connect $ARGV[1]:443 -servername $ARGV[0] -CAfile '"$T/t1-ca.pem"' >'"$T/ws.out"' 2>/dev/null") or die;
	    select($s); $| = 1;
	    print $s "GET $ARGV[2] HTTP/1.1\r\nHost: $ARGV[0]\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n";
	    sleep 2; print $s "frame-bytes-42\n"; sleep 2; close $s;' "$1" "$2" "$3" >/dev/null 2>&1
	tr -d '\r' <"$T/ws.out"
}
out=$(ws other.test "$MO" /ws)
echo "$out" | grep -q "^HTTP/1.1 101" && echo "$out" | grep -q "^frame-bytes-42"
ok $? "websocket where the rule allows it: 101, then raw bytes both ways"
out=$(ws api.test "$M" /ka)
echo "$out" | grep -q "^HTTP/1.1 403" && audit_has '"reason":"websocket_not_allowed"'
ok $? "websocket where the rule does not allow it: 403"

# --- bodies larger than the buffers ---------------------------------------------
nb=$(vcurl https://other.test/size/3000000 | wc -c)
[ "$nb" = 3000000 ]
ok $? "3 MB download through inspect, Content-Length kept ($nb bytes)"
nb=$(vcurl https://api.test/ka/size/3000000 | wc -c)
[ "$nb" = 3000000 ]
ok $? "3 MB download on the redacting host, re-framed chunked ($nb bytes)"
head -c 700000 /dev/zero | tr '\0' 'u' >"$T/up.bin"
nb=$(vcurl --data-binary @"$T/up.bin" https://other.test/echo | wc -c)
[ "$nb" -gt 700000 ]
ok $? "700 kB upload echoed back through inspect ($nb bytes)"

# --- keep-alive, plain HTTP, raw TCP --------------------------------------------
# The origin's /conn says which of its connections served a request (and its
# number there): the same one for both, whether it was dialled or pooled.
ka=$(vcurl https://api.test/conn --next --cacert "$T/t1-ca.pem" https://api.test/conn |
    sed -n 's/^origin api.test conn \([0-9]*\) req \([0-9]*\)$/\1 \2/p' | tr '\n' ' ')
echo "$ka" | awk '{ exit !(NF == 4 && $1 == $3 && $4 == $2 + 1) }'
ok $? "two requests on one keep-alive connection, one upstream connection (conn, req: $ka)"
P=$(inV getent ahostsv4 plain.test | awk 'NR == 1 { print $1 }')
out=$(inV curl -sS --max-time 5 http://plain.test/ 2>&1)
[ "$out" = "origin plain.test" ]
ok $? "plain HTTP through the request engine ('$out')"
code=$(inV curl -sS --max-time 5 -o /dev/null -w '%{http_code}' -H "X-Token: $PH" \
    http://plain.test/)
[ "$code" = 403 ] && ! grep -q -- "$PH" "$T/rec-plain.test" &&
    audit_has '"event":"exfil".*"dst":"plain.test:80".*"reason":"placeholder_unbound_host"'
ok $? "a placeholder over plain HTTP: 403 + exfil, the origin never saw it ($code)"
code=$(inV curl -sS --max-time 5 -o /dev/null -w '%{http_code}' -X POST -d x \
    http://plain.test/)
[ "$code" = 403 ]
ok $? "plain HTTP: the rule's methods are checked per request ($code)"
out=$(inV timeout 5 bash -c "exec 3<>/dev/tcp/\$(getent ahostsv4 tcp.test | awk 'NR==1{print \$1}')/22;
    echo 'login $PH' >&3; read -r l <&3; echo \"\$l\"" 2>&1)
[ "$out" != "tcp.test ready" ] && ! grep -q -- "$PH" "$T/rec-tcp.test" &&
    audit_has '"event":"exfil".*"dst":"tcp.test:22".*"reason":"placeholder_unprotected"'
ok $? "a placeholder in the first bytes of raw TCP: refused + exfil"

# --- reload: a rotated value is what goes out next --------------------------------
NEW='n3w-CANARY-value-after-rotation-42'
printf '%s' "$NEW" | "$AIRLOCK" --config "$T/airlock.json" vault put canary \
    --host api.test >/dev/null
kill -HUP "$DPID"
sleep 0.5
vcurl -o /dev/null https://api.test/ && grep -q "^Authorization: Bearer $NEW" "$T/rec-api.test"
ok $? "after vault put + reload, the new value is injected"
out=$(vcurl https://api.test/echo | keep)
echo "$out" | grep -q "^Authorization: Bearer $PH" && ! echo "$out" | grep -q -- "$NEW"
ok $? "... and redacted from echoes"

# --- limits.requests_per_second, per request ---------------------------------------
pn_vm V3 2
cat >"$T/limited.json" <<'EOF'
{ "policy": "limited", "rules": [ { "id": "other", "host": "other.test", "tls": "inspect" } ],
  "limits": { "requests_per_second": 1, "connections_per_second": 10 } }
EOF
AL net attach t3 --policy "$T/limited.json" --iface vh2 --guest-ip "$(pn_guest 2)" \
    >/dev/null 2>&1
AL ca cert t3 >"$T/t3-ca.pem" 2>/dev/null
codes=$(ip netns exec "$V3" curl -sS --max-time 8 --cacert "$T/t3-ca.pem" \
    -o /dev/null -w '%{http_code} ' https://other.test/ka --next --cacert \
    "$T/t3-ca.pem" -o /dev/null -w '%{http_code} ' https://other.test/ka 2>/dev/null)
[ "$codes" = "200 429 " ] && audit_has '"sandbox":"t3","event":"request".*"status":429.*"reason":"rate_limited"'
ok $? "requests_per_second 1: the second request at once gets 429 ($codes)"

# --- limits.bytes_per_second after a 101: the one relay carries the WebSocket -----
pn_vm V4 3
cat >"$T/wslimited.json" <<'EOF'
{ "policy": "ws-limited",
  "rules": [ { "id": "other", "host": "other.test", "http": { "websocket": true } } ],
  "limits": { "bytes_per_second": 40000 } }
EOF
AL net attach t4 --policy "$T/wslimited.json" --iface vh3 --guest-ip "$(pn_guest 3)" \
    >/dev/null 2>&1
AL ca cert t4 >"$T/t4-ca.pem" 2>/dev/null
MO4=$(ip netns exec "$V4" getent ahostsv4 other.test | awk 'NR == 1 { print $1 }')
# 100,000 bytes up and echoed down: 200,000 at 40,000/s after a one-second burst
# take seconds (about 2.5 s measured here; 0.1 s unlimited); assert 1.5 s, a lower
# bound only, and every byte back.
ms=$(ip netns exec "$V4" timeout 40 perl -MTime::HiRes=time -e '
    open(my $s, "|-", "openssl s_client -quiet -no_ign_eof -connect $ARGV[0]:443 -servername other.test -CAfile '"$T/t4-ca.pem"' >'"$T/ws4.out"' 2>/dev/null") or die;
    select($s); $| = 1;
    print $s "GET /ws HTTP/1.1\r\nHost: other.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n";
    for (1..50) { last if -s "'"$T/ws4.out"'" > 0; select(undef, undef, undef, 0.1); }
    my $t0 = time;
    print $s ("w" x 99999) . "\n";
    for (1..350) { last if -s "'"$T/ws4.out"'" >= 100000 + 100; select(undef, undef, undef, 0.1); }
    syswrite(STDOUT, sprintf("%d\n", (time - $t0) * 1000));
    close $s;' "$MO4" 2>"$T/ws4.err")
[ -s "$T/ws4.err" ] && diag "ws4: $(head -c 300 "$T/ws4.err")"
got=$(sed '1,/^\r*$/d' "$T/ws4.out" | tr -cd w | wc -c)
[ "$got" = 99999 ]
ok $? "WebSocket under bytes_per_second: every byte echoed back ($got)"
[ -n "$ms" ] && [ "$ms" -ge 1500 ]
ok $? "... held to the rate by the relay (took ${ms:-?} ms, at least 1500)"

# --- limits.bytes_per_second on inspected requests and responses ------------------
# The same limit holds for bytes the inspect engine forwards (heads and bodies, both
# ways), not only for the relay.  900,000 bytes down at 300,000/s after a one-second
# burst take about 2 s (0.1 s unlimited): assert 1.5 s; 900,000 up through /echo come
# back too, so 1,800,000 bytes take about 5 s: assert 4 s.  Lower bounds only.
pn_vm V5 4
cat >"$T/bytelimited.json" <<'EOF'
{ "policy": "byte-limited", "rules": [ { "id": "other", "host": "other.test", "tls": "inspect" } ],
  "limits": { "bytes_per_second": 300000 } }
EOF
AL net attach t5 --policy "$T/bytelimited.json" --iface vh4 --guest-ip "$(pn_guest 4)" \
    >/dev/null 2>&1
AL ca cert t5 >"$T/t5-ca.pem" 2>/dev/null
t0=$(date +%s%N)
got=$(ip netns exec "$V5" curl -sS --max-time 30 --cacert "$T/t5-ca.pem" -o /dev/null \
    -w '%{size_download}' https://other.test/size/900000 2>&1)
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$got" = 900000 ]
ok $? "inspected download under bytes_per_second completes ($got bytes)"
[ "$ms" -ge 1500 ]
ok $? "... held to the rate in the inspect engine (took $ms ms, at least 1500)"
head -c 900000 /dev/zero | tr '\0' Z >"$T/up900k"
sleep 3		# the bucket refills (one second's worth at most)
t0=$(date +%s%N)
got=$(ip netns exec "$V5" curl -sS --max-time 40 --cacert "$T/t5-ca.pem" \
    --data-binary @"$T/up900k" -H 'Content-Type: application/octet-stream' \
    -o "$T/echo5.out" -w '%{size_upload}' https://other.test/echo 2>&1)
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$got" = 900000 ] && [ "$(tr -cd Z <"$T/echo5.out" | wc -c)" = 900000 ]
ok $? "inspected upload under bytes_per_second: every byte there and back ($got)"
[ "$ms" -ge 4000 ]
ok $? "... held to the rate both ways (took $ms ms, at least 4000)"

# --- the policy/vault binding ------------------------------------------------------
inV true
pn_vm V2 1
AL net attach t2 --policy "$T/bad-policy.json" --iface vh1 \
    --guest-ip "$(pn_guest 1)" >/dev/null 2>&1
sleep 0.3
AL stats --json 2>/dev/null | grep -q '"policy_error":"[^"]*canary[^"]*not bind'
ok $? "a policy injecting canary to other.test (not bound by the vault) does not load"

# --- where the canary must never be -----------------------------------------------
! grep -q -- "$CANARY" "$T/vm-received" && ! grep -q -- "$NEW" "$T/vm-received"
ok $? "the canary never reached the VM"
for f in "$T"/rec-*; do
	case "$f" in *rec-api.test) continue ;; esac
	if grep -q -- "$CANARY" "$f"; then
		echo "# canary in $f"
		false
	fi
done
ok $? "no other origin's recording holds the canary"
! grep -q -- "$CANARY" "$T/audit.jsonl"
ok $? "not in the audit log"
! grep -q -- "$CANARY" "$T/airlockd.log"
ok $? "not in airlockd's log"
! AL vault ls 2>&1 | grep -q -- "$CANARY"
ok $? "not in vault ls"
! grep -rl --exclude=vault.db -- "$CANARY" "$T/state" >/dev/null 2>&1
ok $? "not in any file of the state directory but vault.db"
b64=$(printf '%s' "$CANARY" | base64 -w0 | cut -c1-20)
! grep -q -- "$b64" "$T/vm-received"
ok $? "nor its base64 form in what the VM received"

# Request rate, on request (AIRLOCK_PERF=1, needs wrk): keep-alive HTTPS requests
# (1 thread, 3 connections, 3 s) from the VM through inspect (one injected header,
# redaction on) and through a splice to the same origin, and from the host
# namespace straight to it; airlockd's CPU time per request.  No assertion.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$(al_worker)/stat"; }
wrk_rps() { sed -n 's/^Requests\/sec: *\([0-9.]*\).*/\1/p'; }
wrk_n() { sed -n 's/^ *\([0-9]*\) requests in.*/\1/p'; }
if [ -n "${AIRLOCK_PERF:-}" ] && command -v wrk >/dev/null; then
	for i in 1 2; do
		for m in inspect splice direct; do
			c0=$(cpu_ticks)
			case $m in
			inspect) inV wrk -t1 -c3 -d3s https://api.test/ka ;;
			splice) inV wrk -t1 -c3 -d3s https://splice.test/ka ;;
			direct) inH wrk -t1 -c3 -d3s https://api.test/ka ;;
			esac >"$T/wrk" 2>&1
			c1=$(cpu_ticks)
			r=$(wrk_rps <"$T/wrk") nn=$(wrk_n <"$T/wrk")
			echo "# run $i $m: ${r:-?} req/s," \
			    "$(((c1 - c0) * 10000000 / $(getconf CLK_TCK) / ${nn:-1} / 10))" \
			    "us airlockd CPU per request ($nn requests)"
		done
	done
fi

pn_stop_checked
grep -A12 "Sanitizer" "$T/airlockd.log" | head -40 | sed 's/^/# /'
pn_done
