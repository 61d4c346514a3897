#!/bin/sh
# netctl at scale: N sandboxes (default 200, NETCTL_SCALE_N) attached in a loop to
# veths in one namespace.  Reports the time per attach and the number of rules on a
# packet's path (TAP diagnostics); the path must not grow with the sandbox count, and
# each attach must add exactly one rule (the device's own ingress chain's jump).
set -u
. "$(dirname "$0")/../lib/netctl.sh"

# Under SAN=1 every airlock process pays ASan's start-up (~4x); the same code paths
# are covered with 60 sandboxes there, and the scaling is measured by the plain build.
case "$AL" in
*build-san*) N=${NETCTL_SCALE_N:-60} ;;
*) N=${NETCTL_SCALE_N:-200} ;;
esac

now_us() { echo $(($(date +%s%N) / 1000)); }
# status_num NS CONFIG KEY [NAME]: a number from `net status --json` (for NAME's
# sandbox entry when NAME is given).
status_num() {
	netns_exec "$1" "$AL" --config "$2" net status --json | tr '{' '\n' |
	    grep "\"${4:+name\":\"$4\"}" | grep "\"$3\":" | head -n 1 |
	    sed "s/.*\"$3\":\([0-9]*\).*/\1/"
}

netns_new H host
netns_new H1 one
T=$NETNS_TMP
echo "{ \"state_dir\": \"$T/state\", \"user\": \"nobody\" }" >"$T/airlock.json"
echo "{ \"state_dir\": \"$T/state1\", \"user\": \"nobody\" }" >"$T/one.json"

# N veth pairs (host ends v0..v(N-1), 10.(100+i/64).(i%64*4).1/30), in one ip batch.
i=0
: >"$T/links"
while [ "$i" -lt "$N" ]; do
	o3=$((100 + i / 64)); o4=$((i % 64 * 4))
	echo "link add v$i type veth peer name p$i" >>"$T/links"
	echo "addr add 10.$o3.$o4.1/30 dev v$i" >>"$T/links"
	i=$((i + 1))
done
netns_exec "$H" ip -batch "$T/links" || { echo "1..0 # skip could not make $N veths"; exit 0; }

plan 6
# The reference: one sandbox alone, in a namespace of its own.
netns_exec "$H1" ip link add w0 type veth peer name q0
netns_exec "$H1" ip addr add 10.99.0.1/30 dev w0
netns_exec "$H1" "$AL" --config "$T/one.json" net attach o0 --policy "$POLICY" \
    --iface w0 --guest-ip 10.99.0.2 >/dev/null
p1=$(status_num "$H1" "$T/one.json" path_rules o0)
r1=$(status_num "$H1" "$T/one.json" rules)

# The loop runs inside the namespace (one `ip netns exec`, not N) so that what is
# timed is airlock: process start, config and policy load, the table read, one batch.
t0=$(now_us)
netns_exec "$H" env AL="$AL" CFG="$T/airlock.json" POLICY="$POLICY" N="$N" \
    TIMES="$T/times" sh -c '
	i=0; fail=0
	while [ "$i" -lt "$N" ]; do
		o3=$((100 + i / 64)); o4=$((i % 64 * 4))
		a=$(date +%s%N)
		"$AL" --config "$CFG" net attach "s$i" --policy "$POLICY" \
		    --iface "v$i" --guest-ip "10.$o3.$o4.2" >/dev/null ||
		    fail=$((fail + 1))
		b=$(date +%s%N)
		echo $(((b - a) / 1000)) >>"$TIMES"
		i=$((i + 1))
	done
	exit "$fail"'
nfail=$?
t1=$(now_us)
check "$N attaches succeeded" test "$nfail" = 0
p0=$(status_num "$H" "$T/airlock.json" path_rules s0)
pN=$(status_num "$H" "$T/airlock.json" path_rules "s$((N - 1))")
rN=$(status_num "$H" "$T/airlock.json" rules)
first=$(head -n 10 "$T/times" | awk '{ s += $1 } END { printf "%d", s / NR }')
last=$(tail -n 10 "$T/times" | awk '{ s += $1 } END { printf "%d", s / NR }')
echo "# $N attaches in $(((t1 - t0) / 1000)) ms: mean $(((t1 - t0) / N)) us per attach"
echo "# first 10 attaches: mean $first us; last 10: mean $last us"
echo "# rules on a packet's path: $p1 with 1 sandbox; $p0 (first) and $pN (last) with $N"
echo "# rules in both tables: $r1 with 1 sandbox, $rN with $N"
check "the packet path does not grow (first sandbox's path)" test "$p1" = "$p0"
check "the packet path does not grow (last sandbox's path)" test "$p1" = "$pN"
check "each sandbox adds exactly one rule (its ingress chain's jump)" test "$rN" = $((r1 + N - 1))
check "net status: no drift with $N sandboxes" sh -c \
    "ip netns exec $H $AL --config $T/airlock.json net status >/dev/null"
# Attach time must stay roughly flat: the last ones within 3x the first ones (the
# read of the table before each batch grows a little with the element count).
check "attach time stays flat (last 10 within 3x the first 10)" test "$last" -le $((first * 3))
