#!/bin/bash
# tests/vm/vm_policy.t: real VMs (the default guest image under libvirt/QEMU) on
# sandboxes made by `airlock sandbox create`, their traffic through airlockd.
#
# Namespaces made here: H, the "host" (the sandbox taps, nftables rules, airlockd,
# a private libvirtd: tests/lib/libvirtd.sh), and I, the "internet" (TLS origins
# origin.test at 11.0.0.2 and other.test at 11.0.0.3, certificates from a test CA).
# The machine's own namespace is never touched.  Cleans up by trap.
#
# 1. Two VMs at once, va allowed origin.test and vb allowed other.test (splice): each
#    reaches its own name, is refused the other's name (NXDOMAIN) and the other's
#    real address, and cannot reach the other VM (HTTP or ping).
# 2. vm ls, vm destroy and sandbox destroy leave no domain, tap, rule, process or
#    per-VM files behind.
# 3. With airlockd stopped, a VM's traffic goes nowhere; the guest got the sandbox
#    CA and its placeholder (never the value); vm stop is a clean power-off.
set -u
cd "$(dirname "$0")/../.." || exit 1

B=${AIRLOCK_BUILD:-build}
case $B in /*) ;; *) B=$PWD/$B ;; esac
AIRLOCK=${AIRLOCK:-$B/airlock}
AIRLOCKD=${AIRLOCKD:-$B/airlockd}
. tests/lib/libvirtd.sh
vm_test_require "$AIRLOCK" "$AIRLOCKD" "$B/tests/tools/origin" "$B/guest/vmlinux" \
    "$B/guest/initrd.cpio"
. tests/lib/tap.sh
. tests/lib/origin.sh
ORIGIN_TOOL=$B/tests/tools/origin

S=$$
H=alvH$S I=alvI$S
T=$(mktemp -d /tmp/vm_policy.XXXXXX)
chmod 755 "$T"
ORIGIN_LOGDIR=$T
DPID=""
export AIRLOCK_GUEST_DIR=$B/guest

cleanup() {
	set +e
	for s in va vb vc; do
		"$AIRLOCK" --config "$T/airlock.json" vm destroy "$s" >/dev/null 2>&1
	done
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	libvirtd_stop
	origin_stop_all
	ip netns del "$H" 2>/dev/null
	ip netns del "$I" 2>/dev/null
	rm -rf "/etc/netns/$H"
	# VM_TEST_KEEP=1 keeps the folder (consoles, logs) for a post-mortem.
	if [ -n "${VM_TEST_KEEP:-}" ]; then echo "# kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

al() { ip netns exec "$H" "$AIRLOCK" --config "$T/airlock.json" "$@"; }
qemu_count() { ps -eo args | grep -c "[g]uest=airlock-$1,"; }
console_has() { grep -q -- "$2" "$T/state/vm/$1/console.log"; }
accepts() { grep -c accept "$T/$1-443.log" 2>/dev/null || echo 0; }

# --- topology, origins, libvirtd, airlockd --------------------------------------
set -e
ip netns add "$H"
ip netns add "$I"
ip -n "$H" link set lo up
ip -n "$I" link set lo up
ip link add ih$S netns "$H" type veth peer name ii$S netns "$I"
ip -n "$H" addr add 11.0.0.1/24 dev ih$S
ip -n "$I" addr add 11.0.0.2/24 dev ii$S
ip -n "$I" addr add 11.0.0.3/24 dev ii$S
ip -n "$H" link set ih$S up
ip -n "$I" link set ii$S up
ip -n "$I" route add default via 11.0.0.1
mkdir -p "/etc/netns/$H"
cat >"/etc/netns/$H/hosts" <<EOF
127.0.0.1 localhost
11.0.0.2 origin.test
11.0.0.3 other.test
EOF
echo "nameserver 127.0.0.1" >"/etc/netns/$H/resolv.conf"
origin_ca "$T"
origin_cert "$T" origin.test origin.test
origin_cert "$T" other.test other.test
origin_start "$I" tls 11.0.0.2 443 origin.test "$T/origin.test.pem" \
    "$T/origin.test.key"
origin_start "$I" tls 11.0.0.3 443 other.test "$T/other.test.pem" \
    "$T/other.test.key"
set +e

if ! libvirtd_start "$H" "$T/libvirt"; then
	echo "1..0 # SKIP private libvirtd did not start"
	exit 0
fi
mkdir -p "$T/state"
chmod 755 "$T/state"
cat >"$T/airlock.json" <<EOF
{ "state_dir": "$T/state", "control_socket": "$T/control.sock",
  "proxy_port": 15001, "dns_port": 15053, "workers": 1,
  "libvirt_uri": "$LIBVIRT_URI",
  "audit": { "path": "$T/audit.jsonl", "fsync": "never" } }
EOF
printf '{"policy":"vm-a","rules":[{"id":"origin","host":"origin.test"}]}\n' \
    >"$T/policy-a.json"
printf '{"policy":"vm-b","rules":[{"id":"other","host":"other.test"}]}\n' \
    >"$T/policy-b.json"
ip netns exec "$H" "$AIRLOCKD" --config "$T/airlock.json" --foreground \
    2>"$T/airlockd.log" &
DPID=$!
up=1
for i in $(seq 100); do
	"$AIRLOCK" --config "$T/airlock.json" stats >/dev/null 2>&1 && up=0 && break
	kill -0 "$DPID" 2>/dev/null || break
	sleep 0.1
done
if [ $up != 0 ]; then
	echo "1..0 # SKIP airlockd did not start: $(head -c 300 "$T/airlockd.log")"
	exit 0
fi

# --- 1. two VMs at once, each held to its own policy ------------------------------
al sandbox create va --policy "$T/policy-a.json" >"$T/va.out" 2>&1
ok $? "sandbox create va (airlockd running)"
al sandbox create vb --policy "$T/policy-b.json" >"$T/vb.out" 2>&1
ok $? "sandbox create vb"
GA=$(sed -n 's/.*guest \([0-9.]*\).*/\1/p' "$T/va.out")
GB=$(sed -n 's/.*guest \([0-9.]*\).*/\1/p' "$T/vb.out")

