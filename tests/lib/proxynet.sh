# tests/lib/proxynet.sh: the proxy's test topology, shared by tests/integration/proxy_*.t
# and dns_netns.t (bash).  Everything goes through the real enforcement path: airlockd
# runs in a "host" namespace, and each "VM" namespace sits on a veth whose host end is
# attached with `airlock net attach` (netctl's inet + netdev `airlock` tables: the
# VM's TCP redirected to proxy_port, its DNS to dns_port, nothing forwarded), after
# the daemon started, so the daemon learns each sandbox through the control socket.
#
#	VM i (10.233.0.4i+2) --veth vhI/eth0-- HOST (10.233.0.4i+1; airlockd)
#	HOST (11.0.0.1) --veth-- INTERNET (11.0.0.2: origins, tests/lib/origin.sh)
#
#	. tests/lib/proxynet.sh		# after cd to the top directory
#	pn_require TOOL...		# skips unless root, built, and the tools exist
#	pn_setup TAG			# namespaces H, I; temp dir $T; origin CA
#	pn_vm VAR I			# VM namespace I (1..60) into variable VAR
#	pn_hosts LINE...		# /etc/netns/$H/hosts (what airlockd resolves)
#	pn_two_origins			# origin.test (TLS 443), git2.test (banner 2222)
#	pn_mapped NS NAME		# the mapped address NAME resolves to in NS
#	pn_start [EXTRA-CONFIG]		# airlockd in $H ($DPID); 1 if it did not start
#	pn_start_or_skip [EXTRA-CONFIG]	# the same; the test skips if it did not start
#					# ($PN_AUDIT: the "audit" object, default
#					# $T/audit.jsonl without fsync; $PN_WRAP: a
#					# command airlockd's command line is run by;
#					# $PN_WORKERS: worker threads, default 2)
#	pn_attach NAME I POLICY		# airlock net attach NAME for VM I
#	pn_guest I / pn_hostip I	# the addresses of VM I
#	pn_denials SB REASON [FILE]	# denials in the audit log: records + "suppressed"
#	pn_stop_checked		# stops airlockd: still running? no sanitizer report?
#	ok STATUS DESC / pn_done	# TAP (tests/lib/tap.sh; pn_done ends)
#
# Cleanup (EXIT trap from netns.sh): the daemon and origins (by PID), the namespaces
# (their tables and veths go with them), /etc/netns/<ns> of each, the temp dir.

