#!/bin/sh
# netctl: sandbox create/destroy, net attach/detach, the refusals, atomicity of a
# failed batch, drift detection and the missing-privilege message, in a namespace.
set -u
. "$(dirname "$0")/../lib/netctl.sh"

# refuses DESC PATTERN CMD...: CMD must fail and say PATTERN on stderr.
refuses() {
	d=$1; p=$2; shift 2
	if "$@" >"$T/out" 2>"$T/err"; then
		fail "$d (succeeded)"
	elif grep -q -- "$p" "$T/err"; then
		pass "$d"
	else
		fail "$d"; sed 's/^/# /' "$T/err"
	fi
}

# drift DESC LINE: `net status` exits 1 and prints LINE.
drift() {
	netns_exec "$H" "$AL" --config "$T/airlock.json" net status >"$T/st"
	rc=$?
	if [ "$rc" = 1 ] && grep -qF -- "$2" "$T/st"; then
		pass "$1"
	else
		fail "$1 (exit $rc)"; sed 's/^/# /' "$T/st"
	fi
}

# No element or chain of any sandbox in the ruleset (elements carry "sandbox NAME").
no_sandbox_objects() {
	netns_exec "$H" nft list ruleset >"$T/rs"
	! grep -qE 'comment "sandbox [a-z0-9-]+"' "$T/rs" || return 1
	netns_exec "$H" nft list table netdev airlock >"$T/ch"
	! grep -q 'hook ingress' "$T/ch"
}

netns_new H host
T=$NETNS_TMP
chmod 755 "$T"
cat >"$T/airlock.json" <<EOF
{ "state_dir": "$T/state", "user": "nobody", "address_pool": "10.233.0.0/24" }
EOF
cat >"$T/small.json" <<EOF
{ "state_dir": "$T/state2", "user": "nobody", "address_pool": "10.234.0.0/30" }
EOF
chmod 644 "$T/airlock.json"
# stdout kept aside (TAP is ours); refuses() reads stderr.
al() { netns_exec "$H" "$AL" --config "$T/airlock.json" "$@" >>"$T/al.out"; }
dump() { netns_exec "$H" nft list ruleset; }
netns_exec "$H" ip link add vx0 type veth peer name vx1
netns_exec "$H" ip addr add 10.7.0.1/30 dev vx0
netns_exec "$H" ip link set vx0 up

plan 41
check "nothing installed before the first sandbox" test -z "$(dump)"
check "sandbox create s1" al sandbox create s1 --policy "$POLICY"
check "tap al-s1 exists and is a tap" sh -c "ip netns exec $H ip -d link show al-s1 | grep -q 'tun type tap'"
check "... with host address 10.233.0.1 peer 10.233.0.2/32" sh -c "ip netns exec $H ip -o -4 addr show al-s1 | grep -q 'inet 10.233.0.1 peer 10.233.0.2/32'"
check "... and up" sh -c "ip netns exec $H ip -o link show al-s1 | grep -q '[<,]UP[,>]'"
check "sandbox ls --json shows its guest address" sh -c \
    "ip netns exec $H $AL --config $T/airlock.json sandbox ls --json | grep -q '\"guest_ip\":\"10.233.0.2\"'"
check "the record is 0600" sh -c "stat -c %a $T/state/sandboxes/s1.json | grep -qx 600"
check "net status: no drift" al net status
dump >"$T/d1"

check "create s2 --owner nobody" al sandbox create s2 --policy "$POLICY" --owner nobody
check "... the tap belongs to the VMM's user" sh -c "ip netns exec $H ip -d link show al-s2 | grep -q 'persist on user nobody'"
check "s2 got the next /30" sh -c "ip netns exec $H ip -o -4 addr show al-s2 | grep -q 'inet 10.233.0.5 peer 10.233.0.6/32'"
check "destroy s2" al sandbox destroy s2
check "... and says so" sh -c "tail -1 $T/al.out | grep -qx 'destroyed sandbox s2'"
dump >"$T/d2"
check "destroy leaves the ruleset as it was (dump compared)" cmp -s "$T/d1" "$T/d2"
check "... and the tap is gone" sh -c "! ip netns exec $H ip link show al-s2 2>/dev/null"

