#!/bin/bash
# bench/run.sh: airlock side by side with nginx, HAProxy, Squid and mitmproxy
# (issue 7; README.md's "Benchmarks" states the goals, bench/report.pl checks them).
# Run through `make bench [QUICK=1]`; bench/README.md says what is measured and how
# to read the table.
#
# Everything runs in network namespaces made here, named alb-*-PID:
#
#   client namespaces ("VMs", wrk)      host namespace (proxies)      origin namespace
#   alb-c<cfg>  10.240.N.2/30 --veth-- 10.240.N.1 | 11.0.0.1 --veth-- 11.0.0.2 (nginx,
#   one per configuration               airlockd, nginx, HAProxy,       HTTPS, test CA,
#                                       Squid, mitmdump                 /small /big)
#
# Each client namespace's TCP goes where production would send it: the airlock one is
# attached with `airlock net attach` (airlockd's policy DNS, SO_ORIGINAL_DST, the
# sandbox's nftables rules); the peers' ones are redirected by an nftables rule in the
# host namespace to the peer's transparent port; the direct one is routed through the
# host namespace to the origin.  Nothing outside these namespaces is touched; every
# process started here is killed by PID at exit (trap), the namespaces and the
# /etc/netns entries are deleted.
#
# Scenarios (BENCH_SCENARIOS): ka (keep-alive, 100 bytes), new (a new TLS connection
# per request), big (1 MiB downloads), each at BENCH_CONNS connections; h2 (HTTP/2
# keep-alive, 100 bytes: h2load over 4 connections with BENCH_H2_STREAMS concurrent
# streams each, for direct, airlock inspect and nginx terminating h2 only); and, not
# in the default set, lat (one keep-alive connection: added latency without queueing).
# Environment: QUICK=1 (a ~2-minute subset), BENCH_SECONDS (per run), BENCH_REPEATS,
# BENCH_H2_STREAMS ("32 256", QUICK too: only three configurations run h2),
# BENCH_IDLE (idle connections), BENCH_ONLY (space-separated configurations),
# BENCH_OUT (results folder, default bench/results), BENCH_PERF and BENCH_HOLD
# (profiling, below), AIRLOCK_BUILD.
#
# The whole script is one { } block: bash parses it before running any of it, so
# editing this file while a run is going cannot derail that run.
{
set -u
cd "$(dirname "$0")/.." || exit 1
TOP=$(pwd)
B=${AIRLOCK_BUILD:-build}
case $B in /*) ;; *) B=$TOP/$B ;; esac
AIRLOCK=${AIRLOCK:-$B/airlock}
AIRLOCKD=${AIRLOCKD:-$B/airlockd}
IDLECONN=$B/bench/idleconn
OUT=${BENCH_OUT:-$TOP/bench/results}
QUICK=${QUICK:-0}
[ "$QUICK" = 0 ] && QUICK=""

if [ -n "$QUICK" ]; then
	SECS=${BENCH_SECONDS:-3}
	REPEATS=${BENCH_REPEATS:-1}
	CONNS=${BENCH_CONNS:-32}
	IDLE_N=${BENCH_IDLE:-2000}
	WATCHDOG=420
else
	SECS=${BENCH_SECONDS:-3}
	REPEATS=${BENCH_REPEATS:-3}
	CONNS=${BENCH_CONNS:-"32 256"}
	IDLE_N=${BENCH_IDLE:-10000}
	WATCHDOG=1200
fi
SCENARIOS=${BENCH_SCENARIOS:-"ka new big h2"}
H2_STREAMS=${BENCH_H2_STREAMS:-"32 256"}
H2_CFGS="direct inspect nginx"	# the configurations that speak HTTP/2 to the VM
ALL_CFGS="direct splice inspect nginx haproxy squid-bump squid-splice mitm"
CFGS=${BENCH_ONLY:-$ALL_CFGS}

say() { printf 'bench: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (network namespaces, nftables)"
for f in "$AIRLOCK" "$AIRLOCKD" "$IDLECONN"; do
	[ -x "$f" ] || die "$f not built (make bench builds it)"
done

# --- the peers, from Debian packages --------------------------------------------
# Installed here (bench/deps.sh), never by `make deps`: make check must not need them.
BENCH_PKGS="wrk nghttp2-client nginx-light haproxy squid-openssl mitmproxy iproute2 nftables curl openssl"
sh bench/deps.sh $BENCH_PKGS || die "could not install the peers"

# --- state and clean-up ---------------------------------------------------------
# What an earlier run left when it was killed outright (SIGKILL, or a TERM while a
# foreground command held the trap back): its namespaces end in its PID, and a PID
# that no longer runs bench/run.sh is no run of ours any more.
for n in $(ip netns list 2>/dev/null | awk '$1 ~ /^alb-/ { print $1 }'); do
	p=${n##*-}
	case $p in *[!0-9]*|"") continue ;; esac
	if ! grep -qs 'bench/run.sh' "/proc/$p/cmdline"; then
		ip netns pids "$n" 2>/dev/null | xargs -r kill 2>/dev/null
		ip netns del "$n" 2>/dev/null && rm -rf "/etc/netns/$n" &&
		    echo "bench: removed $n, left by an earlier run that was killed" >&2
	fi
done
S=$$
T=$(mktemp -d /tmp/airlock-bench.XXXXXX) || exit 1
chmod 755 "$T"
H=alb-h-$S
O=alb-o-$S
NSLIST=""
PIDS=""		# every long-running process started here
WDPID=""

descendants() {	# descendants PID: PID's children, recursively (from /proc)
	local p c
	for p in "$@"; do
		for c in $(awk -v p="$p" '{ sub(/^.*\) /, ""); if ($2 == p) print FILENAME }' \
		    /proc/[0-9]*/stat 2>/dev/null | cut -d/ -f3); do
			echo "$c"
			descendants "$c"
		done
	done
}

