#!/bin/sh
# tests/integration/ca_cli.t: `airlock ca init|cert`, then the name-constraints
# experiment end to end: a sandbox CA made from a policy, a leaf minted by the
# library (tests/tools/ca_mint) served by `openssl s_server` on 127.0.0.1, and curl
# trusting only the sandbox CA: the minted leaf is accepted; a leaf that the same
# CA key signs for a name outside the constraints is refused by curl and by
# `openssl verify`.  No privileges; traffic on loopback only.

. "$(dirname "$0")/../lib/cli.sh"
BUILD=${AIRLOCK_BUILD:-$top/build}
MINT=$BUILD/tests/tools/ca_mint
srv=

if [ ! -x "$AIRLOCK" ] || [ ! -x "$MINT" ]; then
	echo "1..0 # SKIP needs $AIRLOCK and $MINT"
	exit 0
fi
for c in openssl curl; do
	command -v $c >/dev/null 2>&1 || { echo "1..0 # SKIP no $c"; exit 0; }
done
tmp=$(mktemp -d) || exit 1
cleanup() {
	[ -n "$srv" ] && kill "$srv" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
echo '{}' >"$tmp/airlock.json"
export AIRLOCK_CONFIG="$tmp/airlock.json"
export AIRLOCK_STATE_DIR="$tmp/state"
S=$tmp/state

run ca cert
expect_rc 1 "ca cert before ca init"
expect_err "run \`airlock ca init\`"
run ca init
expect_rc 0 "ca init"
[ "$(stat -c %a "$S/ca.key")" = 600 ] && [ "$(stat -c %a "$S/ca.pem")" = 644 ]
ok $? "ca.key 0600, ca.pem 0644"
run ca init
expect_rc 1 "ca init again refused"
expect_err "ca init --force"
cp "$S/ca.pem" "$tmp/ca1.pem"
run ca init --force
expect_rc 0 "ca init --force"
! cmp -s "$S/ca.pem" "$tmp/ca1.pem"
ok $? "... made a new CA"
run ca cert
expect_rc 0 "ca cert"
cmp -s "$tmp/out" "$S/ca.pem"
ok $? "... prints ca.pem"
openssl x509 -in "$tmp/out" -noout -text >"$tmp/text" 2>&1
grep -q 'Subject: CN = airlock interception CA (' "$tmp/text" &&
    grep -q 'ASN1 OID: prime256v1' "$tmp/text" &&
    grep -A1 'Basic Constraints: critical' "$tmp/text" | grep -q 'CA:TRUE, pathlen:0' &&
    grep -A1 'Key Usage: critical' "$tmp/text" | grep -q 'Certificate Sign, CRL Sign'
ok $? "host CA: P-256, CA:TRUE pathlen:0, keyCertSign+cRLSign, subject"
chmod 0640 "$S/ca.key"
run ca cert
expect_rc 2 "loose ca.key refused"
expect_err "ca.key: mode 0640, must be 0600"
chmod 0600 "$S/ca.key"
run ca frob
expect_rc 2 "unknown ca subcommand"

# A sandbox whose policy inspects two names (one a wildcard) and splices another.
cat >"$tmp/policy.json" <<'P'
{ "policy": "ca-test",
  "rules": [
    { "id": "a", "host": "api.inspect.test", "tls": "inspect" },
    { "id": "b", "host": "*.wild.test", "tls": "inspect" },
    { "id": "c", "host": "spliced.test" } ] }
P
cat >"$tmp/policy2.json" <<'P'
{ "policy": "ca-test2", "rules": [ { "id": "c", "host": "spliced.test" } ] }
P
mkdir -p "$S/sandboxes"
sbrec() {
	printf '{"name":"demo","kind":"attach","iface":"tap7","host_ip":"10.0.0.1",'\
'"guest_ip":"10.0.0.2","prefix":30,"mac":"","policy":"%s","policy_hash":"",'\
'"created":0}\n' "$1" >"$S/sandboxes/demo.json"
	chmod 0600 "$S/sandboxes/demo.json"
}
run ca cert nosuch
expect_rc 1 "ca cert for an unknown sandbox"
expect_err "no sandbox 'nosuch'"
sbrec "$tmp/policy2.json"
run ca cert demo
expect_rc 1 "a sandbox that inspects nothing needs no CA"
expect_err "inspects no names"
sbrec "$tmp/policy.json"
run ca cert demo
expect_rc 0 "ca cert demo makes the sandbox CA"
cp "$tmp/out" "$tmp/demo.pem"
cmp -s "$tmp/demo.pem" "$S/ca/demo.pem" && [ "$(stat -c %a "$S/ca/demo.key")" = 600 ]
ok $? "... STATE/ca/demo.pem printed, demo.key 0600"
openssl x509 -in "$tmp/demo.pem" -noout -ext nameConstraints >"$tmp/nc" 2>&1
grep -q 'Name Constraints: critical' "$tmp/nc" && grep -q 'DNS:api.inspect.test' "$tmp/nc" &&
    grep -q 'DNS:.wild.test' "$tmp/nc" && grep -q 'DNS:.api.inspect.test' "$tmp/nc" &&
    grep -q 'IP:0.0.0.0/0.0.0.0' "$tmp/nc" && ! grep -q spliced "$tmp/nc"
ok $? "nameConstraints: the inspected names only, IPs excluded"
run ca cert demo
expect_rc 0 "ca cert demo again"
cmp -s "$tmp/out" "$tmp/demo.pem" && [ ! -s "$tmp/err" ]
ok $? "... same CA, no warning"

# Leaves.
mkdir "$tmp/good" "$tmp/evil" "$tmp/ip"
"$MINT" "$S" demo API.Inspect.Test "$tmp/good" 2>"$tmp/err"
ok $? "library mints api.inspect.test"
"$MINT" "$S" demo evil.test "$tmp/evil" 2>"$tmp/err"
[ $? -eq 1 ] && grep -q "outside the CA's name constraints" "$tmp/err"
ok $? "library refuses to mint evil.test"
openssl x509 -in "$tmp/good/leaf.pem" -noout -text >"$tmp/text"
grep -A1 'Subject Alternative Name' "$tmp/text" | grep -q '^ *DNS:api.inspect.test$' &&
    grep -A1 'Extended Key Usage' "$tmp/text" | grep -q '^ *TLS Web Server Authentication$'
ok $? "leaf: SAN DNS:api.inspect.test, EKU serverAuth"
openssl verify -CAfile "$tmp/demo.pem" -verify_hostname api.inspect.test \
    "$tmp/good/leaf.pem" >"$tmp/v" 2>&1
ok $? "openssl verify: minted leaf OK"

# What a thief with demo.key could sign: refused by the verifier.
forge() {	# forge NAME SAN DIR
	openssl ecparam -name prime256v1 -genkey -noout -out "$3/leaf.key" 2>/dev/null
	openssl req -new -key "$3/leaf.key" -subj "/CN=$1" -out "$3/leaf.csr" 2>/dev/null
	printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\n' "$2" >"$3/ext"
	openssl x509 -req -in "$3/leaf.csr" -CA "$S/ca/demo.pem" -CAkey "$S/ca/demo.key" \
	    -set_serial 77 -days 1 -extfile "$3/ext" -out "$3/leaf.pem" 2>/dev/null
}
forge evil.test DNS:evil.test "$tmp/evil"
openssl verify -CAfile "$tmp/demo.pem" "$tmp/evil/leaf.pem" >"$tmp/v" 2>&1
[ $? -ne 0 ] && grep -q 'permitted subtree violation' "$tmp/v"
ok $? "openssl verify: forged evil.test leaf -> permitted subtree violation"
forge ip IP:127.0.0.1 "$tmp/ip"
openssl verify -CAfile "$tmp/demo.pem" "$tmp/ip/leaf.pem" >"$tmp/v" 2>&1
[ $? -ne 0 ] && grep -q 'excluded subtree violation' "$tmp/v"
ok $? "openssl verify: forged IP 127.0.0.1 leaf -> excluded subtree violation"

# serve DIR: openssl s_server on 127.0.0.1 (a free port), sets $port and $srv.
serve() {
	: >"$tmp/srv.log"
	openssl s_server -accept 127.0.0.1:0 -cert "$1/leaf.pem" -key "$1/leaf.key" \
	    -www >"$tmp/srv.log" 2>&1 &
	srv=$!
	port=
	i=0
	while [ -z "$port" ] && [ $i -lt 50 ]; do
		port=$(sed -n 's/^ACCEPT 127.0.0.1:\([0-9]*\)$/\1/p' "$tmp/srv.log")
		[ -n "$port" ] || sleep 0.1
		i=$((i + 1))
	done
}
unserve() {
	kill "$srv" 2>/dev/null
	wait "$srv" 2>/dev/null
	srv=
}
# s_server prints "ACCEPT 127.0.0.1:PORT" once it listens.
serve "$tmp/good"
if [ -z "$port" ]; then
	unserve
	echo "# s_server printed no port: $(cat "$tmp/srv.log")"
	ok 1 "s_server started"
else
	curl -sS --max-time 5 --cacert "$tmp/demo.pem" \
	    --resolve "api.inspect.test:$port:127.0.0.1" \
	    -o /dev/null -w '%{http_code}' "https://api.inspect.test:$port/" >"$tmp/c" 2>&1
	[ "$(cat "$tmp/c")" = 200 ]
	ok $? "curl --cacert demo.pem trusts the minted leaf (HTTP $(cat "$tmp/c"))"
	curl -sS --max-time 5 --cacert "$S/ca.pem" \
	    --resolve "api.inspect.test:$port:127.0.0.1" \
	    -o /dev/null "https://api.inspect.test:$port/" >"$tmp/c" 2>&1
	[ $? -ne 0 ]
	ok $? "... and not with another CA (the host CA)"
	unserve
	serve "$tmp/evil"
	curl -sS --max-time 5 --cacert "$tmp/demo.pem" \
	    --resolve "evil.test:$port:127.0.0.1" \
	    -o /dev/null "https://evil.test:$port/" >"$tmp/c" 2>&1
	rc=$?
	[ $rc -ne 0 ] && grep -q 'permitted subtree violation' "$tmp/c"
	ok $? "curl refuses the forged evil.test leaf: $(head -1 "$tmp/c")"
	unserve
fi

# A policy change that inspects another name makes a new CA, and says so.
sed 's/"spliced.test" }/"spliced.test", "tls": "inspect" }/' "$tmp/policy.json" >"$tmp/policy3.json"
sbrec "$tmp/policy3.json"
run ca cert demo
expect_rc 0 "ca cert demo after the policy changed"
expect_err "made a new CA"
! cmp -s "$tmp/out" "$tmp/demo.pem"
ok $? "... a different certificate"
chmod 0644 "$S/ca/demo.key"
run ca cert demo
expect_rc 2 "loose sandbox key refused"
expect_err "demo.key: mode 0644, must be 0600"
run ca cert ../x
expect_rc 2 "invalid sandbox name"

done_testing
