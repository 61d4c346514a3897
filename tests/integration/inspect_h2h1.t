#!/bin/bash
# tests/integration/inspect_h2h1.t: an HTTP/2 VM client to an HTTP/1.1-only origin
# through inspection (proxy/proxy_h2.c, h2_h1: each stream one HTTP/1.1 exchange
# of the upstream connection, one at a time), end to end through the real
# enforcement path (tests/lib/proxynet.sh).  Origins in the "internet" namespace:
# h1.test (tests/tools/origin, HTTP/1.1 only, every byte it gets recorded), h2.test
# (tests/tools/h2origin.py, HTTP/2: the positive control).  A canary secret bound
# to h1.test, injected as Authorization.
#
# Covers, with curl --http2 and nghttp (real clients): HTTP/2 towards the VM,
# HTTP/1.1 towards the origin, audited upstream_protocol http/1.1 per stream; GET;
# POST with a Content-Length body and with one of unknown length (chunked
# upstream), as the origin received them; a denied path (403) beside an allowed
# stream on one connection; two streams served one after the other on one
# keep-alive upstream connection; the injected value at the origin, never at the
# VM, redacted in an echo split across 7-byte chunks; placeholder exfiltration per
# stream (field, body); malformed origin answers: Content-Length with
# Transfer-Encoding (502), a bad chunk after the head (the stream reset), bytes
# past a response's end (audited, the connection not reused); gRPC to the HTTP/1.1
# origin: grpc-status 14 with grpc_needs_h2, nothing sent; an HTTP/1.1 VM client
# still HTTP/1.1 both ways; the h2 origin still gets HTTP/2 (upstream_protocol h2);
# the canary in no byte the VM got, no log, no audit record.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/proxynet.sh
pn_require curl openssl nghttp /usr/bin/python3
if ! /usr/bin/python3 -c 'import h2' 2>/dev/null; then
	echo "1..0 # SKIP python3-h2 missing"
	exit 0
fi

CANARY='cAnArY-h2h1-5e3cr3t-Val-7a6b5c4d'
PH='AIRLOCK_PH_H2H1CANARY_0123456789'
PY=/usr/bin/python3

set -e
pn_setup h2h1
pn_vm V 0
inV() { ip netns exec "$V" "$@"; }
ip netns exec "$I" ip addr add 11.0.0.3/24 dev eth0
pn_hosts "11.0.0.2 h2.test" "11.0.0.3 h1.test"
origin_cert "$T" h2.test h2.test
origin_cert "$T" h1.test h1.test

fifo=$(mktemp -u "$T/py.XXXXXX")
mkfifo "$fifo"
: >"$T/rec-h2"
ip netns exec "$I" "$PY" tests/tools/h2origin.py 11.0.0.2 443 "$T/h2.test.pem" \
    "$T/h2.test.key" h2.test "$T/rec-h2" >"$fifo" 2>"$T/h2origin.log" &
ORIGIN_PIDS="$ORIGIN_PIDS $!"
read -r -t 10 line <"$fifo" || true
rm -f "$fifo"
[ "$line" = ready ]
: >"$T/rec-h1"
ORIGIN_RECORD="$T/rec-h1" origin_start "$I" tls 11.0.0.3 443 h1.test \
    "$T/h1.test.pem" "$T/h1.test.key"

cat >"$T/airlock.json" <<EOF
{ "state_dir": "$T/state" }
EOF
printf '%s' "$CANARY" | "$AIRLOCK" --config "$T/airlock.json" vault put canary \
    --host h1.test --placeholder "$PH" >/dev/null