cleanup() {
	set +e
	trap - EXIT INT TERM
	[ -n "$WDPID" ] && kill "$WDPID" 2>/dev/null
	local p all=""
	for p in $PIDS; do
		all="$all $p $(descendants "$p")"
	done
	for p in $PIDS; do
		kill "$p" 2>/dev/null
	done
	for p in $PIDS; do
		wait "$p" 2>/dev/null
	done
	# Helpers that outlived their parent (Squid's certificate generators).
	for p in $all; do
		kill "$p" 2>/dev/null
	done
	for n in $NSLIST; do
		ip netns del "$n" 2>/dev/null
		rm -rf "/etc/netns/$n"
	done
	rm -rf "$T"
}
trap cleanup EXIT
trap 'say interrupted; exit 1' INT TERM
# Time-bounded: the whole run, whatever hangs.
( sleep "$WATCHDOG"; say "watchdog: over ${WATCHDOG}s, stopping"; kill -TERM $S ) &
WDPID=$!

# Sockets: every process inherits the hard limit on open files.
ulimit -n "$(ulimit -Hn)" 2>/dev/null
NOFILE=$(ulimit -n)

# --- topology -------------------------------------------------------------------
ns_new() {	# ns_new NAME: a namespace with lo up and its own /etc/netns entry
	ip netns add "$1" || return 1
	NSLIST="$NSLIST $1"
	mkdir -p "/etc/netns/$1"
	ip -n "$1" link set lo up
}
inns() { local n=$1; shift; ip netns exec "$n" "$@"; }

client_ns() {	# client_ns CFG: the "VM" namespace a configuration's traffic leaves from
	case $1 in
	splice|inspect) echo "alb-cairlock-$S" ;;
	*) echo "alb-c$1-$S" ;;
	esac
}
client_if() {	# client_if TAG: the host side of the client's veth
	echo "bh-$1"
}
CLIENT_TAGS="direct airlock nginx haproxy squid-bump squid-splice mitm"

set -e
ns_new "$H"
ns_new "$O"
ip link add ho0 netns "$H" type veth peer name oh0 netns "$O"
ip -n "$H" addr add 11.0.0.1/24 dev ho0
ip -n "$O" addr add 11.0.0.2/24 dev oh0
ip -n "$H" link set ho0 up
ip -n "$O" link set oh0 up
ip -n "$O" route add default via 11.0.0.1
# The host namespace routes only for the direct client (airlock's rules drop the
# attached VM's forwarded packets; the peers' clients are redirected before routing).
inns "$H" sysctl -qw net.ipv4.ip_forward=1
printf '127.0.0.1 localhost\n11.0.0.2 origin.test splice.test inspect.test\n' \
    >"/etc/netns/$H/hosts"
echo "nameserver 127.0.0.1" >"/etc/netns/$H/resolv.conf"
printf '127.0.0.1 localhost\n' >"/etc/netns/$O/hosts"
i=0
for tag in $CLIENT_TAGS; do
	i=$((i + 1))
	c=alb-c$tag-$S
	hif=$(client_if "$tag")
	ns_new "$c"
	ip link add "$hif" netns "$H" type veth peer name eth0 netns "$c"
	ip -n "$H" addr add "10.240.$i.1/30" dev "$hif"
	ip -n "$c" addr add "10.240.$i.2/30" dev eth0
	ip -n "$H" link set "$hif" up
	ip -n "$c" link set eth0 up
	ip -n "$c" route add default via "10.240.$i.1"
	inns "$c" sysctl -qw net.ipv4.tcp_tw_reuse=1
	inns "$c" sysctl -qw net.ipv4.ip_local_port_range="10000 65000"
	if [ "$tag" = airlock ]; then
		# Names through airlockd's policy DNS, as in a VM.
		printf '127.0.0.1 localhost\n' >"/etc/netns/$c/hosts"
		echo "nameserver 10.240.$i.1" >"/etc/netns/$c/resolv.conf"
		AIRLOCK_GUEST=10.240.$i.2
	else
		printf '127.0.0.1 localhost\n11.0.0.2 origin.test\n' >"/etc/netns/$c/hosts"
		echo "nameserver 127.0.0.1" >"/etc/netns/$c/resolv.conf"
	fi
