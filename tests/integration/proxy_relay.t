#!/bin/bash
# tests/integration/proxy_relay.t: the splice relay's bulk paths (read-ahead past
# libevent's 4 KiB reads, write-through, backpressure, half-close), byte for byte.
# Namespaces as in proxy_splice.t: a VM (clients), a host (airlockd and a REDIRECT of
# the VM's TCP), an "internet" (origins).  Needs root; cleans up by trap.
set -u
cd "$(dirname "$0")/../.." || exit 1

if [ "$(id -u)" != 0 ]; then
	echo "1..0 # SKIP needs root (network namespaces)"
	exit 0
fi
B=${AIRLOCK_BUILD:-build}
AIRLOCKD=${AIRLOCKD:-$B/airlockd}
for f in "$AIRLOCKD" "$B/tests/tools/origin"; do
	if [ ! -x "$f" ]; then
		echo "1..0 # SKIP $f not built"
		exit 0
	fi
done
for c in curl openssl nft ip perl; do
	if ! command -v "$c" >/dev/null; then
		echo "1..0 # SKIP no $c"
		exit 0
	fi
done
. tests/lib/tap.sh
. tests/lib/origin.sh

S=$$
H=alrH$S V=alrV$S I=alrI$S
T=$(mktemp -d /tmp/proxy_relay.XXXXXX)
chmod 755 "$T"
DPID=""

