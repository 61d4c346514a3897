#!/bin/bash
# tests/integration/inspect_pool.t: the upstream connection pool of inspected
# connections (proxy/proxy_pool.c, proxy/proxy_inspect.c) through the real
# enforcement path (tests/lib/proxynet.sh).  The origin (tests/tools/origin.c, its
# "/conn" paths) says in each answer which of its TCP connections served it, and
# records every byte it gets; each curl in a VM namespace is a new VM connection.
# One worker thread, so every connection meets the same pool.
#
# Two sandboxes (p1 in VM V, p2 in VM W, the same policy bytes), a canary secret
# injected on api.test; alias.test is the same origin address and certificate.
#  (1) two VM connections one after the other: one upstream connection, the second
#      audited "upstream_reused"; an h2-offering client gets an upstream of its own
#      kind, reused the same way; plain HTTP is pooled too;
#  (2) never across sandboxes, (3) never across names (same origin address);
#  (4) never after an incomplete response (the VM resets mid-body);
#  (5) never after "Connection: close", nor after HTTP/1.0 without keep-alive (the
#      origin goes on serving either, so a pooled one would show);
#  (7) the origin closing an idle pooled connection: noticed while idle, and the
#      next VM connection dials, unharmed;
#  (8) a pooled connection the origin drops the next request on: a GET is sent
#      again on a new connection once and answered; a POST is not (502, the origin
#      saw it once);
#  (9) a reload that edits p1's policy closes p1's idle connections (p2's stay);
#      one that removes a name: denied as before, nothing reaches its origin;
# (10) a rotated secret (same policy, so the pooled connection stays): the next VM
#      connection's request on it carries the new value and not the old one, and
#      the echo of it is redacted; the canary is in no byte a VM got, the audit log
#      or airlockd's log;
#  (6) at last, airlockd again with upstream_pool_idle_ms 300: an idle connection
#      expires and the next VM connection dials.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/proxynet.sh
pn_require curl openssl python3 perl

CANARY='cAnArY-p00l-Val-5d1c2b3a49f8e7'
ROTATED='r0tAtEd-p00l-Val-0a9b8c7d6e5f4'
PH='AIRLOCK_PH_POOLCANARY_0123456789ab'

set -e
pn_setup ipl
pn_vm V 0
pn_vm W 1
inV() { ip netns exec "$V" "$@"; }
inW() { ip netns exec "$W" "$@"; }
ip netns exec "$I" ip addr add 11.0.0.3/24 dev eth0
pn_hosts "11.0.0.2 api.test alias.test plain.test" "11.0.0.3 gone.test"
origin_cert "$T" api.test api.test alias.test
origin_cert "$T" gone.test gone.test
: >"$T/rec-api"
: >"$T/rec-gone"
ORIGIN_RECORD="$T/rec-api" ORIGIN_CLOSE_FLAG="$T/close-flag" \
    origin_start "$I" tls 11.0.0.2 443 api.test "$T/api.test.pem" "$T/api.test.key"
ORIGIN_RECORD="$T/rec-gone" origin_start "$I" tls 11.0.0.3 443 gone.test \
    "$T/gone.test.pem" "$T/gone.test.key"
ORIGIN_RECORD="$T/rec-plain" origin_start "$I" http 11.0.0.2 80 plain.test
cat >"$T/airlock.json" <<EOF
{ "state_dir": "$T/state" }
EOF
AL() { "$AIRLOCK" --config "$T/airlock.json" "$@"; }
printf '%s' "$CANARY" | AL vault put canary --host api.test --placeholder "$PH" \
    >/dev/null
