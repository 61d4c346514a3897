#!/bin/bash
# tests/integration/dns_netns.t: policy DNS as a VM sees it.  A VM namespace on a veth
# to a host namespace where airlockd runs and nftables redirects the VM's UDP/TCP 53
# to the dns_port (the same REDIRECT netctl installs).  From the VM, with dig against
# its host address on port 53: an allowed name gets an address in 198.18.0.0/15, the
# same again, over TCP too; a denied name NXDOMAIN and an audit record; TXT REFUSED;
# AAAA empty; a second (not the sandbox's) source address in the VM is REFUSED.
# Needs root; cleans up by trap.
set -u
cd "$(dirname "$0")/../.." || exit 1

if [ "$(id -u)" != 0 ]; then
	echo "1..0 # SKIP needs root (network namespaces)"
	exit 0
fi
B=${AIRLOCK_BUILD:-build}
AIRLOCKD=${AIRLOCKD:-$B/airlockd}
if [ ! -x "$AIRLOCKD" ]; then
	echo "1..0 # SKIP $AIRLOCKD not built"
	exit 0
fi
for c in dig nft ip; do
	if ! command -v "$c" >/dev/null; then
		echo "1..0 # SKIP no $c"
		exit 0
	fi
done

S=$$
H=alDH$S V=alDV$S
T=$(mktemp -d /tmp/dns_netns.XXXXXX)
chmod 755 "$T"
DPID=""
n=0
fail=0

cleanup() {
	set +e
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	ip netns del "$H" 2>/dev/null
	ip netns del "$V" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

ok() {	# ok COND-EXIT-STATUS DESCRIPTION
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n - $2"
	else
		echo "not ok $n - $2"
		fail=$((fail + 1))
	fi
}
is() {	# is GOT WANT DESCRIPTION
	[ "$1" = "$2" ]
	ok $? "$3"
	[ "$1" = "$2" ] || printf '#   got: %s\n#  want: %s\n' "$1" "$2"
}
inV() { ip netns exec "$V" "$@"; }
# vq [-b SRC] ARGS...: dig from the VM to its resolver (the host end, port 53).
vq() { inV dig +tries=1 +time=2 @10.233.0.1 "$@" 2>&1; }
status_of() { printf '%s\n' "$1" | sed -n 's/.*status: \([A-Z]*\),.*/\1/p'; }
ancount_of() { printf '%s\n' "$1" | sed -n 's/.*ANSWER: \([0-9]*\),.*/\1/p'; }

# --- topology -----------------------------------------------------------------
set -e
for ns in "$H" "$V"; do
	ip netns add "$ns"
	ip -n "$ns" link set lo up
done
ip link add dh$S netns "$H" type veth peer name dv$S netns "$V"
ip -n "$H" addr add 10.233.0.1/30 dev dh$S
ip -n "$V" addr add 10.233.0.2/30 dev dv$S
# Another address in the VM: what a VM trying another source would use.
ip -n "$V" addr add 10.233.0.5/32 dev dv$S
ip -n "$H" link set dh$S up
ip -n "$V" link set dv$S up
ip -n "$V" route add default via 10.233.0.1
ip -n "$H" route add 10.233.0.5/32 dev dh$S
ip netns exec "$H" nft -f - <<EOF
table ip airlock_dnstest {
	chain pre {
		type nat hook prerouting priority dstnat;
		iifname "dh$S" udp dport 53 redirect to :15053
		iifname "dh$S" tcp dport 53 redirect to :15053
	}
}
EOF

mkdir -p "$T/state/sandboxes"
cat >"$T/policy.json" <<'EOF'
{ "policy": "dns-test",
  "rules": [
    { "id": "api", "host": "api.github.com" },
    { "id": "pkgs", "host": "*.pythonhosted.org" }
  ] }
EOF
cat >"$T/state/sandboxes/d1.json" <<EOF
{ "name": "d1", "kind": "attach", "iface": "dh$S", "host_ip": "10.233.0.1",
  "guest_ip": "10.233.0.2", "prefix": 30, "mac": "", "policy": "$T/policy.json",
  "policy_hash": "", "created": 0 }
EOF
chmod 600 "$T/state/sandboxes/d1.json"
cat >"$T/airlock.json" <<EOF
{ "state_dir": "$T/state", "control_socket": "$T/control.sock",
  "proxy_port": 15001, "dns_port": 15053, "workers": 2,
  "audit": { "path": "$T/audit.jsonl", "fsync": "deny" } }
EOF
set +e

ip netns exec "$H" "$AIRLOCKD" --config "$T/airlock.json" --foreground \
    2>"$T/airlockd.log" &
DPID=$!
for i in $(seq 50); do
	[ -S "$T/control.sock" ] && break
	sleep 0.1
done
if ! kill -0 "$DPID" 2>/dev/null; then
	echo "1..0 # SKIP airlockd did not start: $(head -c 300 "$T/airlockd.log")"
	exit 0
fi

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

out=$(vq github.com A)
is "$(status_of "$out")" NXDOMAIN "denied name: NXDOMAIN"
out=$(vq +tcp evil.example A)
is "$(status_of "$out")" NXDOMAIN "denied name over TCP: NXDOMAIN"
out=$(vq api.github.com TXT)
is "$(status_of "$out")" REFUSED "TXT: REFUSED"
out=$(vq api.github.com AAAA)
is "$(status_of "$out") $(ancount_of "$out")" "NOERROR 0" "AAAA: NOERROR, empty"
out=$(vq -b 10.233.0.5 api.github.com A)
is "$(status_of "$out")" REFUSED "another source address in the VM: REFUSED"
out=$(vq -b 10.233.0.5 +short api.github.com A)
is "$out" "" "another source address: no address"

grep -q '"sandbox":"d1","event":"dns".*"decision":"deny","reason":"name_not_allowed".*"qname":"github.com"' \
    "$T/audit.jsonl"
ok $? "denied name: dns audit record for the sandbox"
grep -q '"sandbox":"d1","event":"dns","src":"10.233.0.2".*"qname":"api.github.com","qtype":"A","outcome":"answer","answer":"'"$a1"'"' \
    "$T/audit.jsonl"
ok $? "allowed name: dns audit record with the answer"
grep -q '"event":"dns","src":"10.233.0.5".*"reason":"unknown_sandbox"' "$T/audit.jsonl"
ok $? "foreign source: audited"
kill -0 "$DPID" 2>/dev/null
ok $? "airlockd still running"

echo "1..$n"
[ "$fail" = 0 ]