cat >"$T/policy.json" <<'EOF'
{ "policy": "h2h1-test",
  "rules": [
    { "id": "h1", "host": "h1.test",
      "http": { "methods": ["GET", "POST", "HEAD"],
                "paths": ["/", "/echo*", "/conn*", "/ka", "/bad-*", "/g.Svc/*"] },
      "inject": [ { "secret": "canary", "header": "Authorization",
                    "value": "Bearer {secret}" } ] },
    { "id": "h2", "host": "h2.test", "tls": "inspect" }
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
audit_has() { sleep 0.2; grep -q -- "$1" "$T/audit.jsonl"; }
rec_has() { grep -q -- "$1" "$T/rec-h1"; }

# --- allowed, translated ---------------------------------------------------------
out=$(h2curl -w ' %{http_version}' https://h1.test/ | keep)
[ "$out" = "origin h1.test
 2" ]
ok $? "curl --http2 to the HTTP/1.1-only origin: HTTP/2 to the VM ('$(echo $out)')"
rec_has "^GET / HTTP/1.1"$'\r'"\$" && rec_has "^Host: h1.test"$'\r'"\$" &&
    rec_has "^Authorization: Bearer $CANARY"$'\r'"\$"
ok $? "the origin got an HTTP/1.1 request, with the canary in the injected field"
! grep -qi "^te:\|^:authority\|^upgrade:" "$T/rec-h1"
ok $? "no HTTP/2 pseudo-field or connection-specific field reached the origin"
audit_has '"event":"request".*"dst":"h1.test:443","tls":"inspect","method":"GET","path":"/","status":200,"decision":"allow","rule":"h1".*"inject":\["canary"\].*"protocol":"h2","stream":1,"upstream_protocol":"http/1.1"'
ok $? "one request record for the stream: protocol h2, upstream_protocol http/1.1"

: >"$T/rec-h1"
out=$(h2curl --data-binary 'hello-cl-body' https://h1.test/echo | keep)
rec_has "^POST /echo HTTP/1.1" && rec_has "^Content-Length: 13"$'\r'"\$" &&
    rec_has "hello-cl-body" && ! rec_has "^Transfer-Encoding" &&
    echo "$out" | grep -q "hello-cl-body"
ok $? "POST with content-length: Content-Length upstream, the body as sent"
: >"$T/rec-h1"
out=$(printf 'chunky-body' | h2curl -T - -X POST https://h1.test/echo | keep)
rec_has "^Transfer-Encoding: chunked"$'\r'"\$" && rec_has "^b"$'\r'"\$" &&
    rec_has "^chunky-body"$'\r'"\$" && rec_has "^0"$'\r'"\$" &&
    ! rec_has "^Content-Length" && echo "$out" | grep -q "chunky-body"
ok $? "POST of unknown length: chunked upstream, the body as one chunk and the last"

# --- several streams on one connection -------------------------------------------------
out=$(inV nghttp -v https://h1.test/private https://h1.test/ka 2>&1 | keep)
echo "$out" | grep -q ":status: 403" && echo "$out" | grep -q ":status: 200" &&
    echo "$out" | grep -q "^origin h1.test"
ok $? "nghttp, two streams: the denied path gets its 403, the other its answer"
audit_has '"path":"/private".*"reason":"path_not_allowed".*"protocol":"h2".*"upstream_protocol":"http/1.1"'
ok $? "... the denial audited for its stream"
out=$(inV nghttp https://h1.test/conn https://h1.test/conn-echo 2>&1 | keep)
seen=$(echo "$out" | grep -o "conn [0-9]* req [0-9]*" | sort -u)
nc=$(echo "$seen" | sed "s/ req .*//" | sort -u | wc -l)
echo "$seen" | grep -q "req 1\$" && echo "$seen" | grep -q "req 2\$" && [ "$nc" = 1 ]
ok $? "two streams, one after the other on one keep-alive upstream connection ($(echo $seen))"

# --- injection and redaction ----------------------------------------------------------
out=$(h2curl -D "$T/hd1" https://h1.test/echo-chunked | keep)
cat "$T/hd1" >>"$T/vm-received"
echo "$out" | grep -q "^Authorization: Bearer $PH" && ! echo "$out" | grep -q -- "$CANARY" &&
    grep -q "^x-echo: head-only" "$T/hd1"
ok $? "the injected value echoed back in 7-byte chunks comes back redacted"
audit_has '"event":"exfil".*"reason":"secret_redacted".*"upstream_protocol":"http/1.1"'
ok $? "... with an exfil record"
! grep -qi "^transfer-encoding\|^connection\|^keep-alive" "$T/hd1"
ok $? "no connection-specific field of the origin's reached the VM"

# --- placeholders, per stream ---------------------------------------------------------
: >"$T/rec-h1"
code=$(h2curl -o /dev/null -w '%{http_code}' -H "X-Token: $PH" https://h1.test/echo)
[ "$code" = 403 ] && audit_has '"event":"exfil".*"reason":"placeholder_in_header".*"upstream_protocol":"http/1.1"'
ok $? "placeholder in a field: 403 + exfil ($code)"
code=$(h2curl -o /dev/null -w '%{http_code}' --data "x=$PH" https://h1.test/echo)
[ "$code" = 403 ] && audit_has '"reason":"placeholder_in_body".*"upstream_protocol":"http/1.1"'
ok $? "placeholder in DATA: 403 + exfil ($code)"
! grep -q -- "$PH" "$T/rec-h1" && ! rec_has "X-Token"
ok $? "no placeholder reached h1.test, nor the refused head"
# The head waits for a small body: an origin that answers at once ("/" does not
# read the body) never sees the request, and the VM gets the refusal, not the
# origin's answer (the demo's step 3).
: >"$T/rec-h1"
code=$(h2curl -o "$T/ex.out" -w '%{http_code}' -X POST --data "token=$PH" https://h1.test/)
[ "$code" = 403 ] && grep -q placeholder_in_body "$T/ex.out" && [ ! -s "$T/rec-h1" ]
ok $? "a placeholder in a small body to an origin that answers early: 403, the origin saw no byte ($code, $(wc -c <"$T/rec-h1") bytes)"
code=$(h2curl -o /dev/null -w '%{http_code}' -X POST --data "token=nothing" https://h1.test/)
[ "$code" = 200 ] && rec_has "Content-Length: 13"
ok $? "... and the same body without it goes through (positive control, $code)"
out=$(h2curl -o /dev/null -w '%{http_code} ' https://h1.test/ -o /dev/null \
    "https://h1.test/echo?k=$PH" -o /dev/null https://h1.test/echo)
[ "$out" = "200 403 200 " ]
ok $? "one connection, three streams: the one with a placeholder refused, the others go on ($out)"

# --- malformed origin answers ----------------------------------------------------------
# (a second apart: denials of one reason within a second are aggregated into one record)
code=$(h2curl -o /dev/null -w '%{http_code}' https://h1.test/bad-clte)
[ "$code" = 502 ] && audit_has '"path":"/bad-clte".*"reason":"upstream_http_malformed".*"upstream_protocol":"http/1.1"'
ok $? "Content-Length with Transfer-Encoding from the origin: 502 upstream_http_malformed ($code)"
sleep 1.1
h2curl -o "$T/bc" https://h1.test/bad-chunk 2>"$T/bc.err"
rc=$?
[ "$rc" != 0 ] && ! grep -qs "not a chunk" "$T/bc" &&
    audit_has '"path":"/bad-chunk".*"reason":"upstream_http_malformed"'
ok $? "a bad chunk after the head: the stream is reset (curl $rc), audited"
sleep 1.1
out=$(h2curl https://h1.test/bad-extra | keep)
[ "$out" = "first" ] && ! grep -q SMUGGLED "$T/vm-received" &&
    audit_has '"event":"request",.*"decision":"deny".*"reason":"upstream_http_malformed",.*"protocol":"h2","upstream_protocol":"http/1.1"'
ok $? "bytes past a response's end: the response passes, the rest audited, never passed on"

# --- gRPC ------------------------------------------------------------------------------
: >"$T/rec-h1"
printf '\0\0\0\0\0' >"$T/g5"
h2curl -D "$T/gh" -o /dev/null -H 'content-type: application/grpc' -H 'te: trailers' \
    --data-binary @"$T/g5" https://h1.test/g.Svc/Call
grep -q "^grpc-status: 14" "$T/gh" && grep -q "^grpc-message: .*HTTP/1.1 only" "$T/gh" &&
    audit_has '"path":"/g.Svc/Call".*"reason":"grpc_needs_h2"'
ok $? "gRPC to the HTTP/1.1 origin: grpc-status 14 UNAVAILABLE, grpc_needs_h2"
! rec_has "g.Svc"
ok $? "... and nothing of it reached the origin"

# --- other protocols as they were ------------------------------------------------------
out=$(inV curl -sS --max-time 8 --http1.1 --cacert "$T/ca-t1.pem" -w ' %{http_version}' https://h1.test/ | keep)
[ "$out" = "origin h1.test
 1.1" ]
ok $? "an HTTP/1.1 VM client: HTTP/1.1 both ways ('$(echo $out)')"
out=$(h2curl -w ' %{http_version}' https://h2.test/ | keep)
[ "$out" = "origin h2.test
 2" ] && audit_has '"dst":"h2.test:443".*"protocol":"h2","stream":1,"upstream_protocol":"h2"'
ok $? "positive control: the h2 origin still gets HTTP/2 (upstream_protocol h2)"

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
