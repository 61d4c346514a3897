#!/bin/bash
# tests/integration/inspect_resume.t: TLS session resumption towards the VM in
# inspect mode (session tickets, proxy/proxy_tls.c), with `openssl s_client
# -sess_out` / `-sess_in` as the VM's client, TLS 1.3 and TLS 1.2.
#
# Two inspected names (api.test, other.test) on two origins, two sandboxes (rs1 in
# one VM namespace, rs2 in another, each with its own CA, the same policy bytes so
# the same policy hash).  (1) Same sandbox, same name: the session resumes ("Reused"),
# and the resumed connection is audited like any other; the same with ALPN
# h2,http/1.1 (the VM's handshake waits for the upstream's, proxy_h2.c).  (2) Same
# sandbox, the other name, the first name's ticket offered: a full handshake with the
# other name's leaf (verified, name checked), no resumption.  (3) The other sandbox
# offering rs1's ticket: a full handshake with rs2's CA, no resumption.  (4) After a
# reload that edits rs1's policy, a ticket from before does not resume (and one
# issued afterwards does: the control).
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/proxynet.sh
pn_require openssl

set -e
pn_setup irs
pn_vm V 0
pn_vm W 1
ip netns exec "$I" ip addr add 11.0.0.3/24 dev eth0
pn_hosts "11.0.0.2 api.test" "11.0.0.3 other.test"
origin_cert "$T" api.test api.test
origin_cert "$T" other.test other.test
origin_start "$I" tls 11.0.0.2 443 api.test "$T/api.test.pem" "$T/api.test.key"
origin_start "$I" tls 11.0.0.3 443 other.test "$T/other.test.pem" \
    "$T/other.test.key"
policy() {		# NAME FILE
	cat >"$2" <<EOF
{ "policy": "$1",
  "rules": [
    { "id": "api", "host": "api.test", "tls": "inspect" },
    { "id": "other", "host": "other.test", "tls": "inspect" } ] }
EOF
}
policy resume-a "$T/p1.json"
policy resume-a "$T/p2.json"
set +e
pn_start_or_skip "\"upstream_ca_file\": \"$T/ca.pem\""
pn_attach rs1 0 "$T/p1.json"
ok $? "net attach rs1"
pn_attach rs2 1 "$T/p2.json"
ok $? "net attach rs2"
AL() { "$AIRLOCK" --config "$T/airlock.json" "$@"; }
AL ca cert rs1 >"$T/rs1-ca.pem" 2>/dev/null
AL ca cert rs2 >"$T/rs2-ca.pem" 2>/dev/null
! cmp -s "$T/rs1-ca.pem" "$T/rs2-ca.pem" && [ -s "$T/rs1-ca.pem" ] &&
    [ -s "$T/rs2-ca.pem" ]
ok $? "two sandbox CAs"

# sc NS NAME CA OUT ARGS...: one request to NAME from NS; s_client's output in OUT
sc() {
	local ns=$1 name=$2 ca=$3 out=$4
	shift 4
	printf 'GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n' "$name" |
	    ip netns exec "$ns" timeout 10 openssl s_client -ign_eof \
	    -connect "$name:443" -servername "$name" -CAfile "$ca" \
	    -verify_return_error -verify_hostname "$name" "$@" >"$out" 2>&1
}
reused() { grep -q '^Reused,' "$1"; }
# full OUT NAME: a full handshake, the leaf verified for NAME, the origin reached
full() {
	grep -q '^New,' "$1" && grep -q 'Verify return code: 0 (ok)' "$1" &&
	    grep -q "^origin $2" "$1"
}
served() { grep -q "^origin $2" "$1"; }
# offered OUT: the client's hello carried a ticket (TLS 1.3 PSK or a TLS 1.2 ticket)
offered() {
	awk '/ClientHello/ { h = 1 } /ServerHello/ { h = 0 }
	    h && /extension_type=(pre_shared_key|psk)\(41\)/ { f = 1 }
	    h && /extension_type=session_ticket\(35\), length=[1-9]/ { f = 1 }
	    END { exit !f }' "$1"
}
api_records() { grep -c '"dst":"api.test:443"' "$T/audit.jsonl"; }

