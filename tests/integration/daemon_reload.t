#!/bin/bash
# tests/integration/daemon_reload.t: `airlock reload`, SIGHUP and the control
# commands sandbox_add / sandbox_remove.  A policy that fails to load keeps the
# previous one (the reply and stats say so); every reload writes a `config` audit
# record per sandbox with the policy hash; records that appear or disappear attach
# or detach sandboxes (`sandbox` audit records); the audit chain stays intact.
set -u
. "$(dirname "$0")/../lib/daemon.sh"

# hash_of SANDBOX: the policy hash airlockd has in force for it.
hash_of() {
	"$AIRLOCK" --config "$CFG" stats --json |
	    perl -ne 'print $1 if /"name":"'"$1"'"[^}]*"policy_hash":"([0-9a-f]*)"/'
}
# audit_count REGEX: how many audit lines match.
audit_count() {
	grep -Ec -- "$1" "$T/audit.jsonl"
}

dt_config
dt_policy "$T/p1.json" p1 example.com
dt_policy "$T/p2.json" p2 example.org
dt_record sb1 10.233.0.2 "$T/p1.json"
dt_record sb2 10.233.0.6 "$T/p2.json"
if ! dt_start; then
	ok 1 "airlockd starts"
	done_testing
fi
ok 0 "airlockd starts"
h1=$(sha256sum "$T/p1.json" | cut -d' ' -f1)
is "$(hash_of sb1)" "$h1" "sb1's policy hash is its file's SHA-256"
is "$(audit_count '"sandbox":"sb1","event":"sandbox","action":"attach","source":"start"')" 1 \
    "audit: sb1 attached at start"
is "$(audit_count '"sandbox":"sb1","event":"config","source":"start","policy":"p1".*"policy_hash":"'"$h1"'","changed":1,"result":"loaded"')" 1 \
    "audit: config record for sb1 with its hash at start"

# A broken policy: the old one stays, the command says why and exits 1.
echo '{"policy":"p1","rules":[{"id":"r1","host":"example.com","ports":[443],"color":"red"}]}' \
    >"$T/p1.json"
out=$("$AIRLOCK" --config "$CFG" reload 2>"$T/rerr")
rc=$?
is "$rc" 1 "reload with a broken policy: exit 1"
like "$out" "^sb1: FAILED, keeping policy p1 \\(${h1:0:12}\\)$" \
    "reload: sb1 keeps its previous policy"
like "$out" '^sb2: unchanged, policy p2' "reload: sb2 unchanged"
like "$(cat "$T/rerr")" "^airlock: sb1: $T/p1.json:1:[0-9]+: \\\$\\.rules\\[0\\]\\.color: " \
    "reload: the error names file, line, JSON path"
is "$(hash_of sb1)" "$h1" "stats: sb1 still has the old policy's hash"
like "$("$AIRLOCK" --config "$CFG" stats)" '^sb1: policy error: ' \
    "stats: shows sb1's policy error"
is "$(audit_count '"sandbox":"sb1","event":"config","source":"control".*"policy_hash":"'"$h1"'","changed":0,"result":"kept_previous","error":')" 1 \
    "audit: config record for the failed reload (old hash, kept_previous, error)"
is "$(audit_count '"sandbox":"sb2","event":"config","source":"control".*"changed":0,"result":"loaded"')" 1 \
    "audit: config record for sb2 (unchanged)"
out=$("$AIRLOCK" --config "$CFG" reload --json 2>/dev/null)
like "$out" '^\{"ok":true,"failed":1,' "reload --json: failed count"

# A fixed, different policy through SIGHUP.
dt_policy "$T/p1.json" p1 example.net
h1b=$(sha256sum "$T/p1.json" | cut -d' ' -f1)
kill -HUP "$DPID"
for i in $(seq 50); do
	[ "$(hash_of sb1)" = "$h1b" ] && break
	sleep 0.1
done
is "$(hash_of sb1)" "$h1b" "SIGHUP: the new policy is in force"
unlike=$("$AIRLOCK" --config "$CFG" stats | grep -c 'policy error')
is "$unlike" 0 "SIGHUP: the policy error is gone"
is "$(audit_count '"sandbox":"sb1","event":"config","source":"sighup".*"policy_hash":"'"$h1b"'","changed":1,"result":"loaded"')" 1 \
    "audit: config record from SIGHUP with the new hash, changed"