done
inns "$H" sysctl -qw net.ipv4.ip_local_port_range="10000 65000"
inns "$H" sysctl -qw net.ipv4.tcp_tw_reuse=1
# The peers' transparent ports: each client namespace's TCP to its own.
inns "$H" nft -f - <<EOF
table ip bench {
	chain pre {
		type nat hook prerouting priority dstnat;
		iifname "bh-nginx" tcp dport 443 redirect to :8443
		iifname "bh-haproxy" tcp dport 443 redirect to :8444
		iifname "bh-squid-bump" tcp dport 443 redirect to :3129
		iifname "bh-squid-splice" tcp dport 443 redirect to :3130
		iifname "bh-mitm" tcp dport 443 redirect to :8080
	}
}
EOF

# --- certificates, the origin ---------------------------------------------------
. tests/lib/origin.sh
origin_ca "$T"
origin_cert "$T" origin origin.test splice.test inspect.test
TOKEN=$(openssl rand -hex 16)	# a stand-in credential, made for this run only
head -c 1048576 /dev/urandom >"$T/big"
SMALL=$(printf '%0100d' 0)	# 100 bytes

mkdir -p "$T/no" "$T/np"
cat >"$T/origin.conf" <<EOF
worker_processes 2;
worker_rlimit_nofile $NOFILE;
pid $T/no/nginx.pid;
error_log $T/no/error.log warn;
events { worker_connections $((NOFILE / 2)); }
http {
	access_log off;
	keepalive_requests 10000000;
	keepalive_timeout 300s;
	client_header_timeout 300s;
	ssl_protocols TLSv1.2 TLSv1.3;
	ssl_session_cache shared:origin:10m;
	server {
		# h2 for the h2 scenario (ALPN: wrk offers none and gets HTTP/1.1).
		listen 11.0.0.2:443 ssl http2;
		http2_max_concurrent_streams 256;
		ssl_certificate $T/origin.pem;
		ssl_certificate_key $T/origin.key;
		default_type application/octet-stream;
		location = /small { return 200 "$SMALL"; }
		location = /big { alias $T/big; }
		# 204 only with the injected header: proves a configuration injects it.
		location = /hdr {
			if (\$http_x_bench_token = "$TOKEN") { return 204; }
			return 403;
		}
	}
}
EOF
set +e

start_bg() {	# start_bg NS LOG CMD...: a long-running process; its PID in $LASTPID
	local n=$1 log=$2
	shift 2
	ip netns exec "$n" "$@" >"$log" 2>&1 &
	LASTPID=$!
	PIDS="$PIDS $LASTPID"
}
wait_port() {	# wait_port NS PORT [TENTHS]
	local k
	for k in $(seq "${3:-100}"); do
		inns "$1" ss -Hltn "sport = :$2" | grep -q . && return 0
		sleep 0.1
	done
	return 1
}

start_bg "$O" "$T/no/out.log" nginx -e "$T/no/error.log" -p "$T/no/" \
    -c "$T/origin.conf" -g 'daemon off;'
wait_port "$O" 443 || die "origin nginx did not start: $(tail -3 "$T/no/error.log")"

# --- airlock ---------------------------------------------------------------------
declare -A PROXYPID UNAVAIL
mkdir -p "$T/al/state"
chmod 700 "$T/al/state"
cat >"$T/al/airlock.json" <<EOF
{ "state_dir": "$T/al/state", "control_socket": "$T/al/control.sock",
  "proxy_port": 15001, "dns_port": 15053, "workers": 1,
  "upstream_ca_file": "$T/ca.pem",
  "audit": { "path": "$T/al/audit.jsonl", "fsync": "never" } }
EOF
cat >"$T/al/policy.json" <<EOF
{ "policy": "bench",
  "rules": [
    { "id": "splice", "host": "splice.test", "ports": [443] },
    { "id": "inspect", "host": "inspect.test", "ports": [443], "tls": "inspect",
      "inject": [ { "secret": "bench_token", "header": "X-Bench-Token" } ] }
  ],
  "limits": { "connections": 100000 } }
EOF
al() { inns "$H" "$AIRLOCK" --config "$T/al/airlock.json" "$@"; }
al ca init >"$T/al/ca.log" 2>&1 || say "airlock ca init: $(cat "$T/al/ca.log")"
printf '%s' "$TOKEN" | al vault put bench_token --host inspect.test \
    >"$T/al/vault.log" 2>&1 || say "airlock vault put: $(cat "$T/al/vault.log")"