for v in tls1_3 tls1_2; do
	S=$T/s-$v
	# --- (1) same sandbox, same name ----------------------------------------------
	sc "$V" api.test "$T/rs1-ca.pem" "$T/a-$v" -$v -sess_out "$S"
	full "$T/a-$v" api.test && [ -s "$S" ]
	ok $? "$v: rs1 api.test, a full handshake, a session saved"
	n0=$(api_records)
	sc "$V" api.test "$T/rs1-ca.pem" "$T/b-$v" -$v -sess_in "$S"
	reused "$T/b-$v" && served "$T/b-$v" api.test
	ok $? "$v: rs1 api.test with that session: resumed, the origin reached"
	sleep 0.5
	[ "$(api_records)" -gt "$n0" ]
	ok $? "$v: ... the resumed connection audited ($n0 -> $(api_records))"
	sc "$V" api.test "$T/rs1-ca.pem" "$T/h-$v" -$v -sess_in "$S" \
	    -alpn h2,http/1.1
	# h2 is chosen (the HTTP/1.1 origin's exchanges are translated), so the
	# HTTP/1.1 bytes s_client sends are no request: resumption and ALPN are what
	# this checks.
	reused "$T/h-$v" && grep -q "^ALPN protocol: h2" "$T/h-$v"
	ok $? "$v: ... and with ALPN h2,http/1.1 (the VM handshake waits): resumed, h2 chosen"

	# --- (2) same sandbox, another inspected name ---------------------------------
	sc "$V" other.test "$T/rs1-ca.pem" "$T/o-$v" -$v -sess_in "$S" -trace
	offered "$T/o-$v" && ! reused "$T/o-$v" && full "$T/o-$v" other.test
	ok $? "$v: rs1 other.test offered api.test's ticket: not resumed, a full handshake with other.test's leaf"

	# --- (3) another sandbox --------------------------------------------------------
	sc "$W" api.test "$T/rs2-ca.pem" "$T/w-$v" -$v -sess_in "$S" -trace
	offered "$T/w-$v" && ! reused "$T/w-$v" && full "$T/w-$v" api.test
	ok $? "$v: rs2 api.test offered rs1's ticket: not resumed, a full handshake under rs2's CA"
	sc "$W" api.test "$T/rs2-ca.pem" "$T/w2-$v" -$v -sess_out "$T/w-s-$v"
	sc "$W" api.test "$T/rs2-ca.pem" "$T/w3-$v" -$v -sess_in "$T/w-s-$v"
	reused "$T/w3-$v"
	ok $? "$v: control: rs2's own ticket resumes in rs2"
	sc "$V" api.test "$T/rs1-ca.pem" "$T/x-$v" -$v -sess_in "$T/w-s-$v" -trace
	offered "$T/x-$v" && ! reused "$T/x-$v" && full "$T/x-$v" api.test
	ok $? "$v: ... and not in rs1"
done

# --- (4) a reload that edits rs1's policy --------------------------------------------
sc "$V" api.test "$T/rs1-ca.pem" "$T/r0" -sess_out "$T/s-r"
sc "$V" api.test "$T/rs1-ca.pem" "$T/r1" -sess_out "$T/s-r12" -tls1_2
policy resume-b "$T/p1.json"
AL reload >"$T/reload.out" 2>&1
ok $? "reload with rs1's policy edited"
sc "$V" api.test "$T/rs1-ca.pem" "$T/r2" -sess_in "$T/s-r" -sess_out "$T/s-r2" \
    -trace
offered "$T/r2" && ! reused "$T/r2" && full "$T/r2" api.test
ok $? "tls1_3: a ticket from before the reload: not resumed, a full handshake"
sc "$V" api.test "$T/rs1-ca.pem" "$T/r3" -sess_in "$T/s-r12" -tls1_2 -trace
offered "$T/r3" && ! reused "$T/r3" && full "$T/r3" api.test
ok $? "tls1_2: a ticket from before the reload: not resumed, a full handshake"
sc "$V" api.test "$T/rs1-ca.pem" "$T/r4" -sess_in "$T/s-r2"
reused "$T/r4"
ok $? "control: a ticket issued after the reload resumes"
sc "$W" api.test "$T/rs2-ca.pem" "$T/r5" -sess_in "$T/w-s-tls1_3"
reused "$T/r5"
ok $? "rs2's policy did not change: its ticket from before still resumes"

pn_stop_checked
pn_done
