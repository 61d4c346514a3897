#!/bin/sh
# tests/integration/policy_cli.t: `airlock policy check` and `airlock policy test`
# on the example policies and the fixtures of tests/data/policies/.  No privileges.
#
# Run from the top of the tree (make check does); AIRLOCK is the binary.

. "$(dirname "$0")/../lib/cli.sh"
data=$top/tests/data/policies

if [ ! -x "$AIRLOCK" ]; then
	echo "1..0 # SKIP no airlock binary at $AIRLOCK"
	exit 0
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# --- check: the example policies ---------------------------------------------
for f in coding-agent llm-api deny-all; do
	run policy check "$top/policies/$f.json"
	expect_rc 0 "check policies/$f.json"
	has out "$top/policies/$f.json: ok: policy $f, " "  summary line for $f"
	sum=$(sha256sum "$top/policies/$f.json" | cut -d' ' -f1)
	has out "sha256 $sum" "  sha256 matches sha256sum"
	[ ! -s "$tmp/err" ]
	ok $? "  nothing on stderr"
done
run policy check "$top/policies/coding-agent.json" "$top/policies/llm-api.json" \
    "$top/policies/deny-all.json"
expect_rc 0 "check all three examples at once"
[ "$(wc -l <"$tmp/out")" -eq 3 ]
ok $? "  three summary lines"
has out "7 rules, mode enforce" "  coding-agent has 7 rules"
has out "policy deny-all, 0 rules" "  deny-all has no rules"

# --- check -: the policy on standard input -------------------------------------
run policy check - <"$top/policies/deny-all.json"
expect_rc 0 "check - reads standard input"
has out "-: ok: policy deny-all, 0 rules" "  and names it -"
printf '{"policy":' >"$tmp/trunc.json"
run policy check - <"$tmp/trunc.json"
expect_rc 1 "check - of a broken policy: exit 1"
has err "<stdin>:" "  its errors name <stdin>"
run policy test - example.com:443 <"$top/policies/deny-all.json"
expect_rc 1 "test - HOST: a denial from the policy on standard input"

# --- check: every error of a file, with its path --------------------------------
f3=$data/bad/three-errors.json
run policy check "$f3"
expect_rc 1 "check a file with three errors"
[ "$(wc -l <"$tmp/err")" -eq 3 ]
ok $? "  three error lines"
has err "$f3:4:62: \$.rules[0].ports[1]: port 0 is out of range" \
    "  first: FILE:LINE:COL: \$.rules[0].ports[1]"
has err "$f3:5:21: \$.rules[1].host: " "  second: \$.rules[1].host"
has err "$f3:7:7: \$.rules[2].inject: " "  third: \$.rules[2].inject"
[ ! -s "$tmp/out" ]
ok $? "  nothing on stdout"

# A good and a bad file: the good one is still reported, exit 1.
run policy check "$top/policies/deny-all.json" "$f3"
expect_rc 1 "check a good and a bad file"
has out "deny-all.json: ok:" "  good file summarised"
[ "$(wc -l <"$tmp/err")" -eq 3 ]
ok $? "  bad file's three errors"

# One fixture per refusal: FILE|expected fragment of the error line.
while IFS='|' read -r fixture want; do
	[ -n "$fixture" ] || continue
	run policy check "$data/bad/$fixture"
	expect_rc 1 "check bad/$fixture"
	has err "$want" "  reports: $want"