start_bg "$H" "$T/al/airlockd.log" "$AIRLOCKD" --config "$T/al/airlock.json" \
    --foreground
PROXYPID[airlock]=$LASTPID
wait_port "$H" 15001 || say "airlockd did not start: $(tail -3 "$T/al/airlockd.log")"
al net attach bench --policy "$T/al/policy.json" --iface "$(client_if airlock)" \
    --guest-ip "$AIRLOCK_GUEST" >"$T/al/attach.log" 2>&1 ||
    say "airlock net attach: $(cat "$T/al/attach.log")"

# --- nginx: TLS terminated and re-originated (the practical limit for interception) --
cat >"$T/np/nginx.conf" <<EOF
worker_processes 1;
worker_rlimit_nofile $NOFILE;
pid $T/np/nginx.pid;
error_log $T/np/error.log warn;
events { worker_connections $((NOFILE / 2)); }
http {
	access_log off;
	keepalive_requests 10000000;
	keepalive_timeout 300s;
	ssl_protocols TLSv1.2 TLSv1.3;
	upstream origin {
		server 11.0.0.2:443;
		keepalive 512;
		keepalive_requests 10000000;
		keepalive_timeout 300s;
	}
	server {
		# h2 towards the client for the h2 scenario (ALPN; wrk gets HTTP/1.1), with
		# airlock's bound on concurrent streams (100); upstream stays HTTP/1.1 (nginx
		# 1.22's proxy module speaks no HTTP/2), from the same keep-alive pool.
		listen 8443 ssl http2;
		http2_max_concurrent_streams 100;
		ssl_certificate $T/origin.pem;
		ssl_certificate_key $T/origin.key;
		location / {
			proxy_pass https://origin;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			proxy_set_header Host origin.test;
			proxy_set_header X-Bench-Token "$TOKEN";
			proxy_ssl_server_name on;
			proxy_ssl_name origin.test;
			proxy_ssl_verify on;
			proxy_ssl_trusted_certificate $T/ca.pem;
			proxy_ssl_session_reuse on;
			proxy_buffers 32 32k;
			proxy_max_temp_file_size 0;
		}
	}
}
EOF
start_bg "$H" "$T/np/out.log" nginx -e "$T/np/error.log" -p "$T/np/" \
    -c "$T/np/nginx.conf" -g 'daemon off;'
PROXYPID[nginx]=$LASTPID

# --- HAProxy: TCP mode to the original destination (the practical limit for splice) --
# A server address of 0.0.0.0 without a port means "where the client was going":
# HAProxy (built with LINUX_TPROXY) reads SO_ORIGINAL_DST of the redirected socket.
cat >"$T/haproxy.cfg" <<EOF
global
	nbthread 1
	maxconn $((NOFILE / 2 - 100))
defaults
	mode tcp
	timeout connect 5s
	timeout client 300s
	timeout server 300s
frontend splice
	bind :8444
	default_backend origdst
backend origdst
	server orig 0.0.0.0
EOF
start_bg "$H" "$T/haproxy.log" haproxy -db -f "$T/haproxy.cfg"
PROXYPID[haproxy]=$LASTPID

# --- Squid: ssl-bump (peek, then bump) on 3129, peek+splice on 3130 -----------------
mkdir -p "$T/squid"
cat >"$T/squid/squid.conf" <<EOF
http_port 127.0.0.1:3128
https_port 3129 intercept ssl-bump tls-cert=$T/ca.pem tls-key=$T/ca.key generate-host-certificates=on dynamic_cert_mem_cache_size=16MB
https_port 3130 intercept ssl-bump tls-cert=$T/ca.pem tls-key=$T/ca.key generate-host-certificates=on dynamic_cert_mem_cache_size=16MB
sslcrtd_program /usr/lib/squid/security_file_certgen -s $T/squid/ssl_db -M 16MB
sslcrtd_children 4 startup=1 idle=1
acl step1 at_step SslBump1
acl spliceport localport 3130
ssl_bump peek step1
ssl_bump splice spliceport
ssl_bump bump all
tls_outgoing_options cafile=$T/ca.pem
request_header_add X-Bench-Token "$TOKEN" all
http_access allow all
cache deny all
cache_mem 0
access_log none
cache_log $T/squid/cache.log
pid_filename none
coredump_dir $T/squid
max_filedescriptors $NOFILE
shutdown_lifetime 0 seconds
workers 1
EOF
/usr/lib/squid/security_file_certgen -c -s "$T/squid/ssl_db" -M 16MB >/dev/null 2>&1
chown -R proxy:proxy "$T/squid"
start_bg "$H" "$T/squid/out.log" squid -N -f "$T/squid/squid.conf"
PROXYPID[squid]=$LASTPID

