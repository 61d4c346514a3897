#!/bin/bash
# tests/vm/walkthrough.t: README's "Using it" steps, as printed, from an installed
# tree to a VM whose agent reaches its API with an injected credential.
#
# The commands are read from README.md itself (the first ```sh block under "## Using
# it"), so a step changed there is a step changed here; a line this test does not
# know how to run fails it.  Each line runs as printed, with three things moved for
# a machine that is not the test's own:
#   - `make install` gets DESTDIR=$T/root: the tree is installed under $T/root and
#     every /usr/local/... and /var/log/airlock/... path of a step is read there;
#   - `systemctl enable --now airlockd` (these machines do not run systemd as PID 1)
#     becomes the installed unit's ExecStart, started exactly as the unit says,
#     in a network namespace H with a private libvirtd (tests/lib/libvirtd.sh);
#   - the installed /etc/airlock/airlock.json gets its paths moved into $T, the
#     private libvirtd's URI and, for upstream TLS, the test CA that stands in for
#     the public roots (origins in namespace I as api.github.com and pypi.org).
# The canary token of `airlock vault put` must reach api.github.com in the injected
# header and nowhere else: not the VM's console, the audit log, airlockd's output.
set -u
. "$(dirname "$0")/../lib/build.sh"
cd "$top" || exit 1
. tests/lib/libvirtd.sh
vm_test_require "$B/airlock" "$B/airlockd" "$B/tests/tools/origin" "$B/guest/vmlinux" \
    "$B/guest/initrd.cpio"
. tests/lib/netns.sh
. tests/lib/origin.sh
ORIGIN_TOOL=$B/tests/tools/origin
netns_require
T=$NETNS_TMP
chmod 755 "$T"
ORIGIN_LOGDIR=$T
D=$T/root
DPID=""
unset AIRLOCK_GUEST_DIR AIRLOCK_STATE_DIR	# the installed tree finds its own guest
export AIRLOCK_CONFIG=$T/airlock.json
AL=$D/usr/local/bin/airlock
walk_cleanup() {
	[ -x "$AL" ] && ip netns exec "$H" "$AL" vm destroy demo >/dev/null 2>&1
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	libvirtd_stop
	origin_stop_all
	rm -rf "/etc/netns/$H"
}
NETNS_CLEANUP_HOOK=walk_cleanup