B=${AIRLOCK_BUILD:-build}
case $B in /*) ;; *) B=$PWD/$B ;; esac
AIRLOCK=${AIRLOCK:-$B/airlock}
AIRLOCKD=${AIRLOCKD:-$B/airlockd}
AIRLOCK_BUILD=$B
. tests/lib/tap.sh
. tests/lib/airlockd.sh
. tests/lib/netns.sh
. tests/lib/origin.sh

DPID=""
PN_NS=""

pn_require() {
	local f c
	netns_require
	for f in "$AIRLOCK" "$AIRLOCKD" "$B/tests/tools/origin"; do
		if [ ! -x "$f" ]; then
			echo "1..0 # SKIP $f not built"
			exit 0
		fi
	done
	for c in nft "$@"; do
		if ! command -v "$c" >/dev/null; then
			echo "1..0 # SKIP no $c"
			exit 0
		fi
	done
	if ! getent passwd airlock >/dev/null; then
		echo "1..0 # SKIP no user airlock (make deps creates it)"
		exit 0
	fi
}

pn_cleanup() {
	local ns
	set +e		# a failure during set-up must not cut the clean-up short
	if [ -n "$DPID" ]; then
		kill "$DPID" 2>/dev/null
		wait "$DPID" 2>/dev/null
	fi
	origin_stop_all
	for ns in $PN_NS; do
		rm -rf "/etc/netns/$ns"
	done
}

# pn_done: the plan, the daemon's log and audit tail on failure, the exit status.
pn_done() {
	echo "1..$n"
	if [ "$failed" -ne 0 ]; then
		echo "# airlockd log:"
		sed 's/^/# /' "$T/airlockd.log" | tail -20
		echo "# audit:"
		sed 's/^/# /' "$T/audit.jsonl" 2>/dev/null | tail -20 | cut -c1-300
	fi
	exit $((failed > 0))
}

# pn_stop_checked: two checks, airlockd is still running, and after a clean stop its
# log holds no sanitizer report (SAN builds); DPID is cleared.
pn_stop_checked() {
	kill -0 "$DPID" 2>/dev/null
	ok $? "airlockd still running"
	kill "$DPID" 2>/dev/null
	wait "$DPID" 2>/dev/null
	DPID=""
	! grep -q "Sanitizer" "$T/airlockd.log"
	ok $? "no sanitizer report in airlockd's log (SAN builds)"
}

pn_guest() { echo "10.233.0.$(($1 * 4 + 2))"; }
pn_hostip() { echo "10.233.0.$(($1 * 4 + 1))"; }
inH() { ip netns exec "$H" "$@"; }

pn_setup() {
	netns_new H "$1h"
	netns_new I "$1i"
	PN_NS="$H"
	NETNS_CLEANUP_HOOK=pn_cleanup
	T=$NETNS_TMP
	AL_SOCK=$T/control.sock
	chmod 755 "$T"
	ORIGIN_LOGDIR=$T
	netns_veth "$H" ih "$I" eth0 &&
	inH ip addr add 11.0.0.1/24 dev ih &&
	ip netns exec "$I" ip addr add 11.0.0.2/24 dev eth0 &&
	ip netns exec "$I" ip route add default via 11.0.0.1 &&
	inH sysctl -qw net.ipv4.ip_forward=0 || return 1
	mkdir -p "/etc/netns/$H" "$T/state"
	chmod 700 "$T/state"
	echo "nameserver 127.0.0.1" >"/etc/netns/$H/resolv.conf"
	origin_ca "$T"
}

pn_vm() {
	local v h g
	netns_new v "vm$2" || return 1
	PN_NS="$PN_NS $v"
	h=$(pn_hostip "$2")
	g=$(pn_guest "$2")
	netns_veth "$H" "vh$2" "$v" eth0 &&
	inH ip addr add "$h/30" dev "vh$2" &&
	ip netns exec "$v" ip addr add "$g/30" dev eth0 &&
	ip netns exec "$v" ip route add default via "$h" || return 1
	mkdir -p "/etc/netns/$v"
	echo "nameserver $h" >"/etc/netns/$v/resolv.conf"
	echo "127.0.0.1 localhost" >"/etc/netns/$v/hosts"
	eval "$1=\$v"
}

pn_hosts() {
	printf '%s\n' "127.0.0.1 localhost" "$@" >"/etc/netns/$H/hosts"
}

# 11.0.0.2 serves origin.test (TLS on 443, certificate from the test CA) and
# git2.test (a banner on 2222).
pn_two_origins() {
	pn_hosts "11.0.0.2 origin.test git2.test"
	origin_cert "$T" origin.test origin.test &&
	    origin_start "$I" tls 11.0.0.2 443 origin.test "$T/origin.test.pem" \
	    "$T/origin.test.key" &&
	    origin_start "$I" banner 11.0.0.2 2222 git2.test
}

pn_mapped() {
	ip netns exec "$1" timeout 3 getent ahostsv4 "$2" 2>/dev/null |
	    awk 'NR == 1 { print $1 }'
}

pn_start() {
	local i audit=${PN_AUDIT:-'{ "path": "'"$T"'/audit.jsonl", "fsync": "never" }'}
	cat >"$T/airlock.json" <<-EOF
	{ "state_dir": "$T/state", "control_socket": "$T/control.sock",
	  "proxy_port": 15001, "dns_port": 15053, "workers": ${PN_WORKERS:-2},
	  "audit": $audit${1:+,
	  $1} }
	EOF
	${PN_WRAP:-} ip netns exec "$H" "$AIRLOCKD" --config "$T/airlock.json" \
	    --foreground 2>"$T/airlockd.log" &
	DPID=$!
	for i in $(seq 100); do
		"$AIRLOCK" --config "$T/airlock.json" stats >/dev/null 2>&1 &&
		    return 0
		kill -0 "$DPID" 2>/dev/null || break
		sleep 0.1
	done
	return 1
}

pn_start_or_skip() {
	pn_start "$@" && return 0
	echo "1..0 # SKIP airlockd did not start: $(head -c 300 "$T/airlockd.log")"
	exit 0
}

pn_attach() {
	inH "$AIRLOCK" --config "$T/airlock.json" net attach "$1" --policy "$3" \
	    --iface "vh$2" --guest-ip "$(pn_guest "$2")" >/dev/null
}

# Denials of sandbox SB (- for none) with REASON: each record that is a denial
# itself, plus every "suppressed" count (aggregated denials, README "Audit log").
pn_denials() {
	perl -ne '
	    BEGIN { ($sb, $re) = (shift, shift) }
	    next unless /"event":"deny"|"decision":"deny"/ && /"reason":"\Q$re\E"/;
	    next unless $sb eq "-" ? !/"sandbox":/ : /"sandbox":"\Q$sb\E"/;
	    $n += /"suppressed":(\d+)/ ? $1 : 0;
	    $n++ unless /"aggregate":"flush"/;
	    END { print $n + 0, "\n" }' "$1" "$2" "${3:-$T/audit.jsonl}"
}

pn_detach() {
	inH "$AIRLOCK" --config "$T/airlock.json" net detach "$1" >/dev/null
}