# --- mitmproxy: mitmdump in transparent mode ------------------------------------
mkdir -p "$T/mitm"
start_bg "$H" "$T/mitm/out.log" mitmdump --mode transparent --listen-port 8080 \
    --set confdir="$T/mitm" --set ssl_verify_upstream_trusted_ca="$T/ca.pem" \
    --set modify_headers="/~q/X-Bench-Token/$TOKEN" --set flow_detail=0 -q
PROXYPID[mitm]=$LASTPID

for pp in "nginx 8443" "haproxy 8444" "squid 3129" "squid 3130" "mitm 8080"; do
	set -- $pp
	wait_port "$H" "$2" 150 || say "$1 is not listening on $2"
done

# --- which configurations work ----------------------------------------------------
url_host() {
	case $1 in
	splice) echo splice.test ;;
	inspect) echo inspect.test ;;
	*) echo origin.test ;;
	esac
}
proxy_of() {
	case $1 in
	splice|inspect) echo airlock ;;
	squid-*) echo squid ;;
	direct) echo "" ;;
	*) echo "$1" ;;
	esac
}
ccurl() {	# ccurl CFG PATH [--http2]: status and size of one request from CFG's client
	# HTTP/1.1 unless asked (what wrk speaks; the origin and nginx offer h2 too).
	inns "$(client_ns "$1")" curl -sk --max-time 8 -o /dev/null ${3:---http1.1} \
	    -w '%{http_code} %{size_download}' "https://$(url_host "$1")$2" 2>/dev/null
}
AVAIL=""
for cfg in $CFGS; do
	got=$(ccurl "$cfg" /small)
	if [ "$got" != "200 100" ]; then
		UNAVAIL[$cfg]="smoke test failed (got '$got')"
		if [ "$cfg" = inspect ] &&
		    grep -q '"reason":"inspect_unavailable"' "$T/al/audit.jsonl" 2>/dev/null; then
			UNAVAIL[$cfg]="not available yet (airlockd: inspect_unavailable)"
		fi
		say "$cfg: ${UNAVAIL[$cfg]}"
		continue
	fi
	case $cfg in
	inspect|nginx|squid-bump|mitm)
		got=$(ccurl "$cfg" /hdr)
		if [ "${got%% *}" != 204 ]; then
			UNAVAIL[$cfg]="the injected header did not reach the origin ($got)"
			say "$cfg: ${UNAVAIL[$cfg]}"
			continue
		fi
		;;
	esac
	got=$(ccurl "$cfg" /big)
	if [ "$got" != "200 1048576" ]; then
		UNAVAIL[$cfg]="1 MiB download failed (got '$got')"
		say "$cfg: ${UNAVAIL[$cfg]}"
		continue
	fi
	AVAIL="$AVAIL $cfg"
done
say "configurations:$AVAIL"
# The h2 scenario: HTTP/2 towards the VM (curl --http2 gets 200 over h2 and, where a
# header is injected, 204 from /hdr); airlock offers h2 only when the origin chose it.
H2AVAIL=""
case " $SCENARIOS " in *" h2 "*)
	for cfg in $H2_CFGS; do
		case " $AVAIL " in *" $cfg "*) ;; *) continue ;; esac
		got=$(inns "$(client_ns "$cfg")" curl -sk --max-time 8 -o /dev/null \
		    --http2 -w '%{http_version} %{http_code} %{size_download}' \
		    "https://$(url_host "$cfg")/small" 2>/dev/null)
		if [ "$got" != "2 200 100" ]; then
			UNAVAIL[h2-$cfg]="HTTP/2 smoke test failed (got '$got')"
			say "h2 $cfg: ${UNAVAIL[h2-$cfg]}"
			continue
		fi
		if [ "$cfg" != direct ]; then
			got=$(ccurl "$cfg" /hdr --http2)
			if [ "${got%% *}" != 204 ]; then
				UNAVAIL[h2-$cfg]="the injected header did not reach the origin over h2 ($got)"
				say "h2 $cfg: ${UNAVAIL[h2-$cfg]}"
				continue
			fi
		fi
		H2AVAIL="$H2AVAIL $cfg"
	done
	say "h2 configurations:$H2AVAIL"
	;;
esac

# BENCH_HOLD=SECONDS: stop here for that long, everything up, so that a profiler or
# strace can be pointed at a proxy by hand (the PIDs and namespaces are printed).
if [ -n "${BENCH_HOLD:-}" ]; then
	for key in "${!PROXYPID[@]}"; do
		say "hold: $key PID ${PROXYPID[$key]}"
	done
	for tag in $CLIENT_TAGS; do
		say "hold: client $tag: ip netns exec alb-c$tag-$S ..."
	done
	sleep "$BENCH_HOLD" &
	PIDS="$PIDS $!"
	wait $!		# interruptible: the trap cleans up at once
	exit 0
fi

