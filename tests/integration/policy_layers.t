#!/bin/bash
# tests/integration/policy_layers.t: a sandbox policy on an organisation's baseline
# ("base", policies/SCHEMA.md "Bases") through the real enforcement path
# (tests/lib/proxynet.sh: airlockd in a host namespace, `airlock net attach`, origins
# in an "internet" namespace that record what reaches them).  airlockd's worker has
# no file system view: the root reader reads the base for it.
#
# Covers: the policy hash airlockd and the sandbox record hold is the one of both
# files (sha256sum of each, then of those lines); the sandbox's own inspect rule
# works (positive control), audited with its file; the base's deny rules beat the
# sandbox's allow rules: a raw-TCP name on one port (refused before a byte reaches the
# origin), a name in DNS (NXDOMAIN), POST under /admin/ on an inspected name (403,
# nothing reaches the origin; GET there and POST elsewhere pass); each audited with
# denied_by_rule, the rule and the base's file.  Then the base is edited and `airlock
# reload` puts the edit in force (a new hash, the name reachable); a base that no
# longer parses, and one that is gone, leave that policy in force with the error at
# its file, line and column; the base restored takes its deny back.  Needs root;
# cleans up by trap.
set -u
cd "$(dirname "$0")/../.." || exit 1
. tests/lib/proxynet.sh
pn_require curl sha256sum

set -e
pn_setup lay
pn_vm V 0
inV() { ip netns exec "$V" "$@"; }
pn_hosts "11.0.0.2 origin.test git2.test evil.test"
origin_cert "$T" origin.test origin.test
: >"$T/rec-origin.test"
ORIGIN_RECORD="$T/rec-origin.test" origin_start "$I" tls 11.0.0.2 443 origin.test \
    "$T/origin.test.pem" "$T/origin.test.key"
origin_start "$I" banner 11.0.0.2 2222 git2.test
mkdir -p "$T/policies/org"
OWN=$T/policies/own.json
BASE=$T/policies/org/baseline.json
cat >"$OWN" <<'EOF'
{ "policy": "sandbox",
  "base": ["org/baseline.json"],
  "rules": [
    { "id": "origin", "host": "origin.test", "tls": "inspect" },
    { "id": "git2", "host": "git2.test", "ports": [2222], "protocol": "tcp" },
    { "id": "evil", "host": "evil.test" } ] }
EOF
base_v1() {
	cat >"$BASE" <<'EOF'
{ "policy": "org-baseline",
  "rules": [
    { "id": "no-git2", "action": "deny", "host": "git2.test", "ports": [2222] },
    { "id": "no-evil", "action": "deny", "host": "evil.test" },
    { "id": "no-admin-writes", "action": "deny", "host": "origin.test",
      "http": { "methods": ["POST"], "paths": ["/admin/**"] } } ] }
EOF
}
base_v1
set +e
pn_start_or_skip "\"upstream_ca_file\": \"$T/ca.pem\""
pn_attach ly 0 "$OWN" 2>"$T/attach.err"
ok $? "net attach ly (a policy with a base)"
sed 's/^/# /' "$T/attach.err"
AL() { inH "$AIRLOCK" --config "$T/airlock.json" "$@"; }
AL ca cert ly >"$T/ly-ca.pem" 2>/dev/null
vcurl() { inV curl -sS --max-time 8 --cacert "$T/ly-ca.pem" "$@"; }
hash_of() {
	AL stats --json | perl -ne 'print $1 if /"name":"ly"[^}]*"policy_hash":"([0-9a-f]*)"/'
}
both_hash() {	# the documented hash of the policy and its base
	sha256sum "$OWN" "$BASE" | cut -c1-64 | sha256sum | cut -d' ' -f1
}
audit_has() { grep -q -- "$1" "$T/audit.jsonl"; }
g2() {		# the banner of git2.test through the proxy, or nothing
	inV timeout 5 bash -c "exec 3<>/dev/tcp/$1/2222; read -r l <&3; echo \"\$l\"" \
	    2>/dev/null
}
own_file='"rule_file":"'$OWN'"'
base_file='"rule_file":"'$BASE'"'

h1=$(both_hash)
[ "$(hash_of)" = "$h1" ]
ok $? "airlockd's policy hash covers both files (sha256sum own base | cut -c1-64 | sha256sum)"
AL sandbox ls --json | grep -q '"policy_hash":"'"$h1"'"'
ok $? "... and so does the sandbox record"
audit_has '"sandbox":"ly","event":"config","source":"control".*"policy_hash":"'"$h1"'","changed":1,"result":"loaded"'
ok $? "... and the config record"

# A policy given by a symbolic link elsewhere: recorded and checked at its real path,
# so its base is found beside the real file (where airlockd reads it).
mkdir -p "$T/elsewhere"
ln -s "$OWN" "$T/elsewhere/own.json"
! "$AIRLOCK" policy check "$T/elsewhere/own.json" >/dev/null 2>&1
ok $? "(policy check through the link looks for the base beside the link: none)"
pn_vm V1 1
pn_attach ly1 1 "$T/elsewhere/own.json" 2>"$T/attach1.err"
ok $? "net attach through the link: checked at the real path ($(head -c 200 "$T/attach1.err"))"
AL sandbox ls --json | grep -q '"name":"ly1",[^}]*"policy":"'"$OWN"'","policy_hash":"'"$h1"'"'
ok $? "... the record names the real file, and the hash of both files"