# --- the steps, from README ---------------------------------------------------------
awk '/^## Using it/ { u = 1; next } u && /^```sh/ { b = 1; next }
    b && /^```/ { exit } b { print }' README.md | sed 's/[[:space:]]\{2,\}#.*$//' \
    >"$T/steps"
nsteps=$(grep -c . "$T/steps")
[ "$nsteps" -ge 8 ]
ok $? "README's 'Using it' block has its steps ($nsteps lines)"

# --- the world: origins in I, the host namespace H ------------------------------------
TOKEN="ghp_CANARY$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
printf '%s' "$TOKEN" >"$T/token"
netns_new H host
netns_new I inet
netns_veth "$H" up0 "$I" eth0
netns_exec "$H" ip addr add 11.0.0.1/24 dev up0
netns_exec "$I" ip addr add 11.0.0.2/24 dev eth0
netns_exec "$I" ip addr add 11.0.0.3/24 dev eth0
netns_exec "$I" ip route add default via 11.0.0.1
mkdir -p "/etc/netns/$H"
printf '127.0.0.1 localhost\n11.0.0.2 api.github.com\n11.0.0.3 pypi.org\n' \
    >"/etc/netns/$H/hosts"
echo "nameserver 127.0.0.1" >"/etc/netns/$H/resolv.conf"
origin_ca "$T" && origin_cert "$T" api.github.com api.github.com &&
    origin_cert "$T" pypi.org pypi.org &&
    ORIGIN_RECORD=$T/rec-api origin_start "$I" tls 11.0.0.2 443 api.github.com \
    "$T/api.github.com.pem" "$T/api.github.com.key" &&
    origin_start "$I" tls 11.0.0.3 443 pypi.org "$T/pypi.org.pem" "$T/pypi.org.key"
ok $? "origins api.github.com and pypi.org (test CA) in namespace I"
if ! libvirtd_start "$H" "$T/libvirt" >"$T/libvirtd.out"; then
	sed 's/^/# /' "$T/libvirtd.out"
	skip "private libvirtd did not start" 1
	done_testing
fi

# The agent, the file `airlock vm start demo --agent agent.sh` names: calls the API
# with the placeholder it holds, then a host the policy does not name.
cat >"$T/agent.sh" <<EOF
cat /etc/ssl/certs/ca-certificates.crt - >/tmp/bundle.pem <<'PEM'
$(cat "$T/ca.pem")
PEM
export CURL_CA_BUNDLE=/tmp/bundle.pem
echo "AGENT placeholder: \$GITHUB_TOKEN"
echo "AGENT user: \$(curl -sS --max-time 20 -o /dev/null -w '%{http_code}' \
    -H "Authorization: Bearer \$GITHUB_TOKEN" https://api.github.com/user 2>&1)"
echo "AGENT other: \$(curl -sS --max-time 20 -o /dev/null -w '%{http_code}' \
    https://example.org/ 2>&1 | head -c 100)"
echo "AGENT DONE"
EOF

# a step's path on this machine: /usr/local and /var/log/airlock under $T
moved() { sed -e "s|/usr/local/|$D/usr/local/|g" -e "s|/var/log/airlock/|$T/log/|g"; }

# the installed configuration with its paths moved, the private libvirtd, the test CA
configure() {
	mkdir -p "$T/state/sandboxes" "$T/run" "$T/log"
	chmod 700 "$T/state" "$T/state/sandboxes"
	python3 - "$D/etc/airlock/airlock.json" "$T" "$LIBVIRT_URI" >"$T/airlock.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
t = sys.argv[2]
assert c["state_dir"] == "/var/lib/airlock", c["state_dir"]
c["state_dir"] = t + "/state"
c["control_socket"] = t + "/run/control.sock"
c["audit"]["path"] = t + "/log/audit.jsonl"
c["libvirt_uri"] = sys.argv[3]
c["upstream_ca_file"] = t + "/ca.pem"
json.dump(c, sys.stdout, indent=2)
PY
}

# systemctl enable --now airlockd: the installed unit's ExecStart, in H
start_unit() {
	local u=$D/lib/systemd/system/airlockd.service cmd i
	[ -f "$u" ] || u=$(find "$D" -name airlockd.service | head -1)
	cmd=$(sed -n 's/^ExecStart=//p' "$u" | moved)
	# shellcheck disable=SC2086
	ip netns exec "$H" $cmd >"$T/airlockd.log" 2>&1 &
	DPID=$!
	for i in $(seq 150); do
		ip netns exec "$H" "$AL" stats >/dev/null 2>&1 && return 0
		kill -0 "$DPID" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

summary=""
step=0
con=$T/console.log
while IFS= read -r line; do
	[ -n "$line" ] || continue
	case $line in
	"make deps install")
		make -s -C "$top" SAN="$SAN" deps install DESTDIR="$D" >"$T/make.log" 2>&1 &&
		    [ -x "$AL" ] && configure
		ok $? "$line (DESTDIR=$D)"
		[ -x "$AL" ] || { sed 's/^/# /' "$T/make.log" | tail -20; done_testing; }
		;;
	"systemctl enable --now airlockd")
		start_unit
		ok $? "$line: the unit's ExecStart serves"
		[ -n "$DPID" ] && kill -0 "$DPID" 2>/dev/null ||
		    { sed 's/^/# /' "$T/airlockd.log"; done_testing; }
		;;
	airlock\ *)
		cmdline=$(printf '%s' "$line" | moved)
		out=$T/step.$((++step)).out
		(cd "$T" && ip netns exec "$H" bash -c "PATH=$D/usr/local/bin:\$PATH; $cmdline") \
		    >"$out" 2>&1
		rc=$?
		ok $rc "$line"
		[ $rc = 0 ] || sed 's/^/#   /' "$out"
		case $line in
		"airlock vm start "*)
			ip netns exec "$H" "$AL" vm console demo --wait "AGENT DONE" \
			    --timeout 120 >/dev/null 2>&1
			ok $? "... the VM boots and its agent runs"
			# (sandbox destroy removes the VM's files: keep its console)
			tr -d '\r' <"$T/state/vm/demo/console.log" >"$con"
			;;
		"airlock stats"*)
			grep -qw demo "$out"
			ok $? "... and shows sandbox demo"
			;;
		"airlock audit summary "*)
			summary=$out
			;;
		esac
		;;
	*)
		ok 1 "README step not known to this test: $line"
		;;
	esac
done <"$T/steps"

# --- what happened -----------------------------------------------------------------
# (the guest's curl speaks HTTP/2 to airlock: the field keeps its lower-case name)
grep -q "[Aa]uthorization: Bearer $TOKEN" "$T/rec-api" 2>/dev/null
ok $? "api.github.com got the vault's token in the injected header"
grep -q '^AGENT placeholder: ..*' "$con"
ok $? "the agent holds a placeholder ($(sed -n 's/^AGENT placeholder: //p' "$con"))"
grep -q '^AGENT user: 200' "$con"
ok $? "the agent's call to /user answered 200"
grep -q '^AGENT other: curl: (6) Could not resolve host: example.org' "$con" &&
    grep -q '"event":"dns".*"decision":"deny".*"qname":"example.org"' "$T/log/audit.jsonl"
ok $? "a host the policy does not name is refused (NXDOMAIN, a dns deny record)"
[ "$failed" = 0 ] || sed -n 's/^AGENT/#   AGENT/p' "$con"
grep -q "$TOKEN" "$con" "$T/log/audit.jsonl" "$T/airlockd.log" "$T"/step.*.out
is $? 1 "the token is in neither the VM's console, the audit log, airlockd's output nor a command's"
[ -n "$summary" ] && grep -q 'api.github.com' "$summary"
ok $? "audit summary names api.github.com"
"$AL" audit verify "$T/log/audit.jsonl" >"$T/verify.out" 2>&1
ok $? "audit verify: $(tail -1 "$T/verify.out")"
ip netns exec "$H" "$AL" vm ls 2>/dev/null | grep -qw demo
ok $((! $?)) "after sandbox destroy no VM demo is left"
! ip netns exec "$H" ip link show al-demo >/dev/null 2>&1
ok $? "... nor its tap"
done_testing