# --- measuring ------------------------------------------------------------------
CLK=$(getconf CLK_TCK)
proxy_pids() {	# proxy_pids KEY: the proxy's processes (the one started + descendants)
	local p=${PROXYPID[$1]:-}
	[ -n "$p" ] && echo "$p" $(descendants "$p")
}
# cpu_ticks KEY: utime+stime of the proxy's processes (clock ticks), plus cutime+
# cstime: what children that have exited and been reaped used (a respawned nginx
# worker, Squid's helpers), which would otherwise vanish from the sum mid-run.
cpu_ticks() {
	local p sum=0 t
	[ -z "$1" ] && { echo 0; return; }
	for p in $(proxy_pids "$1"); do
		t=$(sed 's/^.*) //' "/proc/$p/stat" 2>/dev/null |
		    awk '{ print $12 + $13 + $14 + $15 }')
		sum=$((sum + ${t:-0}))
	done
	echo "$sum"
}
status_kb() {	# status_kb FIELD PID...: sum of a /proc/PID/status field (kB)
	local f=$1 p sum=0 v
	shift
	for p in "$@"; do
		v=$(awk -v f="$f:" '$1 == f { print $2 }' "/proc/$p/status" 2>/dev/null)
		sum=$((sum + ${v:-0}))
	done
	echo "$sum"
}

# BENCH_PERF=CFG:SCENARIO:CONNS (e.g. splice:ka:32): perf record -g of the proxy's
# processes during that run (its first repeat); the reports go to
# $OUT/perf-CFG-SCENARIO-CONNS*.txt (flat, call graphs, by library, inclusive).
# Off by default: perf costs CPU itself.
PERFPID=""
PERFTAG=""
perf_start() {	# perf_start CFG:SCEN:CONNS KEY
	[ -n "${BENCH_PERF:-}" ] && [ "$1" = "$BENCH_PERF" ] && [ -n "$2" ] &&
	    [ -z "$PERFTAG" ] || return 0
	PERFTAG=$(echo "$1" | tr : -)
	perf record -F 1999 -g -o "$T/perf.data" \
	    -p "$(proxy_pids "$2" | tr ' ' ',')" >"$T/perf.log" 2>&1 &
	PERFPID=$!
	PIDS="$PIDS $PERFPID"
}
perf_stop() {
	[ -n "$PERFPID" ] || return 0
	kill -INT "$PERFPID" 2>/dev/null
	wait "$PERFPID" 2>/dev/null
	PERFPID=""
	mkdir -p "$OUT"
	perf report -i "$T/perf.data" --stdio --no-children --percent-limit 0.7 \
	    -g none >"$OUT/perf-$PERFTAG.txt" 2>/dev/null
	perf report -i "$T/perf.data" --stdio --no-children --percent-limit 3 \
	    -g caller,0.5,callee --max-stack 12 >"$OUT/perf-$PERFTAG-calls.txt" 2>/dev/null
	perf report -i "$T/perf.data" --stdio --sort dso -g none \
	    >"$OUT/perf-$PERFTAG-dso.txt" 2>/dev/null
	perf report -i "$T/perf.data" --stdio --children --percent-limit 2 -g none \
	    >"$OUT/perf-$PERFTAG-inclusive.txt" 2>/dev/null
	say "perf profile: $OUT/perf-$PERFTAG.txt"
}

RES=$T/results.tsv
: >"$RES"
run_one() {	# run_one CFG SCENARIO CONNS REP
	local cfg=$1 scen=$2 conns=$3 rep=$4 key path hdr="" c0 c1 out line thr=2
	key=$(proxy_of "$cfg")
	case $scen in
	lat) path=/small; thr=1 ;;	# one connection: latency without queueing
	ka) path=/small ;;
	new) path=/small; hdr="Connection: close" ;;
	big) path=/big ;;
	esac
	if [ "$scen" = h2 ]; then
		run_h2 "$cfg" "$conns" "$rep" "$key"
		return
	fi
	c0=$(cpu_ticks "$key")
	perf_start "$cfg:$scen:$conns" "$key"
	out=$(timeout $((SECS + 20)) ip netns exec "$(client_ns "$cfg")" wrk -t$thr \
	    -c"$conns" -d"${SECS}s" --timeout 5s -s bench/wrk.lua \
	    ${hdr:+-H "$hdr"} "https://$(url_host "$cfg")$path" 2>&1)
	c1=$(cpu_ticks "$key")
	perf_stop
	line=$(printf '%s\n' "$out" | grep '^RESULT ')
	if [ -z "$line" ]; then
		say "$cfg $scen c$conns: no result: $(printf '%s' "$out" | tail -2)"
		return
	fi
	# scen conns rep cfg requests bytes duration_us p50 p99 errors cpu_ticks
	printf '%s\n' "$line" | awk -v s="$scen" -v c="$conns" -v r="$rep" \
	    -v g="$cfg" -v t=$((c1 - c0)) '{
		for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
		printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s, c, r, g,
		    v["requests"], v["bytes"], v["duration_us"], v["p50_us"],
		    v["p99_us"], v["errors"], t }' >>"$RES"
}

