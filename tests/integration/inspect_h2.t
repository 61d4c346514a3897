#!/bin/bash
# tests/integration/inspect_h2.t: HTTP/2 through inspection (proxy/proxy_h2.c) end to
# end, through the real enforcement path (tests/lib/proxynet.sh).  Origins in the
# "internet" namespace: h2.test (tests/tools/h2origin.py, HTTP/2 only), h1.test
# (tests/tools/origin, HTTP/1.1 only), grpc.test (tests/tools/grpc_peer.py, a TLS
# gRPC server).  A canary secret bound to h2.test and grpc.test, injected as
# Authorization.
#
# Covers: curl --http2 and nghttp through an inspected rule: allowed, denied (403
# with the HTTP/1.1 text), injected (never indexed), redacted (fields, DATA,
# trailers), placeholder exfiltration per stream (URL, field, body, trailers),
# one record per stream (protocol h2, stream id); a denied stream beside allowed
# ones on one connection; an h2 VM client to an HTTP/1.1-only origin (HTTP/2 to the
# VM, translated: inspect_h2h1.t has the rest) and an HTTP/1.1 client to the h2
# origin; gRPC unary and server-streaming
# with injected authorization metadata the client never holds, a method outside
# the rule's paths: PERMISSION_DENIED naming the rule (nghttp does not verify
# certificates: it checks the protocol, curl and gRPC the chain); crafted frames
# (tests/tools/h2raw.py, python3-h2): every smuggling and flood item refused; the
# canary in no byte the VM got, no log, no audit record.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/proxynet.sh
pn_require curl openssl nghttp /usr/bin/python3
if ! /usr/bin/python3 -c 'import h2, grpc' 2>/dev/null; then
	echo "1..0 # SKIP python3-h2 or python3-grpcio missing"
	exit 0
fi

CANARY='cAnArY-h2-5e3cr3t-Val-8f1d2c3b4a'
PH='AIRLOCK_PH_H2CANARY_0123456789ab'
PY=/usr/bin/python3

set -e
pn_setup h2i
pn_vm V 0
inV() { ip netns exec "$V" "$@"; }
for a in 3 4; do
	ip netns exec "$I" ip addr add 11.0.0.$a/24 dev eth0
done
pn_hosts "11.0.0.2 h2.test" "11.0.0.3 h1.test" "11.0.0.4 grpc.test"
origin_cert "$T" h2.test h2.test
origin_cert "$T" h1.test h1.test
origin_cert "$T" grpc.test grpc.test

# A Python origin in the internet namespace, killed with the others (by PID).
py_origin() {	# LOG SCRIPT ARGS...: waits for its "ready"
	local log=$1 fifo line
	shift
	fifo=$(mktemp -u "$T/py.XXXXXX")
	mkfifo "$fifo"
	ip netns exec "$I" "$PY" "$@" >"$fifo" 2>"$log" &
	ORIGIN_PIDS="$ORIGIN_PIDS $!"
	read -r -t 10 line <"$fifo" || true
	rm -f "$fifo"
	[ "$line" = ready ]
}
: >"$T/rec-h2"
py_origin "$T/h2origin.log" tests/tools/h2origin.py 11.0.0.2 443 "$T/h2.test.pem" \
    "$T/h2.test.key" h2.test "$T/rec-h2"
ORIGIN_RECORD="$T/rec-h1" origin_start "$I" tls 11.0.0.3 443 h1.test \
    "$T/h1.test.pem" "$T/h1.test.key"
: >"$T/rec-grpc"
py_origin "$T/grpc.log" tests/tools/grpc_peer.py serve 11.0.0.4 443 \
    "$T/grpc.test.pem" "$T/grpc.test.key" "$T/rec-grpc"

cat >"$T/airlock.json" <<EOF
{ "state_dir": "$T/state" }
EOF
printf '%s' "$CANARY" | "$AIRLOCK" --config "$T/airlock.json" vault put canary \
    --host h2.test --host grpc.test --placeholder "$PH" >/dev/null
cat >"$T/policy.json" <<'EOF'
{ "policy": "h2-test",
  "rules": [
    { "id": "h2", "host": "h2.test",
      "http": { "methods": ["GET", "POST", "HEAD"],
                "paths": ["/", "/echo*", "/trailers", "/size/**", "/reset"] },
      "inject": [ { "secret": "canary", "header": "Authorization",
                    "value": "Bearer {secret}" } ] },
    { "id": "h1", "host": "h1.test", "tls": "inspect" },
    { "id": "grpc", "host": "grpc.test",
      "http": { "methods": ["POST"], "paths": ["/test.Echo/*"] },
      "inject": [ { "secret": "canary", "header": "Authorization",
                    "value": "Bearer {secret}" } ] }
  ] }
