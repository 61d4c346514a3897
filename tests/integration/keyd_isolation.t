#!/bin/bash
# tests/integration/keyd_isolation.t: the sandbox CA keys live in the keys process
# (proxy/proxy_keyd.c), not in airlockd, through the real enforcement path
# (tests/lib/proxynet.sh).  Two inspecting sandboxes, sa (api.a.test, late.a.test)
# and sb (api.b.test), each on its own VM.
#
# Covers: inspected HTTPS works for both, the VM seeing a leaf its own sandbox CA
# issued; keyd is the reader's child, runs as the airlockd user, not dumpable,
# no_new_privs, core limit 0, holding no descriptor but sockets past the standard
# three; a scan of airlockd's memory (/proc/PID/mem, every readable mapping, as
# root: tests/tools/memscan.c) finds neither CA private key in any form (PKCS#8
# and SEC1 DER, the PEM text, the private scalar either way round), while the same
# scan of keyd finds both (the scan works); the same for the audit signing key
# (audit.sign_key, Ed25519: PKCS#8 DER, PEM text, the raw key), which the reader
# gives keyd: in neither the worker nor the supervisor, in keyd, and the
# checkpoints it signed verify with the public key; of the vault's secrets the
# worker holds only the value a recorded policy injects (sa's canary, found: the
# scan sees values where they are), never one no policy binds (withheld by the
# reader), nor the vault's key; with keyd killed (SIGKILL), the next
# connection that needs a new leaf is refused (inspect_unavailable; the origin sees
# nothing: never spliced), a leaf already cached still serves, and a reload says
# the keys process is gone.  Restarting keyd is not done here (a supervisor comes
# later): until airlockd restarts, inspection needing new leaves stays closed.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/proxynet.sh
pn_require curl openssl
if [ ! -x "$B/tests/tools/memscan" ]; then
	echo "1..0 # SKIP $B/tests/tools/memscan not built"
	exit 0
fi

set -e
pn_setup kdi
pn_vm VA 0
pn_vm VB 1
ip netns exec "$I" ip addr add 11.0.0.3/24 dev eth0
ip netns exec "$I" ip addr add 11.0.0.4/24 dev eth0
pn_hosts "11.0.0.2 api.a.test" "11.0.0.3 api.b.test" "11.0.0.4 late.a.test"
origin_cert "$T" api.a.test api.a.test
origin_cert "$T" api.b.test api.b.test
origin_cert "$T" late.a.test late.a.test
origin_start "$I" tls 11.0.0.2 443 api.a.test "$T/api.a.test.pem" "$T/api.a.test.key"
origin_start "$I" tls 11.0.0.3 443 api.b.test "$T/api.b.test.pem" "$T/api.b.test.key"
origin_start "$I" tls 11.0.0.4 443 late.a.test "$T/late.a.test.pem" \
    "$T/late.a.test.key"
cat >"$T/pa.json" <<'EOF'
{ "policy": "keyd-a", "rules": [
    { "id": "api", "host": "api.a.test", "tls": "inspect",
      "inject": [ { "secret": "acanary", "header": "X-Key" } ] },
    { "id": "late", "host": "late.a.test", "tls": "inspect" } ] }
EOF
cat >"$T/pb.json" <<'EOF'
{ "policy": "keyd-b", "rules": [
    { "id": "api", "host": "api.b.test", "tls": "inspect" } ] }
EOF
"$AIRLOCK" audit keygen "$T/sign.key" >/dev/null
PN_AUDIT='{ "path": "'"$T"'/audit.jsonl", "fsync": "never", "sign_key": "'"$T"'/sign.key", "sign_every": 3 }'
set +e
if ! pn_start "\"upstream_ca_file\": \"$T/ca.pem\""; then
	echo "1..0 # SKIP airlockd did not start: $(head -c 300 "$T/airlockd.log")"
	exit 0