out=$(vcurl https://origin.test/ 2>&1)
[ "$out" = "origin origin.test" ]
ok $? "the sandbox's own inspect rule: GET https://origin.test/ ($out)"
sleep 0.3
audit_has '"sandbox":"ly","event":"request","src":"[^"]*","dst":"origin.test:443","tls":"inspect","method":"GET","path":"/","status":200,"decision":"allow","rule":"origin",'"$own_file"
ok $? "... audited with its rule and the sandbox's policy file"

# --- the base's deny beats the sandbox's allow ------------------------------------
G=$(pn_mapped "$V" git2.test)
[ -n "$G" ]
ok $? "git2.test resolves (the deny rule names one port: DNS is the allow rule's)"
out=$(g2 "$G")
[ -z "$out" ]
ok $? "git2.test:2222, allowed by the sandbox, denied by the base: refused ('$out')"
sleep 0.3
audit_has '"sandbox":"ly","event":"deny","src":"[^"]*","dst":"git2.test:2222","decision":"deny","rule":"no-git2",'"$base_file"',"reason":"denied_by_rule"'
ok $? "... audited: denied_by_rule, the base's rule and file"
! grep -q accept "$T/git2.test-2222.log"
ok $? "... and the origin saw no connection"

[ -z "$(pn_mapped "$V" evil.test)" ]
ok $? "evil.test, allowed by the sandbox, refused by the base in DNS (NXDOMAIN)"
sleep 0.3
audit_has '"sandbox":"ly","event":"dns",.*"decision":"deny","rule":"no-evil",'"$base_file"',"reason":"denied_by_rule","qname":"evil.test"'
ok $? "... audited: denied_by_rule, the base's rule and file"

out=$(vcurl -o "$T/admin.body" -w '%{http_code}' -X POST -d x \
    https://origin.test/admin/users 2>&1)
[ "$out" = 403 ] && grep -q 'rule no-admin-writes' "$T/admin.body"
ok $? "POST /admin/users on the inspected name: 403 naming the base's rule ($out: $(head -c 200 "$T/admin.body"))"
sleep 0.3
audit_has '"sandbox":"ly","event":"request",.*"method":"POST","path":"/admin/users","status":403,"decision":"deny","rule":"no-admin-writes",'"$base_file"',"reason":"denied_by_rule"'
ok $? "... audited: denied_by_rule, the base's rule and file"
! grep -q "^POST /admin" "$T/rec-origin.test"
ok $? "... and not a byte of it reached the origin"
out=$(vcurl https://origin.test/admin/users 2>&1)
[ "$out" = "origin origin.test" ]
ok $? "positive control: GET /admin/users passes ($out)"
out=$(vcurl -X POST -d x https://origin.test/users 2>&1)
[ "$out" = "origin origin.test" ] && grep -q "^POST /users" "$T/rec-origin.test"
ok $? "positive control: POST /users passes, and reaches the origin ($out)"

# --- the base edited, then reload ---------------------------------------------------
perl -0 -i -pe 's/\n    \{ "id": "no-git2"[^\n]*//' "$BASE"
! grep -q no-git2 "$BASE"
ok $? "(the base without its git2 deny rule)"
h2=$(both_hash)
AL reload >"$T/out" 2>"$T/err"
ok $? "airlock reload after the base changed ($(cat "$T/out" "$T/err" | tr '\n' ' '))"
grep -q '^ly: changed, policy sandbox' "$T/out"
ok $? "... the sandbox's policy changed"
[ "$(hash_of)" = "$h2" ] && [ "$h2" != "$h1" ]
ok $? "... to the hash of both files as they are now"
audit_has '"sandbox":"ly","event":"config","source":"control".*"policy_hash":"'"$h2"'","changed":1,"result":"loaded"'
ok $? "... audited with the new hash"
out=$(g2 "$G")
[ "$out" = "git2.test ready" ] && grep -q accept "$T/git2.test-2222.log"
ok $? "... and the edit is in force: git2.test:2222 connects, the origin logs it ($out)"

# --- a base that no longer parses: the previous policy stays ------------------------
printf '{ "policy": "org-baseline", "rules": [],\n  "colour": "red" }\n' >"$BASE"
AL reload >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" = 1 ] && grep -q "^ly: FAILED, keeping policy sandbox (${h2:0:12})" "$T/out"
ok $? "reload with a broken base: refused, the policy stays (rc $rc)"
grep -qF "$BASE:2:3: \$.colour: unknown key" "$T/err"
ok $? "... the error names the base's file, line, column and path ($(head -c 300 "$T/err"))"
[ "$(hash_of)" = "$h2" ]
ok $? "... stats: the same hash"
audit_has '"sandbox":"ly","event":"config","source":"control".*"policy_hash":"'"$h2"'","changed":0,"result":"kept_previous","error":"'"$BASE"':2:3:'
ok $? "... audited: kept_previous, the base's error"
out=$(g2 "$G")
[ "$out" = "git2.test ready" ]
ok $? "... and the policy in force is the previous one: git2.test connects ($out)"

# --- a base that is gone -------------------------------------------------------------
rm -f "$BASE"
AL reload >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" = 1 ] && grep -qF "$OWN:2:12: \$.base[0]: base \"org/baseline.json\" ($BASE): cannot open: No such file or directory" "$T/err"
ok $? "reload with the base gone: refused at the name that names it (rc $rc: $(head -c 300 "$T/err"))"
[ "$(hash_of)" = "$h2" ]
ok $? "... the previous policy stays"

# --- the base restored: its deny is back ---------------------------------------------
base_v1
AL reload >"$T/out" 2>"$T/err"
ok $? "reload with the base restored"
[ "$(hash_of)" = "$h1" ]
ok $? "... the first hash again"
out=$(g2 "$G")
[ -z "$out" ]
ok $? "... and git2.test:2222 is refused again ('$out')"

AL audit verify "$T/audit.jsonl" >/dev/null 2>&1
ok $? "the audit chain verifies"
pn_stop_checked
pn_done