# agent ALLOWED DENIED DENIED-REAL-ADDRESS PEER
agent() {
	cat <<EOF
cat >/tmp/ca.pem <<'PEM'
$(cat "$T/ca.pem")
PEM
mkdir -p /tmp/www && echo "peer \$(hostname)" >/tmp/www/index.html
httpd -p 8080 -h /tmp/www
echo "SELF \$(curl -sS --max-time 5 http://127.0.0.1:8080/ 2>&1)"
out=\$(curl -sS --max-time 20 --cacert /tmp/ca.pem https://$1/ 2>&1)
echo "ALLOWED rc=\$? \$out"
out=\$(curl -sS --max-time 10 --cacert /tmp/ca.pem https://$2/ 2>&1)
echo "DENIED rc=\$? \$out"
out=\$(curl -sS --max-time 5 -k --resolve $2:443:$3 https://$2/ 2>&1)
echo "DIRECT rc=\$? \$out"
i=0
while [ \$i -lt 3 ]; do
	out=\$(curl -sS --max-time 2 http://$4:8080/ 2>&1)
	echo "PEER rc=\$? \$out"
	i=\$((i + 1))
	sleep 0.5
done
ping -c 1 -W 2 $4 >/dev/null 2>&1
echo "PEERPING rc=\$?"
echo "AGENT DONE"
EOF
}
agent origin.test other.test 11.0.0.3 "$GB" >"$T/agent-a.sh"
agent other.test origin.test 11.0.0.2 "$GA" >"$T/agent-b.sh"

t0=$(date +%s.%N)
al vm start va --agent "$T/agent-a.sh" >"$T/start-a.out" 2>&1
ok $? "vm start va"
al vm start vb --agent "$T/agent-b.sh" >"$T/start-b.out" 2>&1
ok $? "vm start vb"
grep -q "domain airlock-va (qemu\|domain airlock-va (kvm" "$T/start-a.out"
ok $? "vm start says the domain and its type"
al vm start va --agent "$T/agent-a.sh" >"$T/again.out" 2>&1
[ $? = 1 ] && grep -q "has a VM already" "$T/again.out"
ok $? "a second vm start of a running sandbox is refused"
al vm ls --json >"$T/ls.json"
grep -q '"name":"va".*"state":"running"' "$T/ls.json" &&
    grep -q '"name":"vb".*"state":"running"' "$T/ls.json"
ok $? "vm ls --json: both running"
[ "$(qemu_count va)" = 1 ] && [ "$(qemu_count vb)" = 1 ]
ok $? "one QEMU process each"

# (The guest's tty writes CR LF: strip the CRs for line matches.)
console() {	# console NAME: vm console --wait into $T/console-NAME, CRs dropped
	al vm console "$1" --wait "AGENT DONE" --timeout 90 >"$T/raw-$1" 2>&1
	_rc=$?
	tr -d '\r' <"$T/raw-$1" >"$T/console-${1#v}"
	[ $_rc = 0 ] || sed 's/^/#   /' "$T/console-${1#v}"
	return $_rc
}
console va
ok $? "va's agent ran to the end (vm console --wait)"
console vb
ok $? "vb's agent ran to the end"
t1=$(date +%s.%N)
echo "# both VMs: start to agents done in $(echo "$t1 - $t0" | bc 2>/dev/null || echo '?') s"
grep -q "airlock-guest: network up $GA/30" "$T/console-a"
ok $? "va's guest has its static address"
for v in a b; do
	case $v in a) me=origin.test; them=other.test ;; b) me=other.test; them=origin.test ;; esac
	grep -q "^SELF peer v$v" "$T/console-$v"
	ok $? "v$v: its own web server answers (so a peer failure can fail)"
	grep -q "^ALLOWED rc=0 origin $me" "$T/console-$v"
	rc=$?
	ok $rc "v$v: $me (allowed, splice, origin certificate verified) works"
	[ $rc = 0 ] || grep '^ALLOWED' "$T/console-$v" | sed 's/^/#   /'
	grep -q "^DENIED rc=6 " "$T/console-$v"
	ok $? "v$v: $them (not in its policy) is refused: the name does not resolve"
	grep -q "^DIRECT rc=0" "$T/console-$v"
	[ $? != 0 ]
	ok $? "v$v: $them by its real address is refused"
	grep -q "^PEER rc=0" "$T/console-$v" || grep -q "^PEER .*peer v" "$T/console-$v"
	[ $? != 0 ] && [ "$(grep -c '^PEER rc=' "$T/console-$v")" = 3 ]
	ok $? "v$v: cannot reach the other VM over TCP"
	grep -q "^PEERPING rc=0" "$T/console-$v"
	[ $? != 0 ] && grep -q "^PEERPING rc=" "$T/console-$v"
	ok $? "v$v: cannot ping the other VM"
done
[ "$(accepts origin.test)" = 1 ] && [ "$(accepts other.test)" = 1 ]
ok $? "each origin saw exactly one connection (the allowed one)"
grep -q '"sandbox":"va".*other.test' "$T/audit.jsonl" &&
    grep -q '"sandbox":"vb".*origin.test' "$T/audit.jsonl"
ok $? "the refused names are audited per sandbox"

# --- 2. destroy leaves nothing ---------------------------------------------------
rules_of() { ip netns exec "$H" nft list ruleset 2>/dev/null | grep -c "al-$1"; }
[ "$(rules_of va)" -gt 0 ] && [ "$(rules_of vb)" -gt 0 ]
ok $? "before: both sandboxes have rules"
al vm destroy va
ok $? "vm destroy va"
al vm ls --json >"$T/ls.json"
! grep -q '"name":"va"' "$T/ls.json" && grep -q '"name":"vb"' "$T/ls.json"
ok $? "vm ls: va gone, vb still running"
[ "$(qemu_count va)" = 0 ]
ok $? "va's QEMU process is gone"
[ ! -e "$T/state/vm/va/initrd.cpio" ] && [ -s "$T/state/vm/va/console.log" ]
ok $? "vm destroy removed the boot files, kept the console log"
al vm destroy va >"$T/d.out" 2>&1
[ $? = 1 ] && grep -q "has no VM" "$T/d.out"
ok $? "vm destroy of a VM that does not run: refused"

al sandbox destroy vb
ok $? "sandbox destroy vb (its VM running)"
al vm ls --json >"$T/ls.json"
! grep -q '"name":"vb"' "$T/ls.json"
ok $? "... its domain is gone"
[ "$(qemu_count vb)" = 0 ]
ok $? "... its QEMU process is gone"
! ip -n "$H" link show al-vb >/dev/null 2>&1
ok $? "... its tap is gone"
[ "$(rules_of vb)" = 0 ]
ok $? "... its rules are gone"
[ ! -e "$T/state/vm/vb" ] && [ ! -e "$T/state/sandboxes/vb.json" ]
ok $? "... its VM folder and record are gone"
al sandbox destroy va
ok $? "sandbox destroy va (VM already destroyed)"
! ip -n "$H" link show al-va >/dev/null 2>&1 && [ "$(rules_of va)" = 0 ] &&
    [ ! -e "$T/state/vm/va" ]
ok $? "... tap, rules and VM folder gone"

# --- 3. airlockd stopped: nothing goes anywhere; CA, placeholder, vm stop ---------
kill "$DPID"
wait "$DPID" 2>/dev/null
DPID=""
printf '%s\n' '{"policy":"vm-c","rules":[{"id":"origin","host":"origin.test"},' \
    '{"id":"gh","host":"api.github.com","inject":[{"secret":"github_token",' \
    '"header":"Authorization","value":"Bearer {secret}"}]}]}' >"$T/policy-c.json"
SECRET=ghp_the_real_secret_value_4242
PH=ghp_AIRLOCK_placeholder_vm_0001
printf '%s' "$SECRET" | al vault put github_token --host api.github.com \
    --placeholder "$PH" >/dev/null 2>&1
ok $? "vault put github_token"
al sandbox create vc --policy "$T/policy-c.json" >"$T/vc.out" 2>&1
ok $? "sandbox create vc (airlockd stopped)"
cat >"$T/agent-c.sh" <<EOF
out=\$(curl -sS --max-time 5 -k https://origin.test/ 2>&1)
echo "BYNAME rc=\$? \$out"
out=\$(curl -sS --max-time 5 -k --resolve origin.test:443:11.0.0.2 https://origin.test/ 2>&1)
echo "BYADDR rc=\$? \$out"
ping -c 1 -W 2 11.0.0.2 >/dev/null 2>&1
echo "PING rc=\$?"
echo "TOKEN=\$GITHUB_TOKEN"
echo "CASUM \$(md5sum </etc/airlock/ca.pem | cut -d' ' -f1)"
echo "BUNDLEHEAD \$(head -n \$(grep -c . /etc/airlock/ca.pem) /etc/ssl/certs/ca-certificates.crt | md5sum | cut -d' ' -f1)"
echo "AGENT DONE"
EOF
before=$(accepts origin.test)
al vm start vc --agent "$T/agent-c.sh" >"$T/start-c.out" 2>&1
ok $? "vm start vc"
grep -q "CA sandbox, 1 placeholder" "$T/start-c.out"
ok $? "vm start: the sandbox CA and one placeholder"
console vc
ok $? "vc's agent ran to the end"
grep -q "^BYNAME rc=[1-9]" "$T/console-c" && grep -q "^BYADDR rc=[1-9]" "$T/console-c" &&
    grep -q "^PING rc=[1-9]" "$T/console-c"
ok $? "airlockd stopped: by name, by address and ping all fail"
[ "$(accepts origin.test)" = "$before" ]
ok $? "airlockd stopped: nothing reached the origin"
grep -qx "TOKEN=$PH" "$T/console-c"
ok $? "the guest has the placeholder as \$GITHUB_TOKEN"
! grep -rqa "$SECRET" "$T/state/vm/vc" "$T/console-c"
ok $? "the secret's value is nowhere in the VM's files or console"
want=$(al ca cert vc 2>/dev/null | md5sum | cut -d' ' -f1)
grep -qx "CASUM $want" "$T/console-c"
ok $? "the guest got the sandbox CA (airlock ca cert vc)"
grep -qx "BUNDLEHEAD $want" "$T/console-c"
ok $? "... first in its CA bundle (then the public roots)"
al vm stop vc --timeout 20 >"$T/stop.out" 2>&1
ok $? "vm stop vc"
grep -q "powered off" "$T/stop.out" && console_has vc "power button, shutting down"
ok $? "vm stop: the guest powered off by itself (ACPI)"
[ "$(qemu_count vc)" = 0 ]
ok $? "... and its QEMU is gone"
al vm console vc | grep -q "AGENT DONE"
ok $? "vm console prints the log of a stopped VM"
s0=$(date +%s)
al vm console vc --wait "NEVER PRINTED" --timeout 30 >/dev/null 2>&1
[ $? = 1 ] && [ $(($(date +%s) - s0)) -lt 10 ]
ok $? "vm console --wait on a stopped VM: exit 1 at once, not at the timeout"
al vm start vc >/dev/null 2>&1
ok $? "vm start vc again (no agent)"
al vm stop vc --timeout 0 >"$T/stop.out" 2>&1
ok $? "vm stop --timeout 0"
grep -q "destroyed" "$T/stop.out" && [ "$(qemu_count vc)" = 0 ]
ok $? "... forced: destroyed, QEMU gone"
al sandbox destroy vc
ok $? "sandbox destroy vc"

# Refusals through the CLI.
al vm start nosuch >"$T/r.out" 2>&1
[ $? = 1 ] && grep -q "no sandbox 'nosuch'" "$T/r.out"
ok $? "vm start of an unknown sandbox: exit 1, said so"
al vm start va --memory 12 >/dev/null 2>&1
[ $? = 2 ]
ok $? "vm start --memory 12: usage error"
al vm start >/dev/null 2>&1
[ $? = 2 ]
ok $? "vm start without a name: usage error"
[ -z "$(ps -eo args | grep '[g]uest=airlock-')" ]
ok $? "no airlock QEMU process left"

done_testing