fi
AL() { "$AIRLOCK" --config "$T/airlock.json" "$@"; }
# Two canaries: one sa's policy injects, one bound to a host no policy injects it to.
printf '%s' 'kdi-CANARY-bound-7f3a91c2e5' >"$T/canary-bound"
printf '%s' 'kdi-CANARY-unbound-2b8e4d6f0a' >"$T/canary-unbound"
AL vault put acanary --host api.a.test <"$T/canary-bound" >/dev/null &&
    AL vault put ucanary --host api.b.test <"$T/canary-unbound" >/dev/null
ok $? "vault: acanary (injected by sa's policy), ucanary (bound, injected by none)"
pn_attach sa 0 "$T/pa.json"
ok $? "net attach sa (inspects api.a.test, late.a.test)"
pn_attach sb 1 "$T/pb.json"
ok $? "net attach sb (inspects api.b.test)"
AL ca cert sa >"$T/sa.pem" 2>/dev/null && AL ca cert sb >"$T/sb.pem" 2>/dev/null
ok $? "airlock ca cert sa, sb"

out=$(ip netns exec "$VA" curl -sS --max-time 8 --cacert "$T/sa.pem" https://api.a.test/)
is "$out" "origin api.a.test" "sa: inspected GET through airlockd reaches api.a.test"
out=$(ip netns exec "$VB" curl -sS --max-time 8 --cacert "$T/sb.pem" https://api.b.test/)
is "$out" "origin api.b.test" "sb: inspected GET through airlockd reaches api.b.test"
MA=$(pn_mapped "$VA" api.a.test)
ip netns exec "$VA" timeout 6 openssl s_client -connect "$MA:443" \
    -servername api.a.test -CAfile "$T/sa.pem" -verify_return_error \
    </dev/null 2>/dev/null | openssl x509 -noout -issuer -ext subjectAltName \
    >"$T/leaf.txt" 2>&1
grep -q "issuer=.*airlock sandbox sa CA" "$T/leaf.txt" &&
    grep -q "DNS:api.a.test" "$T/leaf.txt"
ok $? "the leaf the VM verified: api.a.test, issued by sandbox sa's CA"
! ip netns exec "$VA" timeout 6 openssl s_client -connect "$MA:443" \
    -servername api.a.test -CAfile "$T/sb.pem" -verify_return_error \
    </dev/null >/dev/null 2>&1
ok $? "... which sb's CA does not verify"

# keyd: the root reader's child (airlockd's own children stay the reader and netwatch).
KEYD="" READER=""
WPID=$(al_worker)	# the supervisor's one child
for c in $(pgrep -P "$WPID"); do
	k=$(pgrep -P "$c" | head -1)
	if [ -n "$k" ]; then
		KEYD=$k
		READER=$c
	fi
done
[ -n "$KEYD" ]
ok $? "keyd runs, a child of the root reader ($READER): pid ${KEYD:-none}"
uid=$(id -u airlock)
like "$(grep '^Uid:' "/proc/$KEYD/status" 2>/dev/null)" "^Uid:	$uid	$uid	$uid	$uid$" \
    "keyd runs as the airlockd user"
like "$(grep '^CapEff:' "/proc/$KEYD/status" 2>/dev/null)" '^CapEff:	0+$' \
    "keyd has no capabilities"
like "$(grep '^NoNewPrivs:' "/proc/$KEYD/status" 2>/dev/null)" '^NoNewPrivs:	1$' \
    "keyd: no_new_privs"
like "$(grep '^Seccomp:' "/proc/$KEYD/status" 2>/dev/null)" '^Seccomp:	2$' \
    "keyd runs under its seccomp filter (PROXY_ROLE_KEYD)"
is "$(stat -c %u "/proc/$KEYD/status" 2>/dev/null)" 0 "keyd is not dumpable"
like "$(grep '^Max core file size' "/proc/$KEYD/limits" 2>/dev/null)" \
    '^Max core file size +0 +0 ' "keyd: RLIMIT_CORE 0"
others=0 socks=0
for f in /proc/$KEYD/fd/*; do
	fd=${f##*/}
	[ "$fd" -lt 3 ] && continue
	case $(readlink "$f") in
	socket:*) socks=$((socks + 1)) ;;
	*) others=$((others + 1)) ;;
	esac
done
[ "$others" = 0 ] && [ "$socks" -ge 4 ]
ok $? "keyd holds sockets only past 0-2: reader, control, one per worker ($socks, $others other)"

