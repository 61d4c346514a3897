#!/bin/bash
# tests/integration/metrics.t: airlockd's Prometheus metrics through the real
# enforcement path (tests/lib/proxynet.sh).  Traffic of one sandbox (an inspected
# request allowed, one denied, a splice, a name DNS refuses, a port refused) then
# `airlock metrics`: promtool check metrics accepts it, and the counters say what
# happened.  The same text over HTTP on metrics_listen (127.0.0.1 in airlockd's
# namespace), unreachable from the VM; a loader that refuses any other address; and a
# real Prometheus server, in the host namespace, scraping it.  Needs root.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/proxynet.sh
pn_require curl openssl promtool prometheus

set -e
pn_setup mt
pn_vm V 0
inV() { ip netns exec "$V" "$@"; }
ip netns exec "$I" ip addr add 11.0.0.3/24 dev eth0
pn_hosts "11.0.0.2 api.test" "11.0.0.3 splice.test"
origin_cert "$T" api.test api.test
origin_cert "$T" splice.test splice.test
origin_start "$I" tls 11.0.0.2 443 api.test "$T/api.test.pem" "$T/api.test.key"
origin_start "$I" tls 11.0.0.3 443 splice.test "$T/splice.test.pem" \
    "$T/splice.test.key"
cat >"$T/policy.json" <<'EOF'
{ "policy": "metrics-test",
  "rules": [
    { "id": "api", "host": "api.test", "ports": [443], "tls": "inspect",
      "http": { "paths": ["/ok", "/ok/**"] } },
    { "id": "splice", "host": "splice.test", "ports": [443] }
  ] }
EOF
cat >"$T/airlock.json" <<EOF
{ "state_dir": "$T/state" }
EOF
"$AIRLOCK" --config "$T/airlock.json" ca init >/dev/null
set +e
PORT=19345
pn_start_or_skip "\"upstream_ca_file\": \"$T/ca.pem\", \"metrics_listen\": \"127.0.0.1:$PORT\""
pn_attach m1 0 "$T/policy.json"
ok $? "net attach m1"
AL() { inH "$AIRLOCK" --config "$T/airlock.json" "$@"; }
AL ca cert m1 >"$T/m1-ca.pem" 2>/dev/null

# --- traffic ---------------------------------------------------------------------
is "$(inV curl -sS --max-time 8 --cacert "$T/m1-ca.pem" https://api.test/ok 2>&1)" \
    "origin api.test" "an inspected request, allowed"
code=$(inV curl -s -o /dev/null -w '%{http_code}' --max-time 8 --cacert "$T/m1-ca.pem" \
    https://api.test/private)
is "$code" 403 "an inspected request, denied (path_not_allowed)"
is "$(inV curl -sS --max-time 8 --cacert "$T/ca.pem" https://splice.test/ 2>&1)" \
    "origin splice.test" "a spliced connection"
inV curl -s --max-time 5 https://nowhere.test/ >/dev/null 2>&1
[ $? -ne 0 ]
ok $? "a name DNS refuses"
M=$(pn_mapped "$V" api.test)
inV curl -s --max-time 5 --cacert "$T/m1-ca.pem" --resolve "api.test:8443:$M" \
    https://api.test:8443/ >/dev/null 2>&1
[ $? -ne 0 ]
ok $? "a port no rule names: refused"
sleep 0.5

# --- airlock metrics -------------------------------------------------------------
AL metrics >"$T/m.txt" 2>"$T/m.err"
ok $? "airlock metrics: exit 0 ($(head -c 100 "$T/m.err"))"
[ -s "$T/m.txt" ] || { AL --json metrics 2>&1 | head -c 300 | sed 's/^/# /'; }
promtool check metrics <"$T/m.txt" >"$T/promtool.out" 2>&1
ok $? "promtool check metrics accepts it ($(head -c 200 "$T/promtool.out"))"
# A sample: NAME{LABELS} VALUE -> VALUE (0 when absent).
val() { awk -v k="$1" '$1 == k { print $2; f = 1 } END { if (!f) print 0 }' "$T/m.txt"; }
ge() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 >= b + 0) }'; }
ge "$(val 'airlock_requests_total{sandbox="m1",decision="allow"}')" 1
ok $? "requests allowed counted"
ge "$(val 'airlock_requests_total{sandbox="m1",decision="deny"}')" 1
ok $? "requests denied counted"
ge "$(val 'airlock_denials_total{sandbox="m1",reason="path_not_allowed"}')" 1
ok $? "denials by reason: path_not_allowed"
ge "$(val 'airlock_denials_total{sandbox="m1",reason="port_not_allowed"}')" 1
ok $? "denials by reason: port_not_allowed"
ge "$(val 'airlock_denials_total{sandbox="m1",reason="name_not_allowed"}')" 1
ok $? "denials by reason: name_not_allowed (DNS)"
ge "$(val 'airlock_dns_answers_total{sandbox="m1",outcome="nxdomain"}')" 1 &&
    ge "$(val 'airlock_dns_answers_total{sandbox="m1",outcome="answer"}')" 2
