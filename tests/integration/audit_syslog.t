#!/bin/bash
# tests/integration/audit_syslog.t: the audit log's syslog sink (audit.syslog) with
# a real collector, Debian's rsyslogd, started by this test alone (its own config,
# pid file and work directory under the test's temp dir) and writing only each
# message's MSG, one per line, so that what it received is compared byte for byte
# with the audit file.  Each case is a whole airlockd run with allowed and denied
# traffic of a VM (a banner on 2222 allowed, port 2223 denied):
#   unix   rsyslogd on a unix socket in a temp dir (imuxsock): every line arrives,
#          identical;
#   tcp    rsyslogd in the test's "internet" namespace (11.0.0.2), started only
#          after airlockd: the records queue while the collector is down and all
#          arrive once it is up, identical;
#   tls    the same over TLS with the test's own CA, the collector named by its
#          host name;
#   refusals  a collector whose certificate names another host, and one whose
#          CA is unknown: nothing arrives, airlockd's log says why, the metrics
#          say down with failures;
#   overflow  a queue of 3 with the collector down: records are dropped; once it
#          is up a sink_overflow record arrives, counting them, the received lines
#          are the file's less the dropped ones, and `airlock audit verify`
#          passes on the file;
# and airlockd's seccomp filter killed nothing (no worker restarted, and the
# kernel's log has no type=1326 line of a worker's pid).  Needs root; cleans up by trap.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/proxynet.sh
pn_require perl openssl rsyslogd
RSYSLOGD=$(command -v rsyslogd)
if ! "$RSYSLOGD" -v 2>/dev/null | head -1 | grep -q rsyslogd; then
	echo "1..0 # SKIP rsyslogd does not run"
	exit 0