# The scan.  Each key in every form it may take in memory.
scan() { "$B/tests/tools/memscan" "$1" "$T/state/ca/sa.key" "$T/state/ca/sb.key"; }
scan "$WPID" >"$T/scan-airlockd" 2>&1
rc=$?
sed 's/^/# airlockd: /' "$T/scan-airlockd"
[ "$rc" = 0 ] && [ "$(grep -c ' absent$' "$T/scan-airlockd")" = 10 ]
ok $? "the worker's memory holds neither sandbox's CA private key (DER, PEM, scalar)"
scan "$DPID" >"$T/scan-sup" 2>&1
rc=$?
sed 's/^/# supervisor: /' "$T/scan-sup"
[ "$rc" = 0 ] && [ "$(grep -c ' absent$' "$T/scan-sup")" = 10 ]
ok $? "nor does the supervisor's"
scan "$KEYD" >"$T/scan-keyd" 2>&1
rc=$?
sed 's/^/# keyd: /' "$T/scan-keyd"
[ "$rc" = 0 ] && grep -q "sa.key .* found$" "$T/scan-keyd" &&
    grep -q "sb.key .* found$" "$T/scan-keyd"
ok $? "the same scan of keyd finds both keys (the scan sees keys where they are)"
# The vault: only the value a recorded policy binds, never the vault's key.
vscan() { "$B/tests/tools/memscan" "$1" -r "$T/canary-bound" "$T/canary-unbound" \
    "$T/state/vault.key"; }
vscan "$WPID" >"$T/vscan-airlockd" 2>&1
rc=$?
sed 's/^/# airlockd: /' "$T/vscan-airlockd"
[ "$rc" = 0 ] && grep -q "canary-bound bytes found$" "$T/vscan-airlockd"
ok $? "the worker holds the value sa's policy injects (the scan finds values)"
[ "$rc" = 0 ] && grep -q "canary-unbound bytes absent$" "$T/vscan-airlockd"
ok $? "... but not the value of a secret no recorded policy binds (withheld)"
[ "$rc" = 0 ] && grep -q "vault.key bytes absent$" "$T/vscan-airlockd"
ok $? "... nor the vault's key"
# The injected header as built for the origin: its buffers are wiped once sent (the
# value itself stays in the key image; "X-Key: value" exists only in a built head).
for v in --http1.1 --http1.1 --http1.1 --http1.1 --http1.1 --http2 --http2 --http2; do
	ip netns exec "$VA" curl -sS --max-time 8 $v --cacert "$T/sa.pem" \
	    -o /dev/null https://api.a.test/ 2>/dev/null
done
printf 'X-Key: %s' "$(cat "$T/canary-bound")" >"$T/injected-line"
"$B/tests/tools/memscan" "$WPID" -r "$T/injected-line" >"$T/iscan" 2>&1
rc=$?
sed 's/^/# airlockd: /' "$T/iscan"
[ "$rc" = 0 ] && grep -q "injected-line bytes absent$" "$T/iscan"
ok $? "no copy of the injected header line is left in the worker after the requests"
vscan "$DPID" >"$T/vscan-sup" 2>&1
[ "$(grep -c ' absent$' "$T/vscan-sup")" = 3 ]
ok $? "the supervisor holds none of the three"
# The audit signing key: the same, in its three forms.
sscan() { "$B/tests/tools/memscan" "$1" "$T/sign.key"; }
sscan "$WPID" >"$T/sscan-airlockd" 2>&1
rc=$?
sed 's/^/# airlockd: /' "$T/sscan-airlockd"
[ "$rc" = 0 ] && [ "$(grep -c ' absent$' "$T/sscan-airlockd")" = 3 ]
ok $? "the worker's memory does not hold the audit signing key (DER, PEM, raw)"
sscan "$DPID" >"$T/sscan-sup" 2>&1
rc=$?
[ "$rc" = 0 ] && [ "$(grep -c ' absent$' "$T/sscan-sup")" = 3 ]
ok $? "nor does the supervisor's"
sscan "$KEYD" >"$T/sscan-keyd" 2>&1
rc=$?
sed 's/^/# keyd: /' "$T/sscan-keyd"
[ "$rc" = 0 ] && grep -q "sign.key raw found$" "$T/sscan-keyd"
ok $? "the same scan of keyd finds it"
grep -q '"event":"checkpoint".*"sig":"' "$T/audit.jsonl" &&
    "$AIRLOCK" audit verify --pubkey "$T/sign.key.pub" "$T/audit.jsonl" \
    >"$T/sverify.out" 2>&1
