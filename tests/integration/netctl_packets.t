#!/bin/sh
# netctl: real packets from a "VM" namespace through the rules `airlock net attach`
# installs in a "host" namespace.  An "outside" namespace stands for the internet
# (the host routes to it), a second VM namespace for another sandbox.
#
#   VM A (10.9.0.2) --veth-- HOST (10.9.0.1 | 10.9.0.5, 10.8.0.1) --veth-- OUTSIDE (10.8.0.2)
#   VM B (10.9.0.6) --veth--/
#
# Before attaching, A reaches OUTSIDE directly (so every "dropped" below can fail).
set -u
. "$(dirname "$0")/../lib/netctl.sh"

PROBE=$B/tests/tools/netprobe
[ -x "$PROBE" ] || { echo "1..0 # skip $PROBE not built"; exit 0; }

netns_new H host
netns_new VA vma
netns_new VB vmb
netns_new O out
netns_veth "$H" vha "$VA" eth0
netns_veth "$H" vhb "$VB" eth0
netns_veth "$H" vho "$O" eth0
netns_exec "$H" ip addr add 10.9.0.1/30 dev vha
netns_exec "$H" ip addr add 10.9.0.5/30 dev vhb
netns_exec "$H" ip addr add 10.8.0.1/30 dev vho
netns_exec "$H" ip -6 addr add fd00:9::1/64 dev vha nodad
netns_exec "$H" sysctl -qw net.ipv4.ip_forward=1
netns_exec "$VA" ip addr add 10.9.0.2/30 dev eth0
netns_exec "$VA" ip -6 addr add fd00:9::2/64 dev eth0 nodad
netns_exec "$VA" ip route add default via 10.9.0.1
netns_exec "$VB" ip addr add 10.9.0.6/30 dev eth0
netns_exec "$VB" ip route add default via 10.9.0.5
netns_exec "$O" ip addr add 10.8.0.2/30 dev eth0
netns_exec "$O" ip route add default via 10.8.0.1
# A spoofed source the host would route back to A if it ever accepted it.
netns_exec "$VA" ip addr add 10.9.0.9/32 dev eth0
netns_exec "$H" ip route add 10.9.0.9/32 dev vha

T=$NETNS_TMP
cat >"$T/airlock.json" <<EOF
{ "state_dir": "$T/state", "user": "nobody", "proxy_port": 15001, "dns_port": 15053 }
EOF
al() { netns_exec "$H" "$AL" --config "$T/airlock.json" "$@" >/dev/null; }

netns_bg "$H" "$T/proxy.log" "$PROBE" listen-tcp 15001
netns_bg "$H" "$T/dns.log" "$PROBE" listen-udp 15053
netns_bg "$H" "$T/dnstcp.log" "$PROBE" listen-tcp 15053
netns_bg "$H" "$T/ssh.log" "$PROBE" listen-tcp 22
netns_bg "$H" "$T/v6.log" "$PROBE" listen-tcp6 15001
netns_bg "$O" "$T/out_tcp.log" "$PROBE" listen-tcp 80
netns_bg "$O" "$T/out_udp.log" "$PROBE" listen-udp 443
netns_bg "$VB" "$T/b_tcp.log" "$PROBE" listen-tcp 80
netns_bg "$VB" "$T/b_udp.log" "$PROBE" listen-udp 443
for f in proxy dns dnstcp ssh v6 out_tcp out_udp b_tcp b_udp; do
	netns_wait_for "$T/$f.log" listening || echo "# $f listener did not start"
done

plan 25
# Baseline, without airlock: the test can see a path when there is one.
check "baseline: A reaches outside by TCP" netns_exec "$VA" "$PROBE" tcp 10.8.0.2 80
check "baseline: A reaches outside by UDP 443" netns_exec "$VA" "$PROBE" udp 10.8.0.2 443
check "baseline: A pings outside" netns_exec "$VA" "$PROBE" ping 10.8.0.2
check "baseline: A reaches the host over IPv6" netns_exec "$VA" "$PROBE" tcp fd00:9::1 15001
check "baseline: A reaches B" netns_exec "$VA" "$PROBE" udp 10.9.0.6 443
: >"$T/out_tcp.log"; : >"$T/out_udp.log"; : >"$T/b_udp.log"; : >"$T/v6.log"

MAC_A=$(netns_exec "$VA" cat /sys/class/net/eth0/address)
check "attach A (veth, pinned MAC)" al net attach sba --policy "$POLICY" --iface vha \
    --guest-ip 10.9.0.2 --mac "$MAC_A"
check "attach B" al net attach sbb --policy "$POLICY" --iface vhb --guest-ip 10.9.0.6

check "TCP to an outside address is accepted (by the proxy)" \
    netns_exec "$VA" "$PROBE" tcp 10.8.0.2 80
check "... SO_ORIGINAL_DST gives 10.8.0.2:80" grep -q "tcp 10.8.0.2:80 from 10.9.0.2" "$T/proxy.log"
check "... and it never reached outside" test ! -s "$T/out_tcp.log"
check "TCP to an arbitrary address and port reaches the proxy" \
    netns_exec "$VA" "$PROBE" tcp 203.0.113.7 4444
check "... with its original destination" grep -q "tcp 203.0.113.7:4444 from 10.9.0.2" "$T/proxy.log"
check "UDP 53 to any resolver arrives at the DNS port" netns_exec "$VA" "$PROBE" udp 192.0.2.53 53
check "TCP 53 arrives at the DNS port" netns_exec "$VA" "$PROBE" tcp 192.0.2.53 53
check "... (the DNS TCP listener saw it)" grep -q "tcp 192.0.2.53:53 from 10.9.0.2" "$T/dnstcp.log"
fails "UDP 443 (QUIC) is dropped" netns_exec "$VA" "$PROBE" udp 10.8.0.2 443
fails "ICMP to an outside address is dropped" netns_exec "$VA" "$PROBE" ping 10.8.0.2
check "ICMP echo to the host address is allowed" netns_exec "$VA" "$PROBE" ping 10.9.0.1
fails "IPv6 is dropped" netns_exec "$VA" "$PROBE" tcp fd00:9::1 15001
fails "a spoofed source address is dropped" netns_exec "$VA" "$PROBE" tcp 10.8.0.2 80 10.9.0.9
check "... the proxy never saw the spoofed source" sh -c "! grep -q 'from 10.9.0.9' '$T/proxy.log'"
netns_exec "$VA" "$PROBE" tcp 10.9.0.1 22 >/dev/null
check "a listener on host port 22 is unreachable (TCP goes to the proxy)" \
    sh -c "! grep -q '^tcp ' '$T/ssh.log'"
fails "sandbox A cannot reach sandbox B (UDP)" netns_exec "$VA" "$PROBE" udp 10.9.0.6 443
netns_exec "$VA" "$PROBE" tcp 10.9.0.6 80 >/dev/null
check "sandbox A's TCP to B ends at the proxy, never at B" sh -c "! grep -q '^tcp ' '$T/b_tcp.log'"
# A frame with another source MAC is dropped at L2.
netns_exec "$VA" ip link set eth0 address 02:de:ad:be:ef:01
netns_exec "$H" ip neigh flush dev vha
fails "a spoofed source MAC is dropped" netns_exec "$VA" "$PROBE" ping 10.9.0.1