done <<'EOF'
syntax.json|syntax.json:1:34: invalid JSON
duplicate-key.json|duplicate-key.json:4:10: $.policy: duplicate key
unknown-key.json|$.rules[0].port: unknown key "port"
ip-host.json|$.rules[0].host: "10.0.0.1" is an IP address
public-suffix.json|$.rules[0].host: invalid host pattern "*.co.uk"
port-string.json|$.rules[0].ports[0]: a port must be an integer
inject-plain-http.json|$.rules[0].inject: secrets are injected only into inspected TLS
cidr-inspect.json|$.rules[0].tls: a cidr rule cannot inspect TLS
duplicate-id.json|$.rules[1].id: duplicate rule id "a"
missing-rules.json|missing-rules.json:1:1: $: missing required key "rules"
header-injection.json|$.rules[0].inject[0].value:
path-escape.json|$.rules[0].http.paths[0]: invalid path glob
shadowed.json|$.rules[1]: rule "b" can never match
EOF
for f in "$data"/good/*.json; do
	run policy check "$f"
	expect_rc 0 "check good/$(basename "$f")"
done

run policy check /nonexistent/p.json
expect_rc 1 "check a missing file"
has err "/nonexistent/p.json: cannot open" "  says it cannot open it"
run policy check "$top/policies"
expect_rc 1 "check a directory"
has err "not a regular file" "  says it is not a regular file"
run policy check
expect_rc 2 "check without a file is a usage error"
run policy check --bogus "$f3"
expect_rc 2 "unknown option is a usage error"
run policy frobnicate
expect_rc 2 "unknown subcommand is a usage error"

# --json, before the command and after the subcommand
run --json policy check "$top/policies/deny-all.json"
expect_rc 0 "--json check (before the command)"
has out '"ok":true' "  JSON summary"
run policy check "$f3" --json
expect_rc 1 "check --json on a bad file"
has out '"path":"$.rules[1].host"' "  JSON error with its path"

# --- test ----------------------------------------------------------------
ca=$top/policies/coding-agent.json
run policy test "$ca" api.github.com GET /repos/acme/app
expect_rc 0 "test: GitHub API allowed"
has out "allow rule=github-api tls=inspect" "  allow rule=github-api tls=inspect"
run policy test "$ca" API.GitHub.com.:443 GET /repos/acme/app/pulls/1
expect_rc 0 "test: name normalised, port given, ** path"
run policy test "$ca" api.github.com DELETE /repos/acme/app
expect_rc 1 "test: method denied"
has out "deny reason=method_not_allowed rule=github-api" "  method_not_allowed"
run policy test "$ca" api.github.com GET /repos/acme/../../admin
expect_rc 1 "test: path escape denied"
has out "deny reason=path_not_allowed" "  path_not_allowed"
run policy test "$ca" api.github.com GET /repos/acme/x%2F..%2F..%2Fadmin
expect_rc 1 "test: encoded slash denied"
has out "deny reason=invalid_path" "  invalid_path"
run policy test "$ca" github.com
expect_rc 0 "test: github.com spliced"
has out "allow rule=github-git tls=splice" "  tls=splice"
run policy test "$ca" github.com:22
expect_rc 0 "test: git over ssh"
has out "allow rule=git-ssh protocol=tcp" "  protocol=tcp"
run policy test "$ca" github.com:8443
expect_rc 1 "test: other port"
has out "deny reason=port_not_allowed" "  port_not_allowed"
run policy test "$ca" evil-github.com
expect_rc 1 "test: look-alike name"
has out "deny reason=name_not_allowed" "  name_not_allowed"
run policy test "$ca" "exa mple.com"
expect_rc 1 "test: invalid name"
has out "deny reason=invalid_name" "  invalid_name"
run policy test "$ca" 140.82.112.3
expect_rc 1 "test: an address no cidr rule names"
has out "deny reason=address_not_allowed" "  address_not_allowed"
run policy test "$ca" 127.1
expect_rc 1 "test: an IP-looking name"
has out "deny reason=ip_literal_name" "  ip_literal_name"
run policy test "$ca" github.com:80
expect_rc 1 "test: plain HTTP to github.com"
run policy test --protocol http "$ca" pypi.org
expect_rc 1 "test: --protocol http on a tls rule"
has out "deny reason=protocol_not_allowed rule=pypi-index" "  protocol_not_allowed"
run policy test "$top/policies/deny-all.json" pypi.org
expect_rc 1 "test: deny-all denies"

mx=$data/good/mixed.json
run policy test "$mx" 10.20.1.2:5432
expect_rc 0 "test: cidr rule allows the address"
has out "allow rule=db protocol=tcp" "  rule=db"
run policy test "$mx" '[2001:db8::1]:443'
expect_rc 0 "test: [v6]:port"
has out "allow rule=v6 tls=splice" "  rule=v6"
run policy test "$mx" 2001:db8::1
expect_rc 0 "test: bare IPv6 literal, port 443"
run policy test "$mx" mirror.example.org:80 GET /debian/dists/stable/Release
expect_rc 0 "test: plain HTTP rule (protocol http by port 80)"
has out "allow rule=mirror protocol=http" "  protocol=http"
run policy test "$mx" mirror.example.org:80 POST /debian/x
expect_rc 1 "test: plain HTTP rule, method denied"

rp=$data/good/report.json
run policy test "$rp" api.example.com POST /v1/x
expect_rc 0 "test: report mode lets a would-be denial through"
has out "allow (report mode: would deny: reason=method_not_allowed" \
    "  says it would deny"
run policy test "$rp" other.example.com
expect_rc 0 "test: report mode, unknown name"
has out "would deny: reason=name_not_allowed" "  name_not_allowed"
run policy test "$rp" api.example.com GET /v1/models --json
expect_rc 0 "test --json"
has out '"decision":"allow"' "  JSON decision"
has out '"rule":"api"' "  JSON rule"

# --- bases: a base's deny beats the policy's allow; files and hash ---------------
mkdir -p "$tmp/org"
cat >"$tmp/org/baseline.json" <<'EOF'
{ "policy": "org-baseline",
  "rules": [
    { "id": "no-paste", "action": "deny", "host": "paste.example.com" },
    { "id": "read-only", "action": "deny", "host": "api.example.com",
      "http": { "methods": ["DELETE"] } },
    { "id": "docs", "host": "docs.example.org" } ] }
EOF
cat >"$tmp/own.json" <<'EOF'
{ "policy": "sandbox",
  "base": ["org/baseline.json"],
  "rules": [
    { "id": "example", "host": "*.example.com", "tls": "inspect" },
    { "id": "no-docs", "action": "deny", "host": "docs.example.org",
      "ports": [443] } ] }
EOF
run policy test "$tmp/own.json" paste.example.com
expect_rc 1 "test: a base's deny beats the policy's own allow"
has out "deny reason=denied_by_rule rule=no-paste file=$tmp/org/baseline.json" \
    "  names the base's file and rule"
run policy test "$tmp/own.json" www.example.com
expect_rc 0 "test: positive control, another name of the wildcard"
has out "allow rule=example tls=inspect file=$tmp/own.json" "  the policy's own rule"
run policy test "$tmp/own.json" api.example.com DELETE /x
expect_rc 1 "test: a base's method deny on a request"
has out "deny reason=denied_by_rule rule=read-only file=$tmp/org/baseline.json" \
    "  named"
run policy test "$tmp/own.json" api.example.com GET /x
expect_rc 0 "test: positive control, another method"
run policy test "$tmp/own.json" docs.example.org
expect_rc 1 "test: the policy's own deny beats the base's allow"
has out "deny reason=denied_by_rule rule=no-docs file=$tmp/own.json" "  named"
run policy test --json "$tmp/own.json" paste.example.com
has out '"rule":"no-paste","file":"'"$tmp"'/org/baseline.json","action":"deny"' \
    "test --json: file and action"
run policy check "$tmp/own.json"
expect_rc 0 "check a policy with a base"
sum=$(sha256sum "$tmp/own.json" "$tmp/org/baseline.json" | cut -c1-64 | sha256sum |
    cut -d' ' -f1)
has out "$tmp/own.json: ok: policy sandbox, 5 rules, mode enforce, sha256 $sum" \
    "  the hash of the files' hashes (sha256sum ... | cut -c1-64 | sha256sum)"
has out "  file $tmp/own.json: policy sandbox, 2 rules, sha256 $(sha256sum \
    "$tmp/own.json" | cut -d' ' -f1)" "  the policy's own file"
has out "    base $tmp/org/baseline.json: policy org-baseline, 3 rules, sha256 \
$(sha256sum "$tmp/org/baseline.json" | cut -d' ' -f1)" "  its base, indented"
run policy check --json "$tmp/own.json"
has out '"files":[{"file":"'"$tmp"'/own.json","policy":"sandbox","rules":2,"depth":0,' \
    "check --json: the files"
# Standard input: its bases are relative to the current folder.
(cd "$tmp" && "$AIRLOCK" policy test - paste.example.com <own.json >"$tmp/out" 2>&1)
grep -qF "rule=no-paste file=org/baseline.json" "$tmp/out"
ok $? "test -: bases relative to the current folder"
# A missing base, and one in a cycle: errors at the naming file's $.base[i].
sed 's/org\/baseline.json/org\/gone.json/' "$tmp/own.json" >"$tmp/gone.json"
run policy check "$tmp/gone.json"
expect_rc 1 "check: a missing base"
has err "$tmp/gone.json:2:12: \$.base[0]: base \"org/gone.json\" ($tmp/org/gone.json): cannot open: No such file or directory" \
    "  FILE:LINE:COL: \$.base[0]: why"
printf '{ "policy": "loop", "base": ["../loop.json"], "rules": [] }\n' \
    >"$tmp/org/loop.json"
sed 's/org\/baseline.json/org\/loop.json/' "$tmp/own.json" >"$tmp/loop.json"
run policy check "$tmp/loop.json"
expect_rc 1 "check: a cycle of bases"
has err "$tmp/org/loop.json:1:30: \$.base[0]: a cycle of bases: $tmp/loop.json -> $tmp/org/loop.json -> $tmp/loop.json" \
    "  names the cycle"
# A rule that splices what another file's deny rule decides by method.
cat >"$tmp/splice.json" <<'EOF'
{ "policy": "splicer", "base": ["org/baseline.json"],
  "rules": [ { "id": "api", "host": "api.example.com" } ] }
EOF
run policy check "$tmp/splice.json"
expect_rc 1 "check: a spliced name that a base refuses by method"
has err "$tmp/splice.json:2:14: \$.rules[0]: rule \"api\" splices api.example.com, where deny rule \"read-only\" of $tmp/org/baseline.json refuses requests by method or path" \
    "  at the splicing rule"

# usage and policy errors: exit 2
run policy test "$ca"
expect_rc 2 "test without HOST"
run policy test "$ca" api.github.com GET
expect_rc 2 "test with METHOD but no PATH"
run policy test "$ca" api.github.com:0
expect_rc 2 "test with port 0"
run policy test "$ca" api.github.com:65536
expect_rc 2 "test with port 65536"
run policy test "$ca" '[::1'
expect_rc 2 "test with an unclosed bracket"
run policy test "$ca" '[not-v6]:443'
expect_rc 2 "test with a bracketed non-address"
run policy test --protocol udp "$ca" pypi.org
expect_rc 2 "test with --protocol udp"
run policy test "$f3" api.example.com
expect_rc 2 "test with a broken policy"
has err "$f3:4:62:" "  prints the policy's errors"

done_testing