ok $? "DNS answers by outcome"
ge "$(val 'airlock_connections_total{sandbox="m1",decision="allow"}')" 2
ok $? "connections allowed"
ge "$(val 'airlock_bytes_total{sandbox="m1",direction="down"}')" 100
ok $? "bytes towards the VM"
ge "$(val 'airlock_request_duration_seconds_count')" 2 &&
    ge "$(val 'airlock_dial_duration_seconds_count')" 2 &&
    ge "$(val 'airlock_tls_handshake_duration_seconds_count')" 2
ok $? "the latency histograms counted requests, dials and handshakes"
is "$(val 'airlock_request_duration_seconds_bucket{le="+Inf"}')" \
    "$(val 'airlock_request_duration_seconds_count')" "... +Inf equals the count"
is "$(val 'airlock_denials_total{sandbox="m1",reason="sni_mismatch"}')" 0 \
    "a reason that did not happen has no sample (positive control of val)"
ge "$(val 'airlock_reloads_total{result="ok"}')" 1
ok $? "reloads counted (the start)"
ge "$(val 'airlock_audit_records')" 5
ok $? "the audit chain's length"
# A broken exposition is refused: promtool itself can fail.
sed 's/^airlock_workers /airlock workers /' "$T/m.txt" >"$T/bad.txt"
! promtool check metrics <"$T/bad.txt" >/dev/null 2>&1
ok $? "promtool refuses a broken copy (positive control)"

# --- over HTTP, on the host's loopback only -----------------------------------------
inH curl -sS --max-time 5 -o "$T/h.txt" -D "$T/h.hdr" "http://127.0.0.1:$PORT/metrics"
ok $? "GET /metrics on metrics_listen"
grep -qi '^content-type: text/plain; version=0.0.4' "$T/h.hdr"
ok $? "... as text format 0.0.4"
grep -q '^airlock_requests_total{sandbox="m1",decision="allow"}' "$T/h.txt"
ok $? "... the same metrics"
code=$(inH curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://127.0.0.1:$PORT/other")
is "$code" 404 "another path: 404"
code=$(inH curl -s -o /dev/null -w '%{http_code}' --max-time 5 -X POST \
    "http://127.0.0.1:$PORT/metrics")
case "$code" in 405|501) ok 0 "POST refused ($code)" ;; *) ok 1 "POST refused (got $code)" ;; esac
HIP=$(pn_hostip 0)
inV curl -s --max-time 5 "http://$HIP:$PORT/metrics" >"$T/vm.txt" 2>/dev/null
! grep -q airlock_ "$T/vm.txt"
ok $? "the VM cannot read it at its host address ($HIP:$PORT)"
inV curl -s --max-time 5 "http://127.0.0.1:$PORT/metrics" >"$T/vm2.txt" 2>/dev/null
! grep -q airlock_ "$T/vm2.txt"
ok $? "... nor at 127.0.0.1 (its own loopback)"
inH nft list ruleset >"$T/ruleset" 2>&1
grep -q "tcp sport $PORT ct state established accept" "$T/ruleset"
ok $? "the one exception in airlockd's output floor: the listener's answers"
! grep -q '"event":"alarm"' "$T/audit.jsonl"
ok $? "... which netwatch finds as it expects (no alarm)"
printf '{ "metrics_listen": "%s:9345" }\n' "$HIP" >"$T/bad.json"
"$AIRLOCKD" --config "$T/bad.json" -n >"$T/bad.out" 2>&1
[ $? -ne 0 ] && grep -q 'must be a loopback address' "$T/bad.out"
ok $? "the loader refuses a metrics_listen a VM could reach ($HIP)"

# --- a real Prometheus scraping it --------------------------------------------------
cat >"$T/prom.yml" <<EOF
global: { scrape_interval: 1s, scrape_timeout: 1s }
scrape_configs:
  - job_name: airlock
    static_configs: [ { targets: [ "127.0.0.1:$PORT" ] } ]
EOF
inH prometheus --config.file="$T/prom.yml" --storage.tsdb.path="$T/tsdb" \
    --web.listen-address=127.0.0.1:19346 >"$T/prom.log" 2>&1 &
PROM=$!
ORIGIN_PIDS="$ORIGIN_PIDS $PROM"	# ended with the origins
got=""
for i in $(seq 150); do
	got=$(inH curl -s --max-time 2 -G \
	    --data-urlencode 'query=airlock_requests_total{sandbox="m1",decision="allow"}' \
	    http://127.0.0.1:19346/api/v1/query 2>/dev/null)
	case "$got" in *'"value":['*) break ;; esac
	sleep 0.2
done
case "$got" in
*'"job":"airlock"'*'"value":['*) ok 0 "Prometheus scraped it: requests_total in its store" ;;
*) ok 1 "Prometheus scraped it (got: $(printf '%s' "$got" | head -c 200); log: $(tail -3 "$T/prom.log"))" ;;
esac
up=$(inH curl -s --max-time 2 -G --data-urlencode 'query=up{job="airlock"}' \
    http://127.0.0.1:19346/api/v1/query 2>/dev/null)
case "$up" in *'"1"]'*) ok 0 "up{job=\"airlock\"} is 1" ;; *) ok 1 "up is 1 (got $up)" ;; esac
kill "$PROM" 2>/dev/null
wait "$PROM" 2>/dev/null

pn_stop_checked
pn_done