EOF
set +e
pn_start_or_skip "\"upstream_ca_file\": \"$T/ca.pem\""
pn_attach t1 0 "$T/policy.json" 2>"$T/attach.err"
ok $? "net attach t1 (an inspecting policy)"
inH "$AIRLOCK" --config "$T/airlock.json" ca cert t1 >"$T/ca-t1.pem" 2>/dev/null
: >"$T/vm-received"
keep() { tee -a "$T/vm-received"; }
h2curl() { inV curl -sS --max-time 8 --http2 --cacert "$T/ca-t1.pem" "$@"; }
audit_has() { grep -q -- "$1" "$T/audit.jsonl"; }

# --- allowed, injected, redacted ------------------------------------------------
out=$(h2curl -w ' %{http_version}' https://h2.test/ | keep)
[ "$out" = "origin h2.test
 2" ]
ok $? "curl --http2: HTTP/2 to the VM, the h2 origin answers ('$(echo $out)')"
grep -q "^authorization: Bearer $CANARY\$" "$T/rec-h2"
ok $? "the canary arrived at h2.test in the injected authorization field"
sleep 0.3
audit_has '"event":"request".*"dst":"h2.test:443","tls":"inspect","method":"GET","path":"/","status":200,"decision":"allow","rule":"h2","rule_file":"'"$T"'/policy.json","inject":\["canary"\].*"protocol":"h2","stream":1'
ok $? "one request record for the stream: protocol h2, stream 1, rule and its file, inject"
out=$(h2curl -D "$T/hd1" https://h2.test/echo | keep)
cat "$T/hd1" >>"$T/vm-received"
echo "$out" | grep -q "^authorization: Bearer $PH\$" &&
    grep -qi "^x-auth-seen: Bearer $PH" "$T/hd1" && ! grep -q -- "$CANARY" "$T/hd1"
ok $? "the injected value echoed back (DATA and a response field) comes back redacted"
audit_has '"event":"exfil".*"reason":"secret_redacted".*"protocol":"h2"'
ok $? "... with an exfil record"
out=$(inV nghttp -v https://h2.test/trailers 2>&1 | keep)
echo "$out" | grep -q "x-echo: Bearer $PH" && ! echo "$out" | grep -q -- "$CANARY" &&
    echo "$out" | grep -q "grpc-status: 0"
ok $? "nghttp: response trailers pass, their values redacted"
echo data >"$T/d1"
out=$(inV nghttp -v -d "$T/d1" --trailer "x-t: $PH" https://h2.test/echo 2>&1 | keep)
echo "$out" | grep -q ":status: 403" &&
    audit_has '"event":"exfil".*"reason":"placeholder_in_header".*"where":"trailer"'
ok $? "nghttp: a placeholder in request trailers: 403 + exfil"
out=$(inV nghttp -v -d "$T/d1" --trailer "x-t: fine" https://h2.test/echo 2>&1 | keep)
echo "$out" | grep -q ":status: 200" && grep -q "^trailer:x-t: fine" "$T/rec-h2"
ok $? "nghttp: request trailers without placeholders reach the origin"
nb=$(h2curl https://h2.test/size/3000000 | wc -c)
[ "$nb" = 3000000 ]
ok $? "3 MB download over HTTP/2 through the redactor ($nb bytes)"
head -c 700000 /dev/zero | tr '\0' u >"$T/up.bin"
nb=$(h2curl --data-binary @"$T/up.bin" https://h2.test/echo | wc -c)
[ "$nb" -gt 700000 ]
ok $? "700 kB upload over HTTP/2, flow-controlled both ways ($nb bytes)"

# --- refusals per stream ----------------------------------------------------------
code=$(h2curl -o "$T/o1" -w '%{http_code}' https://h2.test/private)
[ "$code" = 403 ] && grep -q "denied by sandbox t1, policy h2-test, rule h2: path_not_allowed" "$T/o1"
ok $? "a path the rule does not allow: 403 with the HTTP/1.1 text ($code)"
code=$(h2curl -o /dev/null -w '%{http_code}' -X DELETE https://h2.test/)
[ "$code" = 403 ] && audit_has '"method":"DELETE".*"reason":"method_not_allowed".*"protocol":"h2"'
ok $? "a method the rule does not allow: 403, audited per stream ($code)"
code=$(h2curl -o /dev/null -w '%{http_code}' -H "X-Token: $PH" https://h2.test/echo)
[ "$code" = 403 ] && audit_has '"event":"exfil".*"reason":"placeholder_in_header".*"protocol":"h2"'
ok $? "placeholder in another field: 403 + exfil ($code)"
code=$(h2curl -o /dev/null -w '%{http_code}' "https://h2.test/echo?k=$PH")
[ "$code" = 403 ] && audit_has '"reason":"placeholder_in_url".*"protocol":"h2"'
ok $? "placeholder in :path: 403 + exfil ($code)"
code=$(h2curl -o /dev/null -w '%{http_code}' --data "x=$PH" https://h2.test/echo)
[ "$code" = 403 ] && audit_has '"reason":"placeholder_in_body".*"protocol":"h2"'
ok $? "placeholder in DATA: 403 + exfil ($code)"
! grep -q -- "$PH" "$T/rec-h2"
ok $? "no placeholder reached h2.test"
out=$(h2curl -o /dev/null -w '%{http_code} ' https://h2.test/ -o /dev/null \
    https://h2.test/private -o /dev/null https://h2.test/echo)
[ "$out" = "200 403 200 " ]
ok $? "one connection, three streams: the denied one gets its 403, the others go on ($out)"
code=$(h2curl -o /dev/null -w '%{http_code}' -H "Host: other.test" https://h2.test/)
[ "$code" = 421 ] && audit_has '"reason":"host_mismatch".*"protocol":"h2"'
ok $? "host disagreeing with :authority: 421 host_mismatch ($code)"
audit_has '"reason":"host_mismatch".*"protocol":"h2".*"host":"other.test"'
ok $? "... its record names the host the VM sent"

# --- HTTP/2 and HTTP/1.1 origins ----------------------------------------------------
out=$(h2curl -w ' %{http_version}' https://h1.test/ | keep)
[ "$out" = "origin h1.test
 2" ]
ok $? "curl --http2 to an HTTP/1.1-only origin: HTTP/2 to the VM, translated (inspect_h2h1.t) ('$(echo $out)')"
out=$(inV curl -sS --max-time 8 --http1.1 --cacert "$T/ca-t1.pem" -w ' %{http_version}' https://h2.test/ | keep)
[ "$out" = "origin h2.test (http/1.1)
 1.1" ] && grep -q "^Authorization: Bearer $CANARY\$" "$T/rec-h2"
ok $? "an HTTP/1.1 client to the h2 origin: HTTP/1.1 both ways, injected ('$(echo $out)')"
inV nghttp https://h1.test/ >"$T/ng1" 2>&1
rc=$?
sleep 0.3
[ "$rc" = 0 ] && grep -q "^origin h1.test" "$T/ng1" &&
    audit_has '"dst":"h1.test:443".*"protocol":"h2","stream":1,"upstream_protocol":"http/1.1"'
ok $? "an h2-only client (nghttp) to an HTTP/1.1-only origin: served, translated"

# --- gRPC ---------------------------------------------------------------------------
G=$(inV $PY tests/tools/grpc_peer.py call grpc.test 443 "$T/ca-t1.pem" 2>&1 | keep)
echo "$G" | sed 's/^/# grpc: /'
echo "$G" | grep -q "^unary: auth=Bearer $PH\$"
ok $? "gRPC unary through airlock: the server saw the injected value (echo redacted)"
grep -q "authorization=Bearer $CANARY" "$T/rec-grpc"
ok $? "... and the gRPC server received the real value the client never held"
echo "$G" | grep -q "^stream: 3 messages"
ok $? "gRPC server-streaming: every message through"
echo "$G" | grep -q "^denied: StatusCode.PERMISSION_DENIED .*rule grpc: path_not_allowed"
ok $? "a method outside the rule's paths: PERMISSION_DENIED naming the rule"
audit_has '"dst":"grpc.test:443".*"path":"/test.Admin/Secret".*"reason":"path_not_allowed".*"protocol":"h2"'
ok $? "... audited for its stream"

# --- crafted frames: malformed and floods ------------------------------------------
M=$(pn_mapped "$V" h2.test)
raw() { inV timeout 20 $PY tests/tools/h2raw.py "$M" h2.test "$T/ca-t1.pem" "$@" 2>&1 | tail -1; }
for t in connection-field te-gzip upper-name crlf-value nul-value cl-mismatch \
    pseudo-after-regular pseudo-duplicate upgrade-h2c extended-connect; do
	out=$(raw "$t" 2>&1)
	case "$out" in
	"reset PROTOCOL_ERROR"*) ok 0 "malformed $t: RST_STREAM PROTOCOL_ERROR" ;;
	*) ok 1 "malformed $t: RST_STREAM PROTOCOL_ERROR (got '$out')" ;;
	esac
done
out=$(raw host-twice 2>&1)
case "$out" in
"status 421"|"reset PROTOCOL_ERROR") ok 0 "a second host field disagreeing with :authority: refused ($out)" ;;
*) ok 1 "a second host field disagreeing with :authority: refused (got '$out')" ;;
esac
out=$(raw connect 2>&1)
case "$out" in
"status 405"*) ok 0 "CONNECT: refused (405)" ;;
*) ok 1 "CONNECT: refused (got '$out')" ;;
esac
sleep 0.3
nm=$(grep -c '"reason":"http_malformed".*"protocol":"h2"' "$T/audit.jsonl")
[ "$nm" -ge 1 ]
ok $? "malformed streams audited http_malformed ($nm records, aggregated per second)"
! grep -q "^x-smuggle" "$T/rec-h2"
ok $? "none of the smuggled fields reached the origin"
for t in rapid-reset continuation-flood settings-flood ping-flood empty-data-flood \
    streams-over-limit; do
	out=$(raw "$t" 2>&1)
	case "$t:$out" in
	streams-over-limit:"refused"*) ok 0 "$t: refused ($out)" ;;
	*:"goaway ENHANCE_YOUR_CALM"*) ok 0 "$t: GOAWAY ENHANCE_YOUR_CALM" ;;
	*) ok 1 "$t: refused (got '$out')" ;;
	esac
done
# A policy's limits lower the HTTP/2 defaults (never raise them).
pn_vm V2 1
cat >"$T/low.json" <<'EOF'
{ "policy": "h2-low", "rules": [ { "id": "h2", "host": "h2.test", "tls": "inspect" } ],
  "limits": { "h2_streams": 5, "h2_resets_per_second": 10 } }
EOF
cat >"$T/high.json" <<'EOF'
{ "policy": "h2-high", "rules": [ { "id": "h2", "host": "h2.test", "tls": "inspect" } ],
  "limits": { "h2_streams": 1000 } }
EOF
! inH "$AIRLOCK" --config "$T/airlock.json" policy check "$T/high.json" >/dev/null 2>&1
ok $? "limits.h2_streams above airlock's own 100: the policy does not load"
inH "$AIRLOCK" --config "$T/airlock.json" net attach t2 --policy "$T/low.json" \
    --iface vh1 --guest-ip "$(pn_guest 1)" >/dev/null 2>&1
inH "$AIRLOCK" --config "$T/airlock.json" ca cert t2 >"$T/ca-t2.pem" 2>/dev/null
M2=$(pn_mapped "$V2" h2.test)
raw2() { ip netns exec "$V2" timeout 20 $PY tests/tools/h2raw.py "$M2" h2.test "$T/ca-t2.pem" "$@" 2>&1 | tail -1; }
out=$(raw2 streams-over-limit)
[ "$out" = "refused REFUSED_STREAM (stream 11)" ]
ok $? "limits.h2_streams 5: the sixth concurrent stream is refused ($out)"
out=$(raw2 rapid-reset)
[ "$out" = "goaway ENHANCE_YOUR_CALM" ]
ok $? "limits.h2_resets_per_second 10: rapid reset ends sooner ($out)"
out=$(raw after-flood 2>&1)
[ "$out" = "status 200" ]
ok $? "the daemon still answers a well-behaved HTTP/2 client ($out)"

# --- where the canary must never be ----------------------------------------------------
! grep -q -- "$CANARY" "$T/vm-received"
ok $? "the canary never reached the VM"
! grep -q -- "$CANARY" "$T/audit.jsonl"
ok $? "not in the audit log"
! grep -q -- "$CANARY" "$T/airlockd.log"
ok $? "not in airlockd's log"

pn_stop_checked
grep -A12 "Sanitizer" "$T/airlockd.log" | head -40 | sed 's/^/# /'
pn_done
