#!/bin/bash
# tests/integration/proxy_confine.t: airlockd's processes run confined
# (proxy/proxy_confine.c) and still do their work, through the real enforcement
# path (tests/lib/proxynet.sh).
#
# Covers: /proc/PID/status of the running worker shows Seccomp 2 (a filter) on
# every thread, NoNewPrivs 1 and CapEff 0; the root reader and netwatch children
# show Seccomp 2 and NoNewPrivs 1.  Upstream trust from a hashed directory only
# (SSL_CERT_DIR, no CA file, no upstream_ca_file): read whole at start, so an
# inspected request verifies with nothing opened; a spliced request; a name in no
# hosts file, resolved by evdns over UDP from a DNS server here; 16 workers and
# a burst of requests at once (malloc's arenas past eight); a reload; the
# audit log renamed away as logrotate does, SIGHUP: the reader opens the new file
# for the worker, which continues the chain there (`airlock audit verify` across
# both files), the new file given to the daemon's user.  airlockd is alive after
# all of it (a filter violation would have killed it), and at exit the reader
# removes the control socket.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/proxynet.sh
pn_require curl openssl

set -e
pn_setup cf
pn_vm V 0
inV() { ip netns exec "$V" "$@"; }
ip netns exec "$I" ip addr add 11.0.0.3/24 dev eth0
ip netns exec "$I" ip addr add 11.0.0.4/24 dev eth0
pn_hosts "11.0.0.2 api.test" "11.0.0.3 splice.test"
origin_cert "$T" api.test api.test
origin_cert "$T" splice.test splice.test
origin_cert "$T" dns.test dns.test
origin_start "$I" tls 11.0.0.2 443 api.test "$T/api.test.pem" "$T/api.test.key"
origin_start "$I" tls 11.0.0.3 443 splice.test "$T/splice.test.pem" \
    "$T/splice.test.key"
origin_start "$I" tls 11.0.0.4 443 dns.test "$T/dns.test.pem" "$T/dns.test.key"
# dns.test is in no hosts file: the host's resolver (resolv.conf: 127.0.0.1 in
# H) answers it, so evdns sends a query over UDP after the worker confined itself.
# One A record, 11.0.0.4, for every A question; no answer for anything else.
ip netns exec "$H" perl -MIO::Socket::INET -e '
	my $s = IO::Socket::INET->new(LocalAddr => "127.0.0.1", LocalPort => 53,
	    Proto => "udp") or die "dns: $!";
	$| = 1; print "ready\n";
	for (;;) {
		defined $s->recv(my $q, 512) or next;
		next if length($q) < 17;
		my ($id) = unpack("n", $q);
		my $o = 12;
		$o += ord(substr($q, $o, 1)) + 1 while $o < length($q) &&
		    ord(substr($q, $o, 1));
		my $qn = substr($q, 12, $o + 5 - 12);
		my $a = unpack("n", substr($q, $o + 1, 2)) == 1;
		$s->send(pack("n6", $id, 0x8180, 1, $a ? 1 : 0, 0, 0) . $qn .
		    ($a ? pack("n3Nn", 0xc00c, 1, 1, 60, 4) . pack("C4", 11, 0, 0, 4) :
		    ""));
	}' >"$T/dns.ready" 2>"$T/dns.log" &
ORIGIN_PIDS="$ORIGIN_PIDS $!"	# killed with the origins
netns_wait_for "$T/dns.ready" ready 50
# The test CA as the system store would hold it: a hashed directory, no bundle.
mkdir -p "$T/certs"
cp "$T/ca.pem" "$T/certs/test-ca.pem"
c_rehash "$T/certs" >/dev/null 2>&1 || openssl rehash "$T/certs"
chmod -R a+rX "$T/certs"
cat >"$T/policy.json" <<'EOF'
{ "policy": "confine-test",
  "rules": [
    { "id": "api", "host": "api.test", "tls": "inspect" },
    { "id": "splice", "host": "splice.test" },
    { "id": "dns", "host": "dns.test", "tls": "inspect" }
  ] }
EOF
cat >"$T/airlock.json" <<EOF
{ "state_dir": "$T/state" }
EOF
"$AIRLOCK" --config "$T/airlock.json" ca init >/dev/null
set +e

# 16 workers: past 8 threads glibc's malloc would count the CPUs in /sys for its
# next arena, after the worker confined itself (proxy.c sets M_ARENA_MAX first).
PN_WORKERS=16
PN_WRAP="env SSL_CERT_FILE=$T/no-such-bundle.pem SSL_CERT_DIR=$T/certs"
if ! pn_start; then
	echo "1..0 # SKIP airlockd did not start: $(head -c 300 "$T/airlockd.log")"
	exit 0