# run_h2 CFG STREAMS REP KEY: h2load, 4 connections (2 threads, as wrk) with STREAMS
# concurrent streams each (the servers' SETTINGS_MAX_CONCURRENT_STREAMS may bound it:
# airlock's is 100, nginx is set to the same), for SECS seconds; the TSV line is the
# same as wrk's, "conns" being the streams per connection.  p50/p99 from h2load's
# per-request log (microseconds until the end of the response).
run_h2() {
	local cfg=$1 m=$2 rep=$3 key=$4 c0 c1 out log=$T/h2load.log
	rm -f "$log"
	c0=$(cpu_ticks "$key")
	perf_start "$cfg:h2:$m" "$key"
	out=$(timeout $((SECS + 20)) ip netns exec "$(client_ns "$cfg")" h2load -t 2 -c 4 \
	    -m "$m" -D "$SECS" --log-file="$log" "https://$(url_host "$cfg")/small" 2>&1)
	c1=$(cpu_ticks "$key")
	perf_stop
	if ! printf '%s\n' "$out" | grep -q '^finished in '; then
		say "$cfg h2 m$m: no result: $(printf '%s' "$out" | tail -2)"
		return
	fi
	# scen conns rep cfg requests bytes duration_us p50 p99 errors cpu_ticks
	sort -t "$(printf '\t')" -k3,3n "$log" 2>/dev/null | awk -F '\t' '{ d[NR] = $3 }
	    END { if (NR) { i = int(NR * 0.5); if (i < 1) i = 1; j = int(NR * 0.99);
		  if (j < 1) j = 1; print d[i], d[j] } else print 0, 0 }' >"$T/h2pct"
	printf '%s\n' "$out" | awk -v c="$m" -v r="$rep" -v g="$cfg" \
	    -v t=$((c1 - c0)) -v pct="$(cat "$T/h2pct")" '
		function us(v) {	# h2load durations: 3.00s, 512.3ms, 900us
			if (v ~ /ms$/) return substr(v, 1, length(v) - 2) * 1000
			if (v ~ /us$/) return substr(v, 1, length(v) - 2) + 0
			return substr(v, 1, length(v) - 1) * 1000000
		}
		/^finished in / { v = $3; sub(/,$/, "", v); dur = us(v) }
		/^requests: / { ok = $8; bad = $10 + $12 + $14 }
		/^status codes: / { st = $5 + $7 + $9 }
		/^traffic: / { b = $3; gsub(/[()]/, "", b) }
		END { split(pct, p, " ")
		      printf "h2\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", c, r, g,
			  ok, b, dur, p[1], p[2], bad + st, t }' >>"$RES"
}

# Idle connections through airlock's splice first, while airlockd is fresh (freed
# memory from the load runs would otherwise be reused and hide the cost).
idle_run() {	# idle_run KEY CFG N: RSS delta of KEY's main process per idle connection
	local key=$1 cfg=$2 n=$3 pid=${PROXYPID[$1]} addr r0 r1 k line ipid
	addr=$(inns "$(client_ns "$cfg")" getent ahostsv4 "$(url_host "$cfg")" |
	    awk 'NR == 1 { print $1 }')
	[ -n "$addr" ] || { say "idle $key: no address"; return; }
	sleep 1
	r0=$(status_kb VmRSS "$pid")
	# ip itself in the background (not a function): $! is idleconn's PID.
	ip netns exec "$(client_ns "$cfg")" "$IDLECONN" "$addr" 443 "$(url_host "$cfg")" \
	    "$n" 32 300 >"$T/idle-$key.out" 2>"$T/idle-$key.err" &
	ipid=$!
	PIDS="$PIDS $ipid"
	for k in $(seq 1500); do
		line=$(grep '^ready' "$T/idle-$key.out" 2>/dev/null) && break
		kill -0 "$ipid" 2>/dev/null || break
		sleep 0.1
	done
	sleep 2
	r1=$(status_kb VmRSS "$pid")
	kill "$ipid" 2>/dev/null
	wait "$ipid" 2>/dev/null
	set -- $line
	echo "idle_$key=${2:-0} ${3:-$n} $r0 $r1" >>"$T/meta"
	say "idle $key: ${2:-0} up, ${3:-?} failed, VmRSS $r0 -> $r1 kB" \
	    "$(head -3 "$T/idle-$key.err" | tr '\n' ' ')"
	if [ "$key" = airlock ] && [ "${3:-0}" != 0 ]; then
		say "idle $key: airlockd's reasons for the failed ones:" \
		    "$(grep -o '"reason":"[a-z_]*"' "$T/al/audit.jsonl" | sort | uniq -c |
		    tr '\n' ' ')"
		echo "idle_${key}_reasons=$(grep -o '"reason":"[a-z_]*"' \
		    "$T/al/audit.jsonl" | sort | uniq -c | awk '{ printf "%s%s %s",
		    NR > 1 ? ", " : "", $1, $2 }' | tr -d '"')" >>"$T/meta"
	fi
	sleep 2
}