check "attach a3 on a dummy interface" al net attach a3 --policy "$POLICY" --iface vx0 --guest-ip 10.7.0.2
check "detach a3" al net detach a3
dump >"$T/d3"
check "detach leaves the ruleset as it was" cmp -s "$T/d1" "$T/d3"
check "... and the interface (someone else's) is still there" sh -c "ip netns exec $H ip link show vx0 >/dev/null"

refuses "a name that exists" "sandbox s1 already exists" al sandbox create s1 --policy "$POLICY"
refuses "an interface that does not exist" "interface nosuch0 does not exist" \
    al net attach a4 --policy "$POLICY" --iface nosuch0 --guest-ip 10.7.0.2
refuses "an address already in use" "address already in use: 10.233.0.2" \
    al net attach a5 --policy "$POLICY" --iface vx0 --guest-ip 10.233.0.2
refuses "an invalid name" "invalid sandbox name" al sandbox create Bad_Name --policy "$POLICY"
refuses "detach of a created sandbox" "remove it with 'airlock sandbox destroy'" al net detach s1
refuses "a policy that does not load" "policy" al sandbox create s6 --policy /nonexistent.json
netns_exec "$H" "$AL" --config "$T/small.json" sandbox create p1 --policy "$POLICY" >/dev/null
refuses "a pool that is full" "address pool 10.234.0.0/30 is full" \
    netns_exec "$H" "$AL" --config "$T/small.json" sandbox create p2 --policy "$POLICY"
check "... left no tap behind" sh -c "! ip netns exec $H ip link show al-p2 2>/dev/null"
netns_exec "$H" "$AL" --config "$T/small.json" sandbox destroy p1

# A batch that fails leaves the ruleset exactly as it was: an element in the way
# makes the kernel refuse the whole sandbox batch (chain, other elements and all).
netns_exec "$H" nft add element inet airlock sandbox_src4 '{ "vx0" . 10.7.0.2 }'
dump >"$T/d4"
refuses "a failed batch names the object that failed" \
    'adding element vx0 . 10.7.0.2 in set inet airlock sandbox_src4: File exists' \
    al net attach a7 --policy "$POLICY" --iface vx0 --guest-ip 10.7.0.2
dump >"$T/d5"
check "... and changed nothing at all (dump compared)" cmp -s "$T/d4" "$T/d5"
check "... and wrote no record" test ! -e "$T/state/sandboxes/a7.json"
drift "net status reports the foreign element as drift" \
    "drift: set inet airlock sandbox_src4: element vx0 . 10.7.0.2 belongs to no sandbox"
netns_exec "$H" nft delete element inet airlock sandbox_src4 '{ "vx0" . 10.7.0.2 }'

# Privilege: the same command as an unprivileged user says what is missing.
refuses "missing privilege is reported" "CAP_NET_ADMIN" \
    netns_exec "$H" setpriv --reuid=65534 --regid=65534 --clear-groups \
    "$AL" --config "$T/airlock.json" sandbox create s8 --policy "$POLICY"

# Destroying the last sandbox leaves the base tables, empty of sandboxes.
check "destroy the last sandbox" al sandbox destroy s1
check "... the base tables stay" sh -c "ip netns exec $H nft list table inet airlock >/dev/null && ip netns exec $H nft list table netdev airlock >/dev/null"
check "... with no sandbox left in them" no_sandbox_objects
check "... and no drift" al net status

# Drift: someone flushed a chain.
check "create s9" al sandbox create s9 --policy "$POLICY"
netns_exec "$H" nft flush chain inet airlock sandbox_in
drift "a flushed chain is drift" "drift: chain inet airlock sandbox_in: 0 rules, airlock installs 7"
netns_exec "$H" nft delete table inet airlock
netns_exec "$H" nft delete table netdev airlock
drift "deleted tables are drift" "drift: table inet airlock is missing"
check "destroy works even when the tables were deleted" al sandbox destroy s9
check "... and the tap went with it" sh -c "! ip netns exec $H ip link show al-s9 2>/dev/null"