fi
PN_WRAP=""
is "$(cat /proc/$DPID/comm 2>/dev/null)" airlockd "the daemon's PID is airlockd itself"
WPID=$(al_worker)
is "$(cat /proc/$WPID/comm 2>/dev/null)" airlockd "its one child is the worker"
pn_attach c1 0 "$T/policy.json"
ok $? "net attach c1"

# --- confinement, as /proc shows it ------------------------------------------------
st=/proc/$WPID/status
like "$(grep '^Seccomp:' "$st")" '^Seccomp:	2$' "worker: Seccomp 2 (a seccomp filter)"
like "$(grep '^NoNewPrivs:' "$st")" '^NoNewPrivs:	1$' "worker: NoNewPrivs 1"
like "$(grep '^CapEff:' "$st")" '^CapEff:	0000000000000000$' "worker: CapEff 0"
like "$(grep '^CapPrm:' "$st")" '^CapPrm:	0000000000000000$' "worker: CapPrm 0"
nt=0 nf=0
for t in /proc/$WPID/task/*/status; do
	nt=$((nt + 1))
	grep -q '^Seccomp:	2$' "$t" || nf=$((nf + 1))
done
[ "$nt" -ge 17 ] && [ "$nf" = 0 ]
ok $? "every thread of the worker has the filter ($nt threads, $nf without)"
kids=$(pgrep -P "$WPID" | tr '\n' ' ')
is "$(echo $kids | wc -w)" 2 "two root children (reader, netwatch)"
for k in $kids; do
	like "$(grep '^Seccomp:' /proc/$k/status)" '^Seccomp:	2$' \
	    "child $k: Seccomp 2"
	like "$(grep '^NoNewPrivs:' /proc/$k/status)" '^NoNewPrivs:	1$' \
	    "child $k: NoNewPrivs 1"
	like "$(grep '^Uid:' /proc/$k/status)" '^Uid:	0	0	0	0$' \
	    "child $k: still root"
done

# --- traffic ---------------------------------------------------------------------
AL() { inH "$AIRLOCK" --config "$T/airlock.json" "$@"; }
AL ca cert c1 >"$T/c1-ca.pem" 2>/dev/null
out=$(inV curl -sS --max-time 8 --cacert "$T/c1-ca.pem" https://api.test/ 2>&1)
is "$out" "origin api.test" \
    "inspected request, upstream verified against the hashed directory alone"
out=$(inV curl -sS --max-time 8 --cacert "$T/ca.pem" https://splice.test/ 2>&1)
is "$out" "origin splice.test" "spliced request"
out=$(inV curl -sS --max-time 8 --cacert "$T/c1-ca.pem" https://dns.test/ 2>&1)
is "$out" "origin dns.test" "a name the host resolves over DNS (evdns, UDP)"
# A burst at once: every worker thread allocates (and so takes an arena).
pids=""
for i in $(seq 24); do
	inV curl -s --max-time 10 --cacert "$T/c1-ca.pem" -o "$T/burst.$i" \
	    https://api.test/ &
	pids="$pids $!"
done
wait $pids
nb=0
for i in $(seq 24); do
	[ "$(cat "$T/burst.$i" 2>/dev/null)" = "origin api.test" ] && nb=$((nb + 1))
done
is "$nb" 24 "24 inspected requests at once, all answered"
out=$(AL reload 2>&1)
ok $? "reload under the filter ($out)"

# --- SIGHUP after a rotation -------------------------------------------------------
L=$T/audit.jsonl
sleep 0.3
mv "$L" "$L.1"
kill -HUP "$DPID"
netns_wait_for "$L" '"seq":'
ok $? "SIGHUP after a rename: a new log at the same path"
out=$(inV curl -sS --max-time 8 --cacert "$T/c1-ca.pem" https://api.test/ 2>&1)
is "$out" "origin api.test" "a request after the rotation"
sleep 0.3
grep -q '"dst":"api.test:443"' "$L"
ok $? "... is recorded in the new file"
"$AIRLOCK" audit verify "$L.1" "$L" >"$T/vout" 2>&1
ok $? "the chain verifies across both files ($(tail -n 1 "$T/vout"))"
like "$(stat -c '%U %a' "$L")" '^airlock 600$' "the new file: 0600, the daemon's user"
grep -q "Landlock is not available" "$T/airlockd.log"
[ $? != 0 ] || diag "this kernel has no Landlock: the filter alone closes the file system"

pn_stop_checked
[ ! -e "$T/control.sock" ]
ok $? "the reader removed the control socket at exit"
pn_done