ok $? "... and the checkpoints keyd signed verify with the public key ($(grep '^signatures: records' "$T/sverify.out" | cut -c1-60))"

# keyd gone: nothing new is signed, nothing is spliced instead.
# keyd killed while the reader is stopped (so that it cannot notice yet): the
# worker runs on without a signer, and what needs a new leaf is refused.
kill -STOP "$READER"
kill -KILL "$KEYD"
sleep 0.3
code=$(ip netns exec "$VA" curl -sS -o /dev/null -w '%{http_code}' --max-time 8 \
    --cacert "$T/sa.pem" https://late.a.test/ 2>"$T/late.err")
rc=$?
[ "$rc" != 0 ] && [ "$code" = 000 ]
ok $? "keyd killed: a connection needing a new leaf is refused (curl rc $rc: $(head -c 120 "$T/late.err"))"
sleep 0.3
grep -q '"sandbox":"sa".*"dst":"late.a.test:443".*"reason":"inspect_unavailable"' \
    "$T/audit.jsonl"
ok $? "... audited inspect_unavailable"
[ ! -s "$T/late.a.test-443.log" ]
ok $? "... never spliced: late.a.test saw no connection"
grep -q "no leaf for late.a.test: keys process" "$T/airlockd.log"
ok $? "... airlockd's log says why"
out=$(ip netns exec "$VA" curl -sS --max-time 8 --cacert "$T/sa.pem" https://api.a.test/)
is "$out" "origin api.a.test" "a leaf already in the worker's cache still serves"
# The reader goes on: it sees keyd gone and exits, the worker follows, and the
# supervisor starts all three again (proxy_supervise.c).
kill -CONT "$READER"
NW=""
for i in $(seq 100); do
	NW=$(al_worker)
	[ -n "$NW" ] && [ "$NW" != "$WPID" ] && break
	sleep 0.1
done
[ -n "$NW" ] && [ "$NW" != "$WPID" ]
ok $? "then the reader ends, and so the worker: a new worker runs ($WPID -> ${NW:-none})"
grep -q "the keys process ended: restarting" "$T/airlockd.log" &&
    grep -q "worker restarted: pid $NW" "$T/airlockd.log"
ok $? "... the log says why and that it restarted"
NK=""
for c in $(pgrep -P "$NW"); do
	k=$(pgrep -P "$c" | head -1)
	[ -n "$k" ] && NK=$k
done
[ -n "$NK" ] && [ "$NK" != "$KEYD" ] &&
    grep -q '^Seccomp:	2$' "/proc/$NK/status" 2>/dev/null
ok $? "... with a new keyd (${NK:-none}) under its filter"
out=$(ip netns exec "$VA" curl -sS --max-time 8 --cacert "$T/sa.pem" https://late.a.test/ 2>&1)
is "$out" "origin late.a.test" "a name that needs a new leaf works again"
! grep '"dst":"late.a.test:443"' "$T/audit.jsonl" | grep -v -q '"tls":"inspect"'
ok $? "... every connection to it was inspected, none spliced"
"$AIRLOCK" audit verify "$T/audit.jsonl" >"$T/verify.out" 2>&1
ok $? "the audit chain continues across the restart ($(head -c 100 "$T/verify.out"))"
! grep -q -- "BEGIN PRIVATE KEY\|PRIVATE KEY-----" "$T/airlockd.log" "$T/audit.jsonl"
ok $? "no key text in airlockd's log or the audit log"
! grep -qF -- "$(sed -n 2p "$T/sign.key")" "$T/airlockd.log" "$T/audit.jsonl"
ok $? "... nor the signing key's"

pn_stop_checked
pn_done