cleanup() {
	set +e
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	origin_stop_all
	ip netns del "$H" 2>/dev/null
	ip netns del "$V" 2>/dev/null
	ip netns del "$I" 2>/dev/null
	rm -rf "/etc/netns/$H" "/etc/netns/$V"
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

inV() { ip netns exec "$V" "$@"; }

set -e
for ns in "$H" "$V" "$I"; do
	ip netns add "$ns"
	ip -n "$ns" link set lo up
done
ip link add vh$S netns "$H" type veth peer name vv$S netns "$V"
ip link add ih$S netns "$H" type veth peer name ii$S netns "$I"
ip -n "$H" addr add 10.233.0.1/30 dev vh$S
ip -n "$H" addr add 11.0.0.1/24 dev ih$S
ip -n "$V" addr add 10.233.0.2/30 dev vv$S
ip -n "$I" addr add 11.0.0.2/24 dev ii$S
for l in "$H vh$S" "$H ih$S" "$V vv$S" "$I ii$S"; do
	set -- $l
	ip -n "$1" link set "$2" up
done
ip -n "$V" route add default via 10.233.0.1
ip -n "$I" route add default via 11.0.0.1
ip netns exec "$H" sysctl -qw net.ipv4.ip_forward=0
ip netns exec "$H" nft -f - <<EOF
table ip airlock_test {
	chain pre {
		type nat hook prerouting priority dstnat;
		iifname "vh$S" udp dport 53 redirect to :15053
		iifname "vh$S" meta l4proto tcp redirect to :15001
	}
}
EOF
mkdir -p "/etc/netns/$H" "/etc/netns/$V"
printf '127.0.0.1 localhost\n11.0.0.2 origin.test echo.test\n' >"/etc/netns/$H/hosts"
echo "nameserver 127.0.0.1" >"/etc/netns/$H/resolv.conf"
echo "nameserver 10.233.0.1" >"/etc/netns/$V/resolv.conf"
echo "127.0.0.1 localhost" >"/etc/netns/$V/hosts"

origin_ca "$T"
origin_cert "$T" origin.test origin.test
origin_start "$I" tls 11.0.0.2 443 origin.test "$T/origin.test.pem" \
    "$T/origin.test.key"
origin_start "$I" banner 11.0.0.2 22 echo.test

mkdir -p "$T/state/sandboxes"
cat >"$T/policy.json" <<'EOF'
{ "policy": "relay-test",
  "rules": [
    { "id": "origin", "host": "origin.test", "ports": [443] },
    { "id": "echo", "host": "echo.test", "ports": [22], "protocol": "tcp" }
  ] }
EOF
cat >"$T/state/sandboxes/t1.json" <<EOF
{ "name": "t1", "kind": "attach", "iface": "vh$S", "host_ip": "10.233.0.1",
  "guest_ip": "10.233.0.2", "prefix": 30, "mac": "", "policy": "$T/policy.json",
  "policy_hash": "", "created": 0 }
EOF
chmod 600 "$T/state/sandboxes/t1.json"
cat >"$T/airlock.json" <<EOF
{ "state_dir": "$T/state", "control_socket": "$T/control.sock",
  "proxy_port": 15001, "dns_port": 15053, "workers": 1,
  "audit": { "path": "$T/audit.jsonl", "fsync": "never" } }
EOF
set +e

ip netns exec "$H" "$AIRLOCKD" --config "$T/airlock.json" --foreground \
    2>"$T/airlockd.log" &
DPID=$!
for i in $(seq 50); do
	[ -S "$T/control.sock" ] && break
	sleep 0.1
done
sleep 0.3
if ! kill -0 "$DPID" 2>/dev/null; then
	echo "1..0 # SKIP airlockd did not start: $(head -c 300 "$T/airlockd.log")"
	exit 0
fi
mapped() {
	inV timeout 3 getent ahostsv4 "$1" 2>/dev/null | awk 'NR == 1 { print $1 }'
}
M=$(mapped origin.test)
E=$(mapped echo.test)

echo "1..9"

# 8 MiB over TLS: read-ahead and write-through on the way down; the content is
# all 'x', so a reordered, lost or doubled chunk shows as a wrong size or byte.
size=8388608
inV curl -sS --max-time 20 --cacert "$T/ca.pem" -o "$T/dl" \
    "https://origin.test/size/$size" 2>"$T/curl.err"
[ "$(wc -c <"$T/dl")" = "$size" ] && [ "$(tr -d x <"$T/dl" | wc -c)" = 0 ]
ok $? "8 MiB download through the splice, byte for byte"

# Eight at once: the worker interleaves them.
pids=""
for k in 1 2 3 4 5 6 7 8; do
	inV curl -sS --max-time 30 --cacert "$T/ca.pem" -o "$T/dl$k" \
	    "https://origin.test/size/$((size / 2 + k))" 2>/dev/null &
	pids="$pids $!"
done
wait $pids
bad=0
for k in 1 2 3 4 5 6 7 8; do
	[ "$(wc -c <"$T/dl$k")" = "$((size / 2 + k))" ] &&
	    [ "$(tr -d x <"$T/dl$k" | wc -c)" = 0 ] || bad=$((bad + 1))
done
[ "$bad" = 0 ]
ok $? "eight concurrent 4 MiB downloads, each byte for byte ($bad bad)"

# A slow reader: the VM takes 2 MiB/s, so the relay's output backs up, reading
# stops at the high-water mark and resumes (partial write-through, queued rest).
inV curl -sS --max-time 20 --limit-rate 2M --cacert "$T/ca.pem" -o "$T/slow" \
    "https://origin.test/size/$((size / 2))" 2>/dev/null
[ "$(wc -c <"$T/slow")" = "$((size / 2))" ] && [ "$(tr -d x <"$T/slow" | wc -c)" = 0 ]
ok $? "slow reader (backpressure): 4 MiB arrive whole"

# Raw TCP echo (protocol tcp rule): 6 MiB of random bytes up while the echo comes
# down, then a half-close: everything must come back, in order, then EOF.
head -c 6291456 /dev/urandom >"$T/up"
echo_run() {	# echo_run FILE READ-DELAY: prints "BYTES SHA256" of what came back
	inV perl -MIO::Socket::INET -MDigest::SHA -e '
	    my ($addr, $file, $delay) = @ARGV;
	    my $s = IO::Socket::INET->new(PeerAddr => $addr, PeerPort => 22,
		Timeout => 5) or die "connect: $!\n";
	    my $banner = <$s>;
	    die "banner: $banner" unless $banner eq "echo.test ready\n";
	    my $pid = fork();
	    if ($pid == 0) {
		open(my $f, "<", $file) or die;
		binmode $f;
		local $/ = \65536;
		while (my $b = <$f>) { print $s $b or die "write: $!\n" }
		$s->flush;
		shutdown($s, 1);
		exit 0;
	    }
	    sleep $delay;
	    my ($sha, $n, $buf) = (Digest::SHA->new(256), 0);
	    $SIG{ALRM} = sub { print "TIMEOUT $n\n"; kill 9, $pid; exit 1 };
	    alarm 30;
	    while ((my $r = sysread($s, $buf, 65536)) > 0) {
		$sha->add($buf); $n += $r;
	    }
	    waitpid($pid, 0);
	    print "$n ", $sha->hexdigest, "\n";' "$E" "$1" "$2" 2>&1
}
want="6291456 $(sha256sum <"$T/up" | awk '{ print $1 }')"
got=$(echo_run "$T/up" 0)
[ "$got" = "$want" ]
ok $? "raw TCP: 6 MiB echoed back whole and in order, then EOF after the half-close"
[ "$got" = "$want" ] || echo "#   got '$got' want '$want'"

# The same with the reader starting 1 s late: both directions back up.
got=$(echo_run "$T/up" 1)
[ "$got" = "$want" ]
ok $? "raw TCP: the same with a late reader (backpressure both ways)"
[ "$got" = "$want" ] || echo "#   got '$got' want '$want'"

# A small exchange still works (no read-ahead: libevent's read was short).
got=$(inV timeout 5 bash -c "exec 3<>/dev/tcp/$E/22; read -r l <&3;
    echo hello >&3; read -r l <&3; echo \"\$l\"" 2>&1)
[ "$got" = hello ]
ok $? "raw TCP: a one-line echo"

sleep 0.3
# TLS records add a little to the 8 MiB of content: between 8 MiB and 1 % more.
down=$(grep '"dst":"origin.test:443"' "$T/audit.jsonl" | head -1 |
    sed -n 's/.*"bytes_down":\([0-9]*\).*/\1/p')
[ "${down:-0}" -ge "$size" ] && [ "${down:-0}" -le $((size + size / 100)) ]
ok $? "connect record counts the download's bytes ($down)"
grep '"dst":"echo.test:22"' "$T/audit.jsonl" | grep -q '"bytes_up":6291456'
ok $? "connect record counts the echo's 6 MiB up exactly"

# Under make SAN=1 a sanitizer report would land in the daemon's log.
! grep -q "Sanitizer\|runtime error" "$T/airlockd.log"
ok $? "no sanitizer report in airlockd's log"

if [ "$failed" -ne 0 ]; then
	echo "# airlockd log:"
	sed 's/^/# /' "$T/airlockd.log" | tail -20
fi
exit $((failed > 0))