policy() {		# NAME FILE [GONE-RULE]
	cat >"$2" <<EOF
{ "policy": "$1",
  "rules": [
    { "id": "api", "host": "api.test",
      "inject": [ { "secret": "canary", "header": "Authorization",
                    "value": "Bearer {secret}" } ] },
    { "id": "alias", "host": "alias.test", "tls": "inspect" },
    ${3:-}
    { "id": "plain", "host": "plain.test", "ports": [80], "protocol": "http" } ] }
EOF
}
GONE='{ "id": "gone", "host": "gone.test", "tls": "inspect" },'
policy pool-a "$T/p1.json" "$GONE"
policy pool-a "$T/p2.json" "$GONE"
set +e
PN_WORKERS=1 pn_start_or_skip "\"upstream_ca_file\": \"$T/ca.pem\", \"upstream_pool_idle_ms\": 120000"
pn_attach p1 0 "$T/p1.json"
ok $? "net attach p1"
pn_attach p2 1 "$T/p2.json"
ok $? "net attach p2"
AL ca cert p1 >"$T/p1-ca.pem" 2>/dev/null
AL ca cert p2 >"$T/p2-ca.pem" 2>/dev/null

: >"$T/vm-received"
# get NS CA URL [CURL-ARGS]: one VM connection (HTTP/1.1 only); the body on stdout
get() {
	local ns=$1 ca=$2 url=$3
	shift 3
	ip netns exec "$ns" curl -sS --http1.1 --max-time 10 --cacert "$ca" "$@" \
	    "$url" 2>&1 | tee -a "$T/vm-received"
}
vget() { get "$V" "$T/p1-ca.pem" "$@"; }
wget() { get "$W" "$T/p2-ca.pem" "$@"; }
# conn / reqno: the origin's connection and request numbers in an answer
conn() { sed -n 's/.*conn \([0-9][0-9]*\) req [0-9][0-9]*$/\1/p' | head -1; }
reqno() { sed -n 's/.*conn [0-9][0-9]* req \([0-9][0-9]*\)$/\1/p' | head -1; }
metric() {
	AL metrics 2>/dev/null |
	    awk -v k="$1" '$1 == k { print $2; f = 1 } END { if (!f) print 0 }'
}
# wait_metric NAME VALUE: until the sample is VALUE (10 s at most)
wait_metric() {
	local i
	for i in $(seq 100); do
		[ "$(metric "$1")" = "$2" ] && return 0
		sleep 0.1
	done
	return 1
}
# settled: airlockd closed every VM connection (each gave back its upstream or not)
settled() {
	wait_metric 'airlock_connections_live{sandbox="p1"}' 0 &&
	    wait_metric 'airlock_connections_live{sandbox="p2"}' 0
}
accepts() { grep -c '^accept' "$T/api.test-443.log"; }
last_connect() { grep "\"event\":\"connect\".*\"dst\":\"$1\"" "$T/audit.jsonl" | tail -1; }

