#!/bin/bash
# demo/demo.sh: what airlock does today, end to end, on this machine -- inside network
# namespaces this script makes (never the machine's own network).
#
#   "internet" namespace   HTTPS origins standing in for pypi.org, api.github.com and an
#                          attacker's host (certificates from a throw-away test CA)
#   "host" namespace       airlockd + the nftables rules `airlock net attach` installs
#   "agent" namespace      the sandbox's side of the wire: everything it sends is forced
#                          through airlockd (the VM demo of issue 6 replaces this
#                          namespace with a real VM on a tap)
#
# One line of progress per step; everything is torn down at the end, even on failure.
set -u
cd "$(dirname "$0")/.." || exit 1
if [ "$(id -u)" != 0 ]; then
	echo "demo: run as root (it makes network namespaces)" >&2
	exit 1
fi

B=${AIRLOCK_BUILD:-$PWD/build}
export AIRLOCK_BUILD=$B
AL=$B/airlock
ALD=$B/airlockd
. tests/lib/netns.sh
. tests/lib/origin.sh
netns_require >/dev/null
T=$NETNS_TMP
chmod 755 "$T"
demo_cleanup() {
	origin_stop_all
	rm -rf "/etc/netns/$H" "/etc/netns/$A"
}
NETNS_CLEANUP_HOOK=demo_cleanup

step=0
say() { step=$((step + 1)); printf '[%2d] %s\n' "$step" "$*"; }
show() { sed 's/^/       /'; }
die() { echo "demo: $*" >&2; exit 1; }

# --- the policy the agent is held to ------------------------------------------------
cat >"$T/policy.json" <<'EOF'
{
  "policy": "demo-agent",
  "rules": [
    { "id": "pypi", "host": "pypi.org", "ports": [443] },
    { "id": "github-api", "host": "api.github.com", "ports": [443] }
  ]
}
EOF
say "policy check: $("$AL" policy check "$T/policy.json" 2>&1 | sed "s|$T/||")"
"$AL" policy test "$T/policy.json" evil.example.net:443 | sed 's/^/       policy test evil.example.net:443 -> /'

# --- three namespaces -------------------------------------------------------------------
netns_new H host
netns_new A agent
netns_new I inet
netns_veth "$H" al-demo "$A" eth0
netns_veth "$H" up0 "$I" eth0
netns_exec "$H" ip addr add 11.0.0.1/24 dev up0
netns_exec "$I" ip addr add 11.0.0.2/24 dev eth0
netns_exec "$I" ip route add default via 11.0.0.1
netns_exec "$A" ip addr add 10.233.0.2/30 dev eth0
netns_exec "$A" ip route add default via 10.233.0.1
netns_exec "$H" ip addr add 10.233.0.1/30 dev al-demo
mkdir -p "/etc/netns/$H" "/etc/netns/$A"
# The host resolves the origins' names to the "internet" namespace.
printf '127.0.0.1 localhost\n11.0.0.2 pypi.org api.github.com evil.example.net\n' \
    >"/etc/netns/$H/hosts"
echo "nameserver 127.0.0.1" >"/etc/netns/$H/resolv.conf"
echo "nameserver 10.233.0.1" >"/etc/netns/$A/resolv.conf"
echo "127.0.0.1 localhost" >"/etc/netns/$A/hosts"
say "namespaces: host $H, agent $A, internet $I"

origin_ca "$T" || die "test CA"
ORIGIN_LOGDIR=$T
origin_cert "$T" web pypi.org api.github.com evil.example.net &&
    origin_start "$I" tls 11.0.0.2 443 web "$T/web.pem" "$T/web.key" || die "origin"
say "internet: one HTTPS origin at 11.0.0.2 for pypi.org, api.github.com, evil.example.net"

# --- airlockd + the sandbox ---------------------------------------------------------------
mkdir -p "$T/state"
chmod 700 "$T/state"
cat >"$T/airlock.json" <<EOF
{ "state_dir": "$T/state", "control_socket": "$T/control.sock",
  "workers": 1, "user": "airlock",
  "audit": { "path": "$T/audit.jsonl", "fsync": "deny" } }
EOF
netns_bg "$H" "$T/airlockd.log" "$ALD" --config "$T/airlock.json" --foreground
for _ in $(seq 50); do [ -S "$T/control.sock" ] && break; sleep 0.1; done
[ -S "$T/control.sock" ] || die "airlockd did not start: $(cat "$T/airlockd.log")"
say "airlockd running in the host namespace (dropped to user airlock)"

netns_exec "$H" "$AL" --config "$T/airlock.json" net attach demo \
    --policy "$T/policy.json" --iface al-demo --guest-ip 10.233.0.2 >/dev/null ||
    die "net attach failed"
say "airlock net attach demo: nftables rules installed, airlockd told"

# --- the agent tries things --------------------------------------------------------------
acurl() { netns_exec "$A" curl -sS --max-time 5 --cacert "$T/ca.pem" "$@" 2>&1; }
out=$(acurl https://pypi.org/)
say "agent: curl https://pypi.org/ -> ${out:-(nothing)}  (spliced; the agent verified the origin's own certificate)"
addr=$(netns_exec "$A" getent ahostsv4 pypi.org | awk 'NR == 1 { print $1 }')
say "agent: pypi.org resolves to $addr (a mapped address: the agent never learns the real one)"
out=$(acurl https://evil.example.net/ | head -1)
say "agent: curl https://evil.example.net/ -> $out"
out=$(acurl -k https://11.0.0.2/ | head -1)
say "agent: curl https://11.0.0.2/ (straight to an address) -> $out"
out=$(acurl --resolve "evil.example.net:443:$addr" https://evil.example.net/ | head -1)
say "agent: SNI evil.example.net sent to pypi.org's mapped address -> $out"
netns_bg "$I" "$T/udp.log" "$B/tests/tools/netprobe" listen-udp 443
netns_wait_for "$T/udp.log" listening
netns_exec "$I" "$B/tests/tools/netprobe" udp 11.0.0.2 443 >/dev/null 2>&1 ||
    die "the UDP listener does not answer locally"
if netns_exec "$A" "$B/tests/tools/netprobe" udp 11.0.0.2 443 >/dev/null 2>&1; then
	out="answered (this should not happen)"
elif grep -q "from 10.233.0.2" "$T/udp.log"; then
	out="reached the origin (this should not happen)"
else
	out="no answer, nothing arrived at the origin: dropped by nftables"
fi
say "agent: UDP 443 (QUIC) to 11.0.0.2 -> $out"

# --- what the reviewer sees --------------------------------------------------------------
sleep 0.3
say "airlock audit summary:"
"$AL" audit summary "$T/audit.jsonl" | show
say "airlock audit verify: $("$AL" audit verify "$T/audit.jsonl" 2>&1 | sed "s|$T/||")"
say "tearing down (namespaces, rules, processes)"
