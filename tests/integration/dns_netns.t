#!/bin/bash
# tests/integration/dns_netns.t: policy DNS as a VM sees it, through the real
# enforcement path (tests/lib/proxynet.sh): a VM namespace on a veth attached with
# `airlock net attach` after airlockd started; netctl's rules redirect the VM's
# UDP/TCP 53, to any address, to the dns_port.  From the VM, with dig: an allowed
# name gets an address in 198.18.0.0/15, the same again, over TCP too, and from any
# resolver address; a denied name NXDOMAIN and an audit record; TXT REFUSED; AAAA
# empty; a second (spoofed) source address in the VM never reaches airlockd
# (dns_daemon.t covers the daemon's own refusal of an unknown source).
# Needs root; cleans up by trap.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/proxynet.sh
pn_require dig

# vq ARGS...: dig from the VM to its resolver (the host end, port 53).
vq() { inV dig +tries=1 +time=2 @10.233.0.1 "$@" 2>&1; }
status_of() { printf '%s\n' "$1" | sed -n 's/.*status: \([A-Z]*\),.*/\1/p'; }
ancount_of() { printf '%s\n' "$1" | sed -n 's/.*ANSWER: \([0-9]*\),.*/\1/p'; }

set -e
pn_setup dn
pn_vm V 0
inV() { ip netns exec "$V" "$@"; }
# Another address in the VM: what a VM trying another source would use.
inV ip addr add 10.233.0.5/32 dev eth0
inH ip route add 10.233.0.5/32 dev vh0
cat >"$T/policy.json" <<'EOF'
{ "policy": "dns-test",
  "rules": [
    { "id": "api", "host": "api.github.com" },
    { "id": "pkgs", "host": "*.pythonhosted.org" }
  ] }
EOF
set +e
if ! pn_start; then
	echo "1..0 # SKIP airlockd did not start: $(head -c 300 "$T/airlockd.log")"
	exit 0
fi
pn_attach d1 0 "$T/policy.json"
ok $? "net attach d1 while airlockd runs"

a1=$(vq +short api.github.com A)
case "$a1" in
198.1[89].*) ok 0 "allowed name: mapped address from the pool ($a1)" ;;
*) ok 1 "allowed name: mapped address from the pool ('$a1')" ;;
esac
is "$(vq +short api.github.com A)" "$a1" "same name again: same address"
a2=$(vq +short files.pythonhosted.org A)
case "$a2" in
198.1[89].*) [ "$a2" != "$a1" ]; ok $? "wildcard name: another mapped address ($a2)" ;;
*) ok 1 "wildcard name: another mapped address ('$a2')" ;;
esac
is "$(vq +tcp +short api.github.com A)" "$a1" "over TCP: same address"
is "$(inV dig +tries=1 +time=2 @192.0.2.53 +short api.github.com A 2>&1)" "$a1" \
    "asking any resolver address: the same policy answer"

out=$(vq github.com A)
is "$(status_of "$out")" NXDOMAIN "denied name: NXDOMAIN"
out=$(vq +tcp evil.example A)
is "$(status_of "$out")" NXDOMAIN "denied name over TCP: NXDOMAIN"
out=$(vq api.github.com TXT)
is "$(status_of "$out")" REFUSED "TXT: REFUSED"
out=$(vq api.github.com AAAA)
is "$(status_of "$out") $(ancount_of "$out")" "NOERROR 0" "AAAA: NOERROR, empty"
out=$(vq -b 10.233.0.5 api.github.com A)
is "$(status_of "$out")" "" "another source address in the VM: no answer (dropped)"

grep -q '"sandbox":"d1","event":"dns".*"decision":"deny","reason":"name_not_allowed".*"qname":"github.com"' \
    "$T/audit.jsonl"
ok $? "denied name: dns audit record for the sandbox"
grep -q '"sandbox":"d1","event":"dns".*"qname":"api.github.com","qtype":"TXT","outcome":"refused"' \
    "$T/audit.jsonl"
ok $? "TXT: audited as refused"
grep -q '"sandbox":"d1","event":"dns","src":"10.233.0.2".*"qname":"api.github.com","qtype":"A","outcome":"answer","answer":"'"$a1"'"' \
    "$T/audit.jsonl"
ok $? "allowed name: dns audit record with the answer"
! grep -q '"src":"10.233.0.5' "$T/audit.jsonl"
ok $? "the spoofed source never reached airlockd"
kill -0 "$DPID" 2>/dev/null
ok $? "airlockd still running"
pn_done