# A record that disappears: the sandbox goes.
rm -f "$T/state/sandboxes/sb2.json"
out=$("$AIRLOCK" --config "$CFG" reload)
is "$?" 0 "reload after a record was removed: exit 0"
like "$out" '^sb2: removed$' "reload: sb2 removed"
"$AIRLOCK" --config "$CFG" stats --json | grep -q '"name":"sb2"'
is "$?" 1 "stats: sb2 is gone"
is "$(audit_count '"sandbox":"sb2","event":"sandbox","action":"detach","source":"control"')" 1 \
    "audit: sb2 detached"

# sandbox_add / sandbox_remove (what netctl sends after create/destroy).
dt_policy "$T/p3.json" p3 example.com
dt_record sb3 10.233.0.10 "$T/p3.json"
like "$(dt_ctl '"{\"cmd\":\"sandbox_add\",\"name\":\"sb3\"}\n"')" \
    '^\{"ok":true,"sandbox":\{"name":"sb3","status":"added","policy":"p3"' \
    "sandbox_add: sb3 added"
"$AIRLOCK" --config "$CFG" stats --json | grep -q '"name":"sb3"'
ok $? "stats: sb3 is there"
like "$(dt_ctl '"{\"cmd\":\"sandbox_add\",\"name\":\"sb9\"}\n"')" \
    '^\{"ok":false,"error":"no record for sandbox sb9 in ' "sandbox_add without a record: refused"
dt_record sb4 10.233.0.10 "$T/p3.json"
like "$(dt_ctl '"{\"cmd\":\"sandbox_add\",\"name\":\"sb4\"}\n"')" \
    '^\{"ok":false,"error":"guest address in use by sandbox sb3"' \
    "sandbox_add: a guest address already in use is refused"
rm -f "$T/state/sandboxes/sb4.json"
echo '{"policy":' >"$T/p5.json"
dt_record sb5 10.233.0.14 "$T/p5.json"
like "$(dt_ctl '"{\"cmd\":\"sandbox_add\",\"name\":\"sb5\"}\n"')" \
    '^\{"ok":false,"error":"'"$T"'/p5.json:' \
    "sandbox_add with a broken policy: the error"
like "$("$AIRLOCK" --config "$CFG" stats --json)" '"name":"sb5",[^}]*"policy":"none","policy_hash":""' \
    "...and sb5 is registered with no policy (nothing allowed)"
is "$(audit_count '"sandbox":"sb5","event":"config".*"result":"none"')" 1 \
    "audit: sb5's config record says no policy"
like "$(dt_ctl '"{\"cmd\":\"sandbox_remove\",\"name\":\"sb3\"}\n"')" \
    '^\{"ok":true,"removed":true\}$' "sandbox_remove: sb3 removed"
like "$(dt_ctl '"{\"cmd\":\"sandbox_remove\",\"name\":\"sb3\"}\n"')" \
    '^\{"ok":true,"removed":false\}$' "sandbox_remove again: nothing to remove"
"$AIRLOCK" --config "$CFG" stats --json | grep -q '"name":"sb3"'
is "$?" 1 "stats: sb3 is gone"

# A record that cannot be parsed makes the reload fail as a whole: nothing changes.
echo '{"name":"sb6"' >"$T/state/sandboxes/sb6.json"
out=$("$AIRLOCK" --config "$CFG" reload 2>&1)
is "$?" 1 "reload with a corrupt record: exit 1"
like "$out" '^airlock: reload: sandbox records in ' "reload with a corrupt record: why"
"$AIRLOCK" --config "$CFG" stats --json | grep -q '"name":"sb1"'
ok $? "...and sb1 is still there"
rm -f "$T/state/sandboxes/sb6.json"

dt_stop
is "$dstatus" 0 "SIGTERM: exit 0"
out=$("$AIRLOCK" audit verify "$T/audit.jsonl" 2>&1)
ok $? "the audit chain verifies ($out)"

done_testing