# --- (1) reuse -----------------------------------------------------------------------
a=$(vget https://api.test/conn)
settled
b=$(vget https://api.test/conn)
settled
like "$a" '^origin api.test conn [0-9]+ req 1$' "p1: the first VM connection is answered ('$a')"
C1=$(echo "$a" | conn)
is "$(echo "$b" | conn) $(echo "$b" | reqno)" "$C1 2" \
    "p1: the second VM connection was served on the same upstream connection, its request 2"
is "$(accepts)" 1 "the origin saw one TCP connection for both"
last_connect api.test:443 | grep -q '"upstream_reused":1'
ok $? "the second VM connection's record says upstream_reused"
grep '"event":"connect".*"dst":"api.test:443"' "$T/audit.jsonl" | head -1 |
    grep -qv 'upstream_reused'
ok $? "... the first one's does not (it dialled)"
is "$(metric 'airlock_upstream_pool_lookups_total{sandbox="p1",result="hit"}')" 1 \
    "metrics: one pool hit for p1"
h1=$(inV curl -sS --max-time 10 --cacert "$T/p1-ca.pem" https://api.test/conn 2>&1)
settled
h2=$(inV curl -sS --max-time 10 --cacert "$T/p1-ca.pem" https://api.test/conn 2>&1)
settled
H1=$(echo "$h1" | conn)
H2=$(echo "$h2" | conn)
# It gets HTTP/2, translated into HTTP/1.1 exchanges (proxy_h2.c): that engine pools
# nothing, so neither takes the idle HTTP/1.1 upstream nor leaves its own behind.
[ -n "$H1" ] && [ -n "$H2" ] && [ "$H1" != "$C1" ] && [ "$H2" != "$C1" ] &&
    [ "$H2" != "$H1" ] && [ "$(echo "$h1" | reqno)" = 1 ] &&
    [ "$(echo "$h2" | reqno)" = 1 ]
ok $? "a client offering h2 (the origin declines it): an upstream of its own each, never pooled ($h1 / $h2)"
p_a=$(inV curl -sS --max-time 10 http://plain.test/conn 2>&1)
settled
p_b=$(inV curl -sS --max-time 10 http://plain.test/conn 2>&1)
settled
[ -n "$(echo "$p_a" | conn)" ] && [ "$(echo "$p_b" | reqno)" = 2 ]
ok $? "plain HTTP: the second VM connection reuses the first one's upstream ($p_a / $p_b)"

# --- (2) never across sandboxes ------------------------------------------------------
w1=$(wget https://api.test/conn)
settled
CW=$(echo "$w1" | conn)
[ -n "$CW" ] && [ "$CW" != "$C1" ] && [ "$CW" != "$H1" ]
ok $? "p2, same name and the same policy bytes: an upstream connection of its own ($w1)"
is "$(vget https://api.test/conn | conn)" "$C1" "p1 still gets its own back"
settled
is "$(wget https://api.test/conn | conn)" "$CW" "p2 gets its own back (positive control)"
settled

# --- (3) never across names ----------------------------------------------------------
n0=$(stat -c %s "$T/rec-api")
al=$(vget https://alias.test/conn)
settled
CA=$(echo "$al" | conn)
[ -n "$CA" ] && [ "$CA" != "$C1" ] && [ "$CA" != "$H1" ] && [ "$CA" != "$CW" ]
ok $? "alias.test, the same origin address: a connection of its own ($al)"
! tail -c +$((n0 + 1)) "$T/rec-api" | grep -q -- "$CANARY"
ok $? "... and nothing injected for api.test went on it"
is "$(vget https://alias.test/conn | conn)" "$CA" "alias.test's own is reused (positive control)"
settled

# --- (4) not after an incomplete response --------------------------------------------
before=$(accepts)
inV python3 - "$T/p1-ca.pem" <<'EOF' >"$T/stall.out" 2>&1
import socket, ssl, struct, sys
ctx = ssl.create_default_context(cafile=sys.argv[1])
ctx.set_alpn_protocols(["http/1.1"])
s = ctx.wrap_socket(socket.create_connection(("api.test", 443), timeout=10),
                    server_hostname="api.test")
s.sendall(b"GET /conn-stall HTTP/1.1\r\nHost: api.test\r\n\r\n")
got = b""
while got.count(b"x") < 500:
    d = s.recv(4096)
    if not d:
        break
    got += d
print("got", len(got))
# A reset mid-body: the response is not over.
s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
s.close()
EOF
grep -q '^got' "$T/stall.out"
ok $? "a VM connection read part of a body and reset ($(head -c 80 "$T/stall.out"))"
settled
st=$(vget https://api.test/conn)
settled
CS=$(echo "$st" | conn)
[ -n "$CS" ] && [ "$CS" != "$C1" ] && [ "$(accepts)" -gt "$before" ]
ok $? "the next VM connection dialled: the stalled one (conn $C1) was not kept ($st)"
C1=$CS

# --- (5) not after Connection: close, nor HTTP/1.0 without keep-alive ---------------
for p in conn-close conn-http10; do
	x=$(vget "https://api.test/$p")
	settled
	cx=$(echo "$x" | conn)
	y=$(vget https://api.test/conn)
	settled
	cy=$(echo "$y" | conn)
	[ "$cx" = "$C1" ] && [ -n "$cy" ] && [ "$cy" != "$cx" ]
	ok $? "/$p on the pooled connection $cx: not kept after it, the next VM connection dialled ($cy)"
	C1=$cy
done

# --- (7) the origin closes an idle pooled connection ---------------------------------
rm -f "$T/close-flag"
or0=$(metric 'airlock_upstream_pool_closed_total{reason="origin"}')
rt0=$(metric 'airlock_upstream_pool_retries_total{sandbox="p1"}')
x=$(vget https://api.test/conn-idle-close)
settled
CI=$(echo "$x" | conn)
touch "$T/close-flag"
wait_metric 'airlock_upstream_pool_closed_total{reason="origin"}' $((or0 + 1))
ok $? "the origin closed the idle pooled connection $CI: airlockd noticed while it was idle"
rm -f "$T/close-flag"
y=$(vget https://api.test/conn)
settled
cy=$(echo "$y" | conn)
[ -n "$cy" ] && [ "$cy" != "$CI" ]
ok $? "the next VM connection is answered on a new one ($y)"
is "$(metric 'airlock_upstream_pool_retries_total{sandbox="p1"}')" "$rt0" \
    "... without a retry (it was never handed out)"
C1=$cy

# --- (8) retries: GET once more, POST never ------------------------------------------
dg0=$(grep -c '^dropped GET' "$T/api.test-443.log")
x=$(vget https://api.test/conn-drop-next)
settled
CD=$(echo "$x" | conn)
y=$(vget https://api.test/conn)
settled
cy=$(echo "$y" | conn)
is "$(grep -c '^dropped GET' "$T/api.test-443.log")" $((dg0 + 1)) \
    "the origin dropped the GET sent on the pooled connection $CD"
[ -n "$cy" ] && [ "$cy" != "$CD" ] && [ "$(echo "$y" | reqno)" = 1 ]
ok $? "... which went again on a new connection and was answered ($y)"
is "$(metric 'airlock_upstream_pool_retries_total{sandbox="p1"}')" $((rt0 + 1)) \
    "... one retry counted"
last_connect api.test:443 | grep -q '"upstream_reused":1,"upstream_retried":1'
ok $? "... its connection's record says upstream_reused and upstream_retried"
np0=$(grep -c '^POST /conn' "$T/rec-api")
x=$(vget https://api.test/conn-drop-next)
settled
CP=$(echo "$x" | conn)
code=$(inV curl -s --http1.1 --max-time 10 --cacert "$T/p1-ca.pem" -o "$T/post.out" \
    -w '%{http_code}' -d 'x=1' https://api.test/conn)
cat "$T/post.out" >>"$T/vm-received"
settled
is "$code" 502 "a POST on a pooled connection the origin drops: 502, not sent again"
is "$(grep -c '^POST /conn' "$T/rec-api")" $((np0 + 1)) "... the origin saw that POST once"
is "$(grep -c '^dropped POST' "$T/api.test-443.log")" 1 "... on the pooled connection $CP"
grep -q '"event":"request".*"method":"POST","path":"/conn","status":502,"decision":"deny".*"reason":"upstream_closed"' "$T/audit.jsonl"
ok $? "... audited upstream_closed"

# --- (9) reloads ---------------------------------------------------------------------
x=$(vget https://api.test/conn)
settled
CR=$(echo "$x" | conn)
w=$(wget https://api.test/conn)
settled
CW=$(echo "$w" | conn)
g=$(vget https://gone.test/conn)
settled
like "$g" '^origin gone.test conn 1 req 1$' "gone.test reached while allowed ('$g')"
MG=$(pn_mapped "$V" gone.test)
pu0=$(metric 'airlock_upstream_pool_closed_total{reason="reload"}')
idle0=$(metric airlock_upstream_pool_idle)
policy pool-b "$T/p1.json"		# edited: gone.test removed
AL reload >/dev/null 2>&1
ok $? "reload: p1's policy edited, gone.test removed from it"
# Its inspected names changed: a new sandbox CA, which the VM is given.
AL ca cert p1 >"$T/p1-ca.pem" 2>/dev/null
# p1's two (api.test, gone.test) and its h2 and alias.test ones go; p2's stays.
wait_metric airlock_upstream_pool_idle 1
ok $? "p1's idle connections closed by the reload, p2's kept ($idle0 -> $(metric airlock_upstream_pool_idle))"
[ "$(metric 'airlock_upstream_pool_closed_total{reason="reload"}')" -gt "$pu0" ]
ok $? "... counted as closed by a reload"
x=$(vget https://api.test/conn)
settled
cx=$(echo "$x" | conn)
[ -n "$cx" ] && [ "$cx" != "$CR" ]
ok $? "p1 under its new policy: a new upstream connection ($x)"
is "$(wget https://api.test/conn | conn)" "$CW" "p2, whose policy did not change: its pooled one still serves"
settled
ga=$(grep -c '^accept' "$T/gone.test-443.log")
gr=$(stat -c %s "$T/rec-gone")
inV curl -sS --http1.1 --max-time 8 --cacert "$T/p1-ca.pem" \
    --resolve "gone.test:443:$MG" https://gone.test/conn >"$T/gone.out" 2>&1
rc=$?
settled
[ "$rc" -ne 0 ] && ! grep -q origin "$T/gone.out"
ok $? "gone.test after the reload: refused ($(head -c 80 "$T/gone.out"))"
grep -q '"event":"deny".*"dst":"gone.test:443".*"reason":"name_not_allowed"' "$T/audit.jsonl"
ok $? "... audited name_not_allowed"
[ "$(grep -c '^accept' "$T/gone.test-443.log")" = "$ga" ] &&
    [ "$(stat -c %s "$T/rec-gone")" = "$gr" ]
ok $? "... and not one byte reached gone.test, on any connection"

# --- (10) a rotated secret on a reused connection ------------------------------------
x=$(vget https://api.test/conn-echo)
settled
CE=$(echo "$x" | conn)
echo "$x" | grep -q "^Authorization: Bearer $PH" && ! echo "$x" | grep -q -- "$CANARY"
ok $? "the injected canary echoed back: redacted to the placeholder"
grep -q "^Authorization: Bearer $CANARY" "$T/rec-api"
ok $? "... it reached the origin (positive control)"
printf '%s' "$ROTATED" | AL vault put canary --host api.test >/dev/null
AL reload >/dev/null 2>&1
ok $? "the canary rotated, reload (p1's policy unchanged)"
sleep 0.3	# the worker's recheck after the reload (it keeps the connection)
n0=$(stat -c %s "$T/rec-api")
y=$(vget https://api.test/conn-echo)
settled
is "$(echo "$y" | conn)" "$CE" "the next VM connection reuses the same upstream connection"
tail -c +$((n0 + 1)) "$T/rec-api" >"$T/req2"
grep -q "^Authorization: Bearer $ROTATED" "$T/req2" && ! grep -q -- "$CANARY" "$T/req2"
ok $? "... its request carries the new value, and nothing of the first request's"
echo "$y" | grep -q "^Authorization: Bearer $PH" && ! echo "$y" | grep -q -- "$ROTATED"
ok $? "... the echo of the new value is redacted on the reused connection"
grep -q '"event":"exfil".*"reason":"secret_redacted".*"secret":"canary"' "$T/audit.jsonl"
ok $? "... with exfil records"
! grep -q -- "$CANARY" "$T/vm-received" && ! grep -q -- "$ROTATED" "$T/vm-received"
ok $? "no value of the secret in any byte a VM received"
! grep -q -- "$CANARY" "$T/audit.jsonl" "$T/airlockd.log" &&
    ! grep -q -- "$ROTATED" "$T/audit.jsonl" "$T/airlockd.log"
ok $? "... nor in the audit log or airlockd's log"

AL metrics >"$T/m.txt" 2>/dev/null
if command -v promtool >/dev/null; then
	promtool check metrics <"$T/m.txt" >"$T/promtool.out" 2>&1
	ok $? "promtool check metrics accepts the pool's metrics ($(head -c 200 "$T/promtool.out"))"
else
	skip "no promtool"
fi
pn_stop_checked

# --- (6) idle expiry ------------------------------------------------------------------
PN_WORKERS=1 pn_start_or_skip "\"upstream_ca_file\": \"$T/ca.pem\", \"upstream_pool_idle_ms\": 300"
x=$(vget https://api.test/conn)
settled
CX=$(echo "$x" | conn)
wait_metric 'airlock_upstream_pool_closed_total{reason="expired"}' 1
ok $? "upstream_pool_idle_ms 300: the idle connection $CX expired"
y=$(vget https://api.test/conn)
settled
cy=$(echo "$y" | conn)
[ -n "$CX" ] && [ -n "$cy" ] && [ "$cy" != "$CX" ]
ok $? "... and the next VM connection dialled ($x / $y)"
pn_stop_checked
pn_done