# airlockd holds two sockets per connection: the idle run fits under RLIMIT_NOFILE.
maxidle=$(((NOFILE - 200) / 2))
IDLE_RUN_N=$IDLE_N
[ "$IDLE_RUN_N" -gt "$maxidle" ] && IDLE_RUN_N=$maxidle
: >"$T/meta"
case " $AVAIL " in
*" splice "*)
	idle_run airlock splice "$IDLE_RUN_N"
	case " $AVAIL " in *" haproxy "*) idle_run haproxy haproxy "$IDLE_RUN_N" ;; esac
	;;
esac

START=$(date +%s)
nruns=0
for scen in $SCENARIOS; do
	cl=$CONNS
	[ "$scen" = lat ] && cl=1
	[ "$scen" = h2 ] && cl=$H2_STREAMS
	cfgs=$AVAIL
	[ "$scen" = h2 ] && cfgs=$H2AVAIL
	[ -n "$cfgs" ] || continue
	for conns in $cl; do
		for rep in $(seq "$REPEATS"); do
			# Alternate: each repeat starts at another configuration.
			set -- $cfgs
			k=$(( (rep - 1) % $# ))
			order="${*:k+1} ${*:1:k}"
			for cfg in $order; do
				run_one "$cfg" "$scen" "$conns" "$rep"
				nruns=$((nruns + 1))
			done
			say "$scen c$conns repeat $rep done ($(( $(date +%s) - START ))s)"
		done
	done
done

# --- the report -------------------------------------------------------------------
{
	echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "machine=$(nproc) cores, $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo), $(awk '/^MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), Linux $(uname -r)"
	# The tree the binaries were built from (build/.. for make bench).
	src=$(cd "$B/.." && pwd)
	git -C "$src" rev-parse --git-dir >/dev/null 2>&1 || src=$TOP
	echo "airlock=$(git -C "$src" rev-parse --short HEAD 2>/dev/null)$(git -C "$src" diff --quiet HEAD -- proxy 2>/dev/null || echo ' + uncommitted proxy/ changes')"
	echo "nginx=$(nginx -v 2>&1 | sed 's/^nginx version: //')"
	echo "haproxy=$(haproxy -v 2>/dev/null | head -1 | awk '{ print $3 }')"
	echo "squid=$(squid -v 2>/dev/null | head -1 | awk '{ print $4 }')"
	echo "mitmproxy=$(mitmdump --version 2>/dev/null | awk '/^Mitmproxy/ { print $2 }')"
	echo "wrk=$(wrk -v 2>&1 | head -1 | awk '{ print $2 }')"
	echo "h2load=$(h2load --version 2>/dev/null | awk '{ print $2 }')"
	echo "openssl=$(openssl version | awk '{ print $2 }')"
	echo "seconds=$SECS"
	echo "repeats=$REPEATS"
	echo "quick=${QUICK:+1}"
	echo "clk=$CLK"
	echo "nofile=$NOFILE"
	echo "idle_asked=$IDLE_N"
	echo "wall=$(( $(date +%s) - START ))"
	for cfg in $CFGS; do
		[ -n "${UNAVAIL[$cfg]:-}" ] && echo "unavail_$cfg=${UNAVAIL[$cfg]}"
		[ -n "${UNAVAIL[h2-$cfg]:-}" ] && echo "unavail_h2-$cfg=${UNAVAIL[h2-$cfg]}"
	done
	for key in airlock nginx haproxy squid mitm; do
		p=$(proxy_pids "$key")
		[ -n "$p" ] && echo "hwm_$key=$(status_kb VmHWM $p)"
	done
} >>"$T/meta"
mkdir -p "$OUT"
stamp=$(date -u +%Y-%m-%d-%H%M)
suffix=""
[ -n "$QUICK" ] && suffix=-quick
perl bench/report.pl "$T/meta" "$RES" >"$OUT/$stamp$suffix.md" ||
    die "report failed"
cp "$RES" "$OUT/$stamp$suffix.tsv"
cp "$T/meta" "$OUT/$stamp$suffix.meta"	# perl bench/report.pl META TSV redoes the table
# A QUICK subset does not replace the full table.
cp "$OUT/$stamp$suffix.md" "$OUT/LATEST$suffix.md"
say "wrote $OUT/LATEST$suffix.md ($stamp$suffix.md, $nruns runs)"
cat "$OUT/LATEST$suffix.md"
exit 0
}