fi
if [ ! -e /usr/lib/x86_64-linux-gnu/rsyslog/lmnsd_ossl.so ] &&
    ! ls /usr/lib/*/rsyslog/lmnsd_ossl.so >/dev/null 2>&1; then
	echo "1..0 # SKIP no rsyslog-openssl (make deps installs it)"
	exit 0
fi

set -e
pn_setup sy
pn_vm VA 0
pn_hosts "11.0.0.2 git2.test collector.test"
origin_start "$I" banner 11.0.0.2 2222 git2.test
cat >"$T/pa.json" <<'EOF'
{ "policy": "syslog-test",
  "rules": [ { "id": "git2", "host": "git2.test", "ports": [2222], "protocol": "tcp" } ] }
EOF
origin_cert "$T" collector.test collector.test
origin_cert "$T" wrong.test wrong.test
mkdir -p "$T/other"
origin_ca "$T/other"
origin_cert "$T/other" collector.test collector.test
set +e
RS_PIDS=""

# rs_start NAME NS INPUT...: rsyslogd in NS with its own files $T/rs-NAME.*, the
# input lines given (after the modules), writing each message's MSG to
# $T/rs-NAME.out; waits until it is ready ($T/rs-NAME.pid).
rs_start() {
	local name=$1 ns=$2 i
	shift 2
	mkdir -p "$T/rs-$name.d"
	{
		echo "global(workDirectory=\"$T/rs-$name.d\" maxMessageSize=\"256k\""
		echo "    net.enableDNS=\"off\""
		[ -n "${RS_TLS:-}" ] && echo "    defaultNetstreamDriver=\"ossl\"" \
		    "defaultNetstreamDriverCAFile=\"$RS_TLS_CA\"" \
		    "defaultNetstreamDriverCertFile=\"$RS_TLS_CERT\"" \
		    "defaultNetstreamDriverKeyFile=\"$RS_TLS_KEY\""
		echo ")"
		printf '%s\n' "$@"
		echo 'template(name="msgonly" type="string" string="%msg%\n")'
		echo "action(type=\"omfile\" file=\"$T/rs-$name.out\" template=\"msgonly\")"
	} >"$T/rs-$name.conf"
	: >"$T/rs-$name.out"
	ip netns exec "$ns" "$RSYSLOGD" -n -f "$T/rs-$name.conf" \
	    -i "$T/rs-$name.pid" >"$T/rs-$name.log" 2>&1 &
	RS_PIDS="$RS_PIDS $!"
	eval "RS_PID_$name=\$!"
	for i in $(seq 100); do
		[ -s "$T/rs-$name.pid" ] && { sleep 0.3; return 0; }
		sleep 0.1
	done
	return 1
}

rs_stop() {
	local p
	eval "p=\${RS_PID_$1:-}"
	[ -n "$p" ] || return 0
	kill "$p" 2>/dev/null
	wait "$p" 2>/dev/null
	eval "RS_PID_$1="
}

rs_cleanup() {
	local p
	for p in $RS_PIDS; do
		kill "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	pn_cleanup
}
NETNS_CLEANUP_HOOK=rs_cleanup

GA=""
banner() {
	ip netns exec "$VA" timeout 5 bash -c \
	    "exec 3<>/dev/tcp/$GA/$1; read -r l <&3; echo \"\$l\"" 2>/dev/null
}

# run_case NAME SYSLOG-OBJECT: airlockd with audit.syslog, traffic, stopped.
ATTACHED=0
WPIDS=""
run_case() {
	local name=$1 obj=$2
	PN_AUDIT='{ "path": "'"$T"'/'"$name"'.jsonl", "fsync": "never", "syslog": '"$obj"' }'
	[ -f "$T/airlockd.log" ] && cat "$T/airlockd.log" >>"$T/airlockd-all.log"
	if ! pn_start; then
		fail "$name: airlockd started"
		sed 's/^/# /' "$T/airlockd.log" | tail -5
		return 1
	fi
	if [ "$ATTACHED" = 0 ]; then
		pn_attach a 0 "$T/pa.json" || fail "net attach a"
		ATTACHED=1
	fi
	WPIDS="$WPIDS $(al_worker)"
	GA=$(pn_mapped "$VA" git2.test)
	[ "$(banner 2222)" = "git2.test ready" ]
	ok $? "$name: the allowed connection works"
	[ -z "$(banner 2223)" ]
	ok $? "$name: the denied one is refused"
	sleep 0.3	# the connect record is written at close
}

# wait_lines OUT N: until OUT has N lines (10 s at most).
wait_lines() {
	local i
	for i in $(seq 100); do
		[ "$(wc -l <"$1")" -ge "$2" ] && return 0
		sleep 0.1
	done
	return 1
}

# stop_and_compare NAME: airlockd stopped, then the collector's file is the
# audit file, byte for byte.
stop_and_compare() {
	local name=$1 cnt
	cp "$T/airlockd.log" "$T/airlockd-$name.log"
	pn_stop_checked
	cnt=$(wc -l <"$T/$name.jsonl")
	wait_lines "$T/rs-$name.out" "$cnt"
	cmp -s "$T/$name.jsonl" "$T/rs-$name.out"
	ok $? "$name: the collector received every record ($cnt), byte-identical to the file's lines"
	if ! cmp -s "$T/$name.jsonl" "$T/rs-$name.out"; then
		diff "$T/$name.jsonl" "$T/rs-$name.out" | head -5 | cut -c1-200 |
		    sed 's/^/# /'
		sed 's/^/# rsyslogd: /' "$T/rs-$name.log" | tail -5
		grep 'syslog' "$T/airlockd-$name.log" | sed 's/^/# /' | tail -5
	fi
	grep -q '"event":"connect"' "$T/rs-$name.out" &&
	    grep -q '"decision":"deny"' "$T/rs-$name.out"
	ok $? "$name: allowed and denied traffic among them"
}

metric() {
	"$AIRLOCK" --config "$T/airlock.json" metrics 2>/dev/null |
	    awk -v m="$1" '$1 == m { print $2 }'
}

# --- unix: rsyslogd on a socket in a temp dir ---------------------------------
rs_start unix "$H" 'module(load="imuxsock" SysSock.Use="off")' \
    "input(type=\"imuxsock\" Socket=\"$T/syslog.sock\" UseSpecialParser=\"off\"" \
    '    ParseHostname="on" RateLimit.Interval="0" UseSysTimeStamp="off")'
ok $? "unix: rsyslogd listens on $T/syslog.sock"
chmod 666 "$T/syslog.sock" 2>/dev/null
run_case unix '{ "target": "unix:'"$T"'/syslog.sock" }'
[ "$(metric airlock_audit_syslog_up)" = 1 ] &&
    [ "$(metric airlock_audit_syslog_sent_total)" -ge 3 ]
ok $? "unix: the metrics say up, records sent ($(metric airlock_audit_syslog_sent_total))"
stop_and_compare unix
head -c 0 "$T/rs-unix.out"
rs_stop unix

# --- tcp: the collector comes up after airlockd -------------------------------
run_case tcp '{ "target": "tcp:11.0.0.2:10514", "facility": "local3" }'
grep -q 'audit syslog sink tcp:11.0.0.2:10514: connect' "$T/airlockd.log"
ok $? "tcp: the collector is down: airlockd says so ($(grep -m1 'syslog sink' "$T/airlockd.log" | cut -c1-120))"
[ "$(metric airlock_audit_syslog_up)" = 0 ] &&
    [ "$(metric airlock_audit_syslog_queued)" -ge 3 ]
ok $? "tcp: down in the metrics, the records queued ($(metric airlock_audit_syslog_queued))"
rs_start tcp "$I" 'module(load="imtcp")' \
    'input(type="imtcp" address="11.0.0.2" port="10514")'
ok $? "tcp: rsyslogd listens on 11.0.0.2:10514"
for i in $(seq 100); do
	[ "$(metric airlock_audit_syslog_up)" = 1 ] && break
	sleep 0.1
done
[ "$(metric airlock_audit_syslog_up)" = 1 ]
ok $? "tcp: the sink connects once the collector is up"
[ "$(banner 2222)" = "git2.test ready" ]
ok $? "tcp: more traffic once it is up"
sleep 0.3
stop_and_compare tcp
rs_stop tcp

# --- tls: the test's own CA, the collector by name ----------------------------
RS_TLS=1 RS_TLS_CA=$T/ca.pem RS_TLS_CERT=$T/collector.test.pem \
    RS_TLS_KEY=$T/collector.test.key rs_start tls "$I" \
    'module(load="imtcp" StreamDriver.Name="ossl" StreamDriver.Mode="1" StreamDriver.AuthMode="anon")' \
    'input(type="imtcp" address="11.0.0.2" port="6514")'
ok $? "tls: rsyslogd listens on 11.0.0.2:6514 (TLS)"
run_case tls '{ "target": "tls:collector.test:6514", "ca": "'"$T"'/ca.pem" }'
stop_and_compare tls
rs_stop tls

# --- tls refused: the wrong name, an unknown CA -------------------------------
refused() {
	local name=$1 cert=$2 key=$3 why=$4
	RS_TLS=1 RS_TLS_CA=$T/ca.pem RS_TLS_CERT=$cert RS_TLS_KEY=$key \
	    rs_start "$name" "$I" \
	    'module(load="imtcp" StreamDriver.Name="ossl" StreamDriver.Mode="1" StreamDriver.AuthMode="anon")' \
	    'input(type="imtcp" address="11.0.0.2" port="6514")'
	run_case "$name" '{ "target": "tls:collector.test:6514", "ca": "'"$T"'/ca.pem" }'
	for i in $(seq 50); do
		grep -q "certificate is refused" "$T/airlockd.log" && break
		sleep 0.1
	done
	grep -q "audit syslog sink tls:collector.test:6514: TLS: the collector's certificate is refused: $why" "$T/airlockd.log"
	ok $? "$name: airlockd says why: $(grep -m1 'certificate is refused' "$T/airlockd.log" | sed 's/.*refused: //')"
	[ "$(metric airlock_audit_syslog_up)" = 0 ] &&
	    [ "$(metric airlock_audit_syslog_failures_total)" -ge 1 ] &&
	    [ "$(metric airlock_audit_syslog_sent_total)" = 0 ]
	ok $? "$name: the metrics say down, $(metric airlock_audit_syslog_failures_total) failure(s), nothing sent"
	pn_stop_checked
	[ -s "$T/$name.jsonl" ] && [ ! -s "$T/rs-$name.out" ]
	ok $? "$name: nothing delivered (the file has $(wc -l <"$T/$name.jsonl") records)"
	rs_stop "$name"
}
refused wrongname "$T/wrong.test.pem" "$T/wrong.test.key" "hostname mismatch"
refused unknownca "$T/other/collector.test.pem" "$T/other/collector.test.key" \
    "unable to get local issuer certificate"

# --- overflow: a queue of 3, the collector down, then up ----------------------
run_case overflow '{ "target": "unix:'"$T"'/ovf.sock", "queue": 3 }'
for p in 2224 2225 2226 2227 2228; do
	banner "$p" >/dev/null
done
sleep 0.3
d=$(metric airlock_audit_syslog_dropped_total)
[ "${d:-0}" -ge 1 ] && [ "$(metric airlock_audit_syslog_queued)" = 3 ]
ok $? "overflow: the collector down, the queue full (3), records dropped (${d:-none})"
rs_start ovf "$H" 'module(load="imuxsock" SysSock.Use="off")' \
    "input(type=\"imuxsock\" Socket=\"$T/ovf.sock\" UseSpecialParser=\"off\"" \
    '    ParseHostname="on" RateLimit.Interval="0" UseSysTimeStamp="off")'
chmod 666 "$T/ovf.sock" 2>/dev/null
for i in $(seq 100); do
	grep -q '"event":"sink_overflow"' "$T/rs-ovf.out" && break
	sleep 0.1
done
grep -q '"event":"sink_overflow"' "$T/rs-ovf.out"
ok $? "overflow: a sink_overflow record arrives once the collector is up"
cp "$T/airlockd.log" "$T/airlockd-overflow.log"
pn_stop_checked
sleep 1
dropped=$(perl -ne '$n += $1 if /"event":"sink_overflow".*"dropped":(\d+)/; END { print $n + 0 }' "$T/overflow.jsonl")
nf=$(wc -l <"$T/overflow.jsonl")
nr=$(wc -l <"$T/rs-ovf.out")
[ "$dropped" -ge 1 ] && [ $((nf - nr)) = "$dropped" ]
ok $? "overflow: the file's $nf records less the $dropped dropped are the $nr received"
perl -e '
    open my $f, "<", $ARGV[0] or die; my %h = map { $_ => 1 } <$f>;
    open my $r, "<", $ARGV[1] or die;
    while (<$r>) { exit 1 unless $h{$_} }' "$T/overflow.jsonl" "$T/rs-ovf.out"
ok $? "overflow: every received line is one of the file's, byte for byte"
grep '"event":"sink_overflow"' "$T/overflow.jsonl" | head -1 |
    grep -Eq '"dropped":[0-9]+,"first_seq":[0-9]+,"last_seq":[0-9]+,"first_ts":"[^"]+","last_ts":"[^"]+"'
ok $? "overflow: the record says how many, between which seq and ts"
"$AIRLOCK" audit verify "$T/overflow.jsonl" >"$T/verify.out" 2>&1
ok $? "overflow: airlock audit verify passes on the file ($(head -1 "$T/verify.out"))"
rs_stop ovf

# No seccomp kill of a worker during the test: the supervisor would have said so
# (and started another), and the kernel's log has no type=1326 line of their pids.
cat "$T/airlockd.log" >>"$T/airlockd-all.log"
! grep -Eq 'seccomp|worker \(pid [0-9]+\) (killed|exited)' "$T/airlockd-all.log"
ok $? "no worker was killed or restarted in any run"
pids=$(echo $WPIDS | tr ' ' '|')
if [ -n "$pids" ] && dmesg >/dev/null 2>&1; then
	! dmesg | grep 'type=1326' | grep -Eq " pid=($pids) "
	ok $? "no seccomp kill (type=1326) of the workers ($WPIDS) in the kernel's log"
fi
pn_done
