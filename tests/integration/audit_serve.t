#!/bin/bash
# tests/integration/audit_serve.t: `airlock audit serve`, the web view of audit logs.
# Servers on 127.0.0.1 (port 0: the kernel picks), logs written by the real writer
# (tests/tools/audit_gen).  No privileges, no namespace: nothing but loopback.
#
# Without a browser (curl): the command's refusals (a listen address that is not
# loopback, a missing file, no web files); the answers' security headers; a Host
# header that is not the view's (DNS rebinding) refused, the view's own accepted;
# every method but GET and HEAD refused; paths that leave the web folder refused;
# parameters bounded; the API's answers (status, records, a record's chain place,
# summary, tail: at once and as a long poll woken by an append); a tampered log's
# first bad line; and the view writes nothing.
#
# In a browser (Debian's chromium, headless, driven by tests/browser/audit_serve.js
# through playwright-core, installed here by npm ci from tests/browser's lock
# file): a log of 100k records; the load time reported (not checked); one denied
# host filtered to exactly its records; one record's chain place; hostile records
# shown as text with nothing run, and the CSP refusing markup put in as HTML (with
# a positive control served without it); the summary; a tampered copy's banner;
# the live tail.  Screenshots of each state in $B/test-artifacts/audit_serve/.
# Skipped, with the reason, when chromium, node or the npm packages are missing
# (outside CI: there, with CI=true, a failed npm ci fails).
# AIRLOCK_UPDATE_SCREENSHOT=1 also writes the filtered view (a record open) to
# docs/audit-serve.png, the README's picture.
set -u
. "$(dirname "$0")/../lib/build.sh"
AIRLOCK=${AIRLOCK:-$B/airlock}
GEN=$B/tests/tools/audit_gen
for f in "$AIRLOCK" "$GEN"; do
	[ -x "$f" ] || { echo "1..0 # SKIP $f not built"; exit 0; }
done
[ -f "$B/web/index.html" ] || { echo "1..0 # SKIP no $B/web (make)"; exit 0; }
command -v curl >/dev/null || { echo "1..0 # SKIP no curl (make deps)"; exit 0; }
T=$(mktemp -d /tmp/airlock-serve.XXXXXX) || exit 1
ART=$B/test-artifacts/audit_serve
PIDS=""
cleanup() {
	for p in $PIDS; do
		kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	rm -rf "$T"
}
trap cleanup EXIT

# serve NAME ARGS...: starts `airlock audit serve --listen 127.0.0.1:0 ARGS` in the
# background; URL is its address once it serves (empty if it did not), PID its pid.
serve() {
	local name=$1 i
	shift
	"$AIRLOCK" audit serve "$@" >"$T/$name.out" 2>"$T/$name.err" &
	PID=$!
	PIDS="$PIDS $PID"
	URL=""
	# The index comes first: a SAN build of 100k records takes some seconds.
	for i in $(seq 1200); do
		URL=$(sed -n 's|^serving \(http://[^ ]*/\)#token=[0-9a-f]\{64\} .*|\1|p' \
		    "$T/$name.out")
		if [ -n "$URL" ]; then
			TOK[$URL]=$(sed -n 's|^serving http://[^ ]*/#token=\([0-9a-f]*\) .*|\1|p' \
			    "$T/$name.out")
			return 0
		fi
		kill -0 "$PID" 2>/dev/null || break
		sleep 0.1
	done
	sed "s/^/# $name: /" "$T/$name.err"
	return 1
}
# stop PID: SIGTERM, and its exit status in $rc.
stop() {
	kill "$1"
	wait "$1"
	rc=$?
}
# get URL [CURL ARGS...]: the body in $T/body, the headers in $T/head, the status in $code.
# The view's token goes along (Authorization: Bearer) unless NOAUTH=1.
declare -A TOK
get() {
	local u=$1 base
	shift
	base=$(printf '%s' "$u" | sed -n 's|^\(http://[^/]*/\).*|\1|p')
	if [ "${NOAUTH:-0}" = 0 ] && [ -n "${TOK[$base]:-}" ]; then
		set -- -H "Authorization: Bearer ${TOK[$base]}" "$@"
	fi
	code=$(curl -s -o "$T/body" -D "$T/head" -w '%{http_code}' "$@" "$u")
}
# waiting: until the view's status counts one tail request waiting (at most 10 s).
waiting() {
	local i
	for i in $(seq 200); do
		get "${SMALL}api/status"
		json '$j->{waiting} == 1' && return 0
		sleep 0.05
	done
	return 1
}
# json PERL-EXPR: the expression over $j (the body, decoded) is true.
json() {
	perl -MJSON::PP -e 'local $/; my $j = eval { decode_json(<STDIN>) } or exit 1;
	    exit !(eval $ARGV[0])' "$1" <"$T/body"
}
header() {
	tr -d '\r' <"$T/head" | grep -i "^$1: " | sed 's/^[^:]*: //'
}

# --- the command --------------------------------------------------------------------
cat >"$T/spec" <<'SPEC'
ts=2026-12-01T10:00:00.000Z sandbox=demo event=request src=10.233.0.2:40122 dst=api.github.com:443 tls=inspect method=GET path=/user status=200 decision=allow rule=github-api inject=github_token
ts=2026-12-01T10:00:01.000Z sandbox=demo event=deny src=10.233.0.2:40124 dst=evil.example:443 decision=deny reason=sni_mismatch x.proto=tls x.sni=%3cimg%20src=x%20onerror=alert(1)%3e
ts=2026-12-01T10:00:02.000Z sandbox=demo event=dns src=10.233.0.2 decision=deny reason=name_not_allowed x.qname=evil.example x.qtype=A x.outcome=nxdomain
ts=2026-12-01T10:00:03.000Z sandbox=demo event=exfil src=10.233.0.2:40126 dst=paste.example.net:443 tls=inspect method=POST path=/api/paste decision=deny rule=paste reason=placeholder_in_body x.secret=github_token x.where=body
ts=2026-12-01T10:00:04.000Z sandbox=ci event=connect src=10.233.0.3:40128 dst=pypi.org:443 tls=splice decision=allow rule=pypi
ts=2026-12-01T10:00:05.000Z sandbox=ci event=request src=10.233.0.3:40130 dst=pypi.org:443 tls=inspect method=GET path=/%3cscript%3ealert(2)%3c/script%3e status=421 decision=deny rule=pypi reason=host_mismatch x.host=evil.example
SPEC
small=$T/small.jsonl
"$GEN" "$small" <"$T/spec" >/dev/null || { echo "Bail out! audit_gen failed"; exit 1; }
sum0=$(sha256sum "$small")

"$AIRLOCK" audit serve --help >"$T/out" 2>"$T/err"
ok $? "audit serve --help: exit 0"
grep -q '^usage: airlock audit serve \[--listen ADDR:PORT\]' "$T/out"
ok $? "... its usage on stdout"
for bad in 0.0.0.0:0 10.1.2.3:8080 '[::]:0' 192.168.0.1:0; do
	"$AIRLOCK" audit serve --listen "$bad" "$small" >"$T/out" 2>"$T/err"
	rc=$?
	[ $rc = 2 ] && grep -q "not a loopback address" "$T/err"
	ok $? "--listen $bad refused: not loopback (exit $rc)"
done
for bad in 127.0.0.1 127.0.0.1:99999 localhost:x 'evil.example:80' '::1:80'; do
	"$AIRLOCK" audit serve --listen "$bad" "$small" >"$T/out" 2>"$T/err"
	rc=$?
	[ $rc = 2 ] && grep -q "not ADDR:PORT" "$T/err"
	ok $? "--listen $bad refused: not ADDR:PORT (exit $rc)"
done
"$AIRLOCK" audit serve --listen 127.0.0.1:0 "$T/missing.jsonl" >"$T/out" 2>"$T/err"
rc=$?
[ $rc = 2 ] && grep -q "missing.jsonl: No such file" "$T/err"
ok $? "a missing file: exit 2, named ($rc)"
AIRLOCK_WEB_DIR=$T/noweb "$AIRLOCK" audit serve --listen 127.0.0.1:0 "$small" \
    >"$T/out" 2>"$T/err"
rc=$?
[ $rc = 2 ] && grep -q "noweb/index.html" "$T/err"
ok $? "no web files: exit 2, said where they were looked for ($rc)"
# Positive controls: other loopback addresses serve.
if serve lo2 --listen 127.0.0.2:0 "$small"; then
	u2=${URL#http://}
	u2=${u2%/}
	get "${URL}api/status" -H "Host: $u2"
	is "$code" 200 "--listen 127.0.0.2:0 serves ($URL)"
	get "${URL}api/status" -H "Host: localhost:${u2##*:}"
	is "$code" 200 "... and answers Host localhost:PORT"
	stop "$PID"
	is "$rc" 0 "... SIGTERM stops it, exit 0"
	[ "$rc" = 0 ] || sed "s/^/# lo2: /" "$T/lo2.err" | tail -20
else
	fail "--listen 127.0.0.2:0 serves"
	skip "it did not start" 2
fi
if serve lolh --listen localhost:0 "$small"; then
	like "$URL" '^http://127\.0\.0\.1:[0-9]+/$' "--listen localhost:0 serves on 127.0.0.1 ($URL)"
	stop "$PID"
else
	fail "--listen localhost:0 serves"
fi

# --- HTTP: headers, Host, methods, paths, parameters ---------------------------------
serve small --listen 127.0.0.1:0 "$small" || { echo "Bail out! the view did not start"; exit 1; }
SMALL=$URL
SMALL_PID=$PID
hp=${URL#http://}
hp=${hp%/}
port=${hp##*:}
grep -q "6 records indexed in [0-9]* ms; chain ok" "$T/small.err"
ok $? "it says what it indexed: $(cat "$T/small.err")"

# The API answers only with this start's token (loopback is every local user's).
NOAUTH=1 get "${SMALL}api/records"
is "$code" 401 "the API without the token: 401"
like "$(header WWW-Authenticate)" '^Bearer ' "... asking for a bearer token"
grep -q '"api.github.com' "$T/body"
ok $((! $?)) "... and no record in the answer"
NOAUTH=1 get "${SMALL}api/status" -H "Authorization: Bearer $(printf '%064d' 0)"
is "$code" 401 "a wrong token: 401"
NOAUTH=1 get "${SMALL}api/status" -H "Authorization: Bearer ${TOK[$SMALL]}" \
    -H "Authorization: Bearer ${TOK[$SMALL]}"
is "$code" 401 "the token twice: 401"
NOAUTH=1 get "${SMALL}api/status" -H "Authorization: Bearer ${TOK[$SMALL]}x"
is "$code" 401 "the token with a byte more: 401"
get "${SMALL}api/records"
is "$code" 200 "with the token: 200 (positive control)"
grep -q '"api.github.com' "$T/body"
ok $? "... with the records"
NOAUTH=1 get "${SMALL}"
is "$code" 200 "the page itself (no record in it) needs no token"
serve small2 --listen 127.0.0.1:0 "$small" || fail "a second view starts"
[ -n "${TOK[$URL]:-}" ] && [ "${TOK[$URL]}" != "${TOK[$SMALL]}" ]
ok $? "each start has its own token"
NOAUTH=1 get "${URL}api/status" -H "Authorization: Bearer ${TOK[$SMALL]}"
is "$code" 401 "... another view's token is refused"
stop "$PID"
grep -q "${TOK[$SMALL]}" "$T/small.err"
ok $((! $?)) "the token is on stdout only, not in the log (stderr)"

get "$SMALL"
is "$code" 200 "GET /: 200"
is "$(header Content-Type)" "text/html; charset=utf-8" "... text/html"
is "$(header Content-Security-Policy)" "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'; object-src 'none'" \
    "... CSP: default-src 'self' (no inline script), frame-ancestors 'none'"
is "$(header X-Content-Type-Options)" nosniff "... X-Content-Type-Options: nosniff"
is "$(header Referrer-Policy)" no-referrer "... Referrer-Policy: no-referrer"
is "$(header X-Frame-Options)" DENY "... X-Frame-Options: DENY"
grep -q '<script src="app.js"' "$T/body"
ok $? "... the page loads app.js from 'self'"
get "${SMALL}app.js"
[ "$code" = 200 ] && [ "$(header Content-Type)" = "text/javascript; charset=utf-8" ]
ok $? "GET /app.js: 200 text/javascript"
get "${SMALL}style.css"
[ "$code" = 200 ] && [ "$(header Content-Type)" = "text/css; charset=utf-8" ]
ok $? "GET /style.css: 200 text/css"
get "${SMALL}api/status"
[ "$code" = 200 ] && [ "$(header Content-Type)" = application/json ] &&
    [ "$(header Cache-Control)" = no-store ] &&
    [ -n "$(header Content-Security-Policy)" ]
ok $? "GET /api/status: 200 JSON, no-store, with the same headers"

# DNS rebinding: a page of another name, rebound to 127.0.0.1, sends its own Host.
for h in "evil.example:$port" "evil.example" "127.0.0.1.nip.io:$port" "localhost.:$port" \
    "127.0.0.1:1$port" "localhost:$((port + 1))" "127.0.0.1" "[::1]:$port"; do
	get "${SMALL}api/status" -H "Host: $h"
	is "$code" 403 "Host '$h' refused (403)"
done
grep -q '"error":"the Host header' "$T/body"
ok $? "... saying why"
get "${SMALL}api/records" -H "Host: evil.example:$port"
[ "$code" = 403 ] && ! grep -q 'evil.example' "$T/body"
ok $? "... the records too, and nothing of the log in the answer"
for h in "$hp" "localhost:$port" "LocalHost:$port"; do
	get "${SMALL}api/status" -H "Host: $h"
	is "$code" 200 "Host '$h' accepted (positive control)"
done
# Two Host headers, and an absolute-form target, in raw requests.
raw() {
	exec 3<>"/dev/tcp/127.0.0.1/$port" || return 1
	printf '%b' "$1" >&3
	head -1 <&3 | tr -d '\r'
	exec 3<&-
}
like "$(raw "GET /api/status HTTP/1.1\r\nHost: $hp\r\nHost: evil.example\r\nConnection: close\r\n\r\n")" \
    '^HTTP/1\.1 403' "two Host headers: 403"
like "$(raw "GET http://evil.example/api/status HTTP/1.1\r\nHost: $hp\r\nConnection: close\r\n\r\n")" \
    '^HTTP/1\.1 400' "an absolute-form target: 400"
like "$(raw "GET /api/status HTTP/1.0\r\n\r\n")" '^HTTP/1\.[01] 403' \
    "no Host header (HTTP/1.0): 403"
like "$(raw "GET /api/status HTTP/1.1\r\nHost: $hp\r\nAuthorization: Bearer ${TOK[$SMALL]}\r\nConnection: close\r\n\r\n")" \
    '^HTTP/1\.1 200' "the same raw request with one good Host: 200 (positive control)"

# Read-only: GET and HEAD only.
for m in POST PUT DELETE PATCH OPTIONS; do
	get "${SMALL}api/status" -X "$m" --data-raw ''
	[ "$code" = 405 ] && [ "$(header Allow)" = "GET, HEAD" ]
	ok $? "$m: 405, Allow: GET, HEAD ($code)"
done
get "${SMALL}" -X POST -H 'Content-Type: application/x-www-form-urlencoded' --data-raw 'a=b'
is "$code" 405 "POST with a body to /: 405"
get "${SMALL}api/status" -I
is "$code" 200 "HEAD: 200 (positive control)"

# Static files: a plain name of the web folder, nothing else.
for p in '/../../../../etc/passwd' '/%2e%2e/%2e%2e/etc/passwd' '/..%2f..%2fetc%2fpasswd' \
    '/web/../index.html' '/./index.html' '/.index.html' '/index.html%00.js' '//etc/passwd' \
    '/etc/passwd' '/index.html/' '/INDEX.HTML' '/index.htm' '/app.js.map' "/$(printf 'a%.0s' $(seq 70)).js"; do
	code=$(curl -s --path-as-is -o "$T/body" -w '%{http_code}' "http://$hp$p")
	[ "$code" = 404 ] || [ "$code" = 400 ]
	ok $? "path $p refused ($code)"
	! grep -q 'root:' "$T/body"
	ok $? "... and no file's bytes in the answer"
done
mkdir -p "$T/web"
cp "$B/web/"* "$T/web/"
ln -s /etc/passwd "$T/web/passwd.js"
echo 'ok' >"$T/web/extra.js"
AIRLOCK_WEB_DIR=$T/web serve webdir --listen 127.0.0.1:0 "$small"
get "${URL}passwd.js"
is "$code" 404 "a symbolic link in the web folder is not followed (404)"
get "${URL}extra.js"
[ "$code" = 200 ] && [ "$(cat "$T/body")" = ok ]
ok $? "... a plain file beside it is served (positive control, AIRLOCK_WEB_DIR)"
stop "$PID"

# Parameters: bounded, named, once each.
long256=$(printf 'a%.0s' $(seq 256))
long257=${long256}a
longq=$(printf 'x%.0s' $(seq 4100))
while IFS='|' read -r q want desc; do
	get "${SMALL}api/$q"
	is "$code" "$want" "$desc: $want"
done <<EOF
records?limit=501|400|limit over 500
records?limit=0|400|limit 0
records?limit=abc|400|limit not a number
records?limit=+5|400|limit with a sign
records?offset=-1|400|offset below 0
records?offset=99999999999999999999|400|offset past 10^15
records?host=$long257|400|host of 257 bytes
records?q=$long257|400|free text of 257 bytes
records?sandbox=a&sandbox=b|400|a parameter twice
records?nosuch=1|400|an unknown parameter
records?n=1|400|a parameter of another endpoint
records?host=%zz|400|a bad %-escape
records?host=a%00b|400|an escaped NUL
records?q=a%0ab|400|an escaped newline
records?since=yesterday|400|since not a time
records?until=2026-13-01|400|until not a date
records?decision=maybe|400|decision maybe
records?event=nope|400|event nope
records?order=sideways|400|order sideways
records?$longq|400|a query over 4096 bytes
record|400|record without n
record?n=0|400|record 0
record?n=7|404|record past the end
tail?wait=26|400|tail wait over 25 s
summary?top=101|400|summary top over 100
nosuch|404|an unknown API
records?limit=500|200|limit 500 (positive control)
records?host=$long256|200|host of 256 bytes (positive control)
records?host=&sandbox=&q=|200|empty fields, as a form sends them (positive control)
records?host=evil.example&decision=deny&since=2026-12-01&until=2026-12-01T10:00:02Z&order=desc|200|every filter at once (positive control)
EOF
get "${SMALL}api/records?nosuch=1"
json '$j->{error} eq "unknown parameter '"'"'nosuch'"'"'"'
ok $? "... a 400 says what was wrong ($(cat "$T/body"))"
get "${SMALL}api/records?limit=501"
json '$j->{error} =~ /^limit: a number from 1 to 500/'
ok $? "... and for a bound ($(cat "$T/body"))"

# --- the API ------------------------------------------------------------------------
get "${SMALL}api/status"
json '$j->{records} == 6 && $j->{verify}{state} eq "ok" && $j->{verify}{first_seq} == 1 &&
    $j->{verify}{last_seq} == 6 && !$j->{verify}{continued} && $j->{files}[0]{records} == 6'
ok $? "status: 6 records, chain ok, seq 1..6"
head=$("$AIRLOCK" audit verify "$small" | sed -n 's/.* head //p')
json "\$j->{verify}{head} eq '$head'"
ok $? "... its head is audit verify's ($head)"
get "${SMALL}api/records"
json '$j->{total} == 6 && @{$j->{items}} == 6 && $j->{items}[0]{n} == 1 &&
    $j->{items}[0]{record}{seq} == 1 && $j->{items}[0]{verified}'
ok $? "records: all 6, oldest first by default"
get "${SMALL}api/records?order=desc&limit=2&offset=1"
json '$j->{total} == 6 && @{$j->{items}} == 2 && $j->{items}[0]{n} == 5 && $j->{items}[1]{n} == 4'
ok $? "records: order=desc, offset 1, limit 2: records 5 and 4"
get "${SMALL}api/records?host=evil.example"
json '$j->{total} == 2 && $j->{items}[0]{n} == 2 && $j->{items}[1]{n} == 3'
ok $? "records: host evil.example: its deny and its DNS refusal (as audit query --host)"
"$AIRLOCK" audit query --host evil.example "$small" | wc -l >"$T/nq"
is "$(cat "$T/nq")" 2 "... audit query --host says the same"
get "${SMALL}api/records?host_part=EXAMPLE"
json '$j->{total} == 3'
ok $? "records: host_part EXAMPLE (any case): 3"
get "${SMALL}api/records?reason=placeholder_in_body&sandbox=demo"
json '$j->{total} == 1 && $j->{items}[0]{record}{event} eq "exfil"'
ok $? "records: reason and sandbox"
get "${SMALL}api/records?q=onerror%3Dalert"
json '$j->{total} == 1 && $j->{items}[0]{record}{sni} eq "<img src=x onerror=alert(1)>"'
ok $? "records: free text; the hostile SNI comes as a JSON string"
grep -q '<img' "$T/body"
ok $? "... (the answer is JSON: the page must put it in as text; the browser part checks it does)"
get "${SMALL}api/records?since=2026-12-01T10:00:04Z"
json '$j->{total} == 2'
ok $? "records: since, inclusive"
get "${SMALL}api/record?n=4"
json '$j->{n} == 4 && $j->{line} == 4 && $j->{verified} && $j->{chain}{seq} == 4 &&
    $j->{chain}{links} && $j->{chain}{of} == 6 && $j->{chain}{prev_n} == 3 &&
    $j->{record}{secret} eq "github_token"'
ok $? "record 4: its chain place (seq 4 of 6, prev links to record 3)"
prev3=$(sed -n 3p "$small" | sed 's/.*"hash":"\([0-9a-f]*\)".*/\1/')
json "\$j->{chain}{prev} eq '$prev3'"
ok $? "... prev is the hash of line 3"
get "${SMALL}api/summary"
json '$j->{records} == 6 && @{$j->{sandboxes}} == 2 && $j->{sandboxes}[1]{sandbox} eq "demo" &&
    $j->{sandboxes}[1]{exfil} == 1 && $j->{sandboxes}[1]{denied}[0]{host} eq "evil.example" &&
    $j->{sandboxes}[1]{denied}[0]{count} == 2'
ok $? "summary: per sandbox, denied hosts, exfil"
"$AIRLOCK" audit summary --json "$small" >"$T/sum.json"
perl -MJSON::PP -e 'local $/; open(my $f, "<", $ARGV[0]) or exit 1;
    my $c = decode_json(<$f>); my $j = decode_json(<STDIN>);
    my ($d) = grep { $_->{sandbox} eq "demo" } @{$j->{sandboxes}};
    my %r = map { $_->{reason} => $_->{count} } @{$d->{reasons}};
    exit !(join(",", map { "$_=$r{$_}" } sort keys %r) eq
        join(",", map { "$_=$c->{sandboxes}{demo}{reasons}{$_}" } sort keys %{$c->{sandboxes}{demo}{reasons}}))' \
    "$T/sum.json" <"$T/body"
ok $? "... its counts by reason are audit summary's"
get "${SMALL}api/summary?sandbox=ci"
json '@{$j->{sandboxes}} == 1 && $j->{sandboxes}[0]{sandbox} eq "ci"'
ok $? "summary of one sandbox"
get "${SMALL}api/tail?after=0&wait=0&decision=deny"
json '@{$j->{items}} == 4 && $j->{last} == 6 && !$j->{more}'
ok $? "tail after 0: the 4 denials at once, last 6"
get "${SMALL}api/tail?after=2&limit=1&decision=deny"
json '@{$j->{items}} == 1 && $j->{items}[0]{n} == 3 && $j->{last} == 3 && $j->{more}'
ok $? "tail with limit 1: one, and more"
get "${SMALL}api/tail?after=6&wait=0"
json '@{$j->{items}} == 0 && $j->{last} == 6'
ok $? "tail after the end, wait 0: none at once"
get "${SMALL}api/tail?after=1000&wait=20"
json '@{$j->{items}} == 0 && $j->{last} == 6'
ok $? "tail after a record the log does not have (read again shorter): answered, last 6"
# A long poll, woken by an append: once the status counts it waiting, two records
# are appended, the first not for it (a sandbox it does not ask for).
curl -s -H "Authorization: Bearer ${TOK[$SMALL]}" -o "$T/tail.json" "${SMALL}api/tail?after=6&wait=20&sandbox=late" &
cpid=$!
waiting
ok $? "a tail request with nothing to answer waits (status: 1 waiting)"
echo 'ts=2026-12-01T10:01:00.000Z sandbox=other event=connect dst=a.test:443 decision=allow' |
    "$GEN" "$small" >/dev/null
echo 'ts=2026-12-01T10:01:01.000Z sandbox=late event=connect dst=b.test:443 decision=allow' |
    "$GEN" "$small" >/dev/null
wait "$cpid"
cp "$T/tail.json" "$T/body"
json '@{$j->{items}} == 1 && $j->{items}[0]{n} == 8 && $j->{items}[0]{record}{sandbox} eq "late" &&
    $j->{last} == 8'
ok $? "a waiting tail request is answered by the record appended for it ($(head -c 120 "$T/body"))"
get "${SMALL}api/status"
json '$j->{records} == 8 && $j->{verify}{state} eq "ok" && $j->{rereads} == 0'
ok $? "the appended records were indexed on their own, chain ok (no rereading)"
# Appended, a line that breaks the chain: the view says so.
sed -n 2p "$small" >>"$small"
for i in $(seq 100); do
	get "${SMALL}api/status"
	json '$j->{records} == 9' && break
	sleep 0.1
done
json '$j->{verify}{state} eq "tampered" && $j->{verify}{line} == 9 &&
    $j->{verify}{why} =~ /seq 2 after seq 8/'
ok $? "a copied line appended: tampered at line 9 ($(head -c 300 "$T/body"))"
"$AIRLOCK" audit verify "$small" >"$T/out"
grep -q "$small:9: seq 2 after seq 8" "$T/out"
ok $? "... where audit verify says it is"
get "${SMALL}api/record?n=9"
json '!$j->{verified} && $j->{chain}{seq} == 2 && !$j->{chain}{links}'
ok $? "... record 9: not verified, its prev does not link to record 8"
curl -s -H "Authorization: Bearer ${TOK[$SMALL]}" -o "$T/tail2.json" -w '%{http_code}' "${SMALL}api/tail?after=9&wait=20" >"$T/tail2.code" &
cpid=$!
waiting
stop "$SMALL_PID"
is "$rc" 0 "SIGTERM, with a tail request waiting: exit 0"
wait "$cpid"
is "$(cat "$T/tail2.code")" 503 "... the waiting request is answered (503, stopping)"
[ "$rc" = 0 ] || sed "s/^/# small: /" "$T/small.err" | tail -20

# Read-only: the views wrote nothing (the test itself appended 3 lines above).
head -n 6 "$small" | sha256sum >"$T/sum1"
is "$(cut -d' ' -f1 "$T/sum1")" "${sum0%% *}" "the served log's first 6 lines are as written"
! ls "$T" | grep -q '^small\.jsonl.'
ok $? "no file beside it (an index, a lock, a copy)"

# A tampered file at start: the exit is still 0 (a view of it), the status says where.
cp "$small" "$T/t.jsonl"
sed -i '4s/"secret":"github_token"/"secret":"github_tokeN"/' "$T/t.jsonl"
serve tampered --listen 127.0.0.1:0 "$T/t.jsonl"
grep -q "chain TAMPERED at $T/t.jsonl:4: hash mismatch" "$T/tampered.err"
ok $? "a tampered log: said at start ($(cat "$T/tampered.err"))"
get "${URL}api/status"
json '$j->{verify}{state} eq "tampered" && $j->{verify}{line} == 4 && $j->{verify}{n} == 4'
ok $? "... and in the status: line 4"
stop "$PID"

# --- in a browser -------------------------------------------------------------------
CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
BROWSER=$top/tests/browser
browser_skip() {
	skip "$1" 1
	done_testing
}
[ -n "$CHROMIUM" ] || browser_skip "no chromium (make deps installs it)"
command -v node >/dev/null && command -v npm >/dev/null ||
    browser_skip "no node and npm (make deps installs them)"
# playwright-core, from the committed lock file, into tests/browser/node_modules; once
# (the lock's copy there says so), under a lock, so that two runs do not clash.
(
	flock 9
	if ! cmp -s "$BROWSER/package-lock.json" "$BROWSER/node_modules/.airlock-lock"; then
		cd "$BROWSER" && npm ci --ignore-scripts --no-audit --no-fund \
		    >"$T/npm.log" 2>&1 &&
		    cp package-lock.json node_modules/.airlock-lock
	fi
) 9>"$BROWSER/.npm-lock"
if [ ! -f "$BROWSER/node_modules/.airlock-lock" ]; then
	sed 's/^/# npm: /' "$T/npm.log" 2>/dev/null | tail -5
	if [ "${CI:-}" = true ]; then
		fail "npm ci installs playwright-core (tests/browser/package-lock.json)"
		done_testing
	fi
	browser_skip "npm ci failed (no npm registry?)"
fi
pass "playwright-core installed from tests/browser/package-lock.json"

# The page's script builds the document from text only (a static check beside the
# browser's; the pattern is checked against a copy with one such call added).
pat='\.(inner|outer)HTML|insertAdjacentHTML[[:space:]]*\(|document\.write|(^|[^A-Za-z_.])eval[[:space:]]*\(|Function[[:space:]]*\(|setAttribute\([^)]*["'"'"']on'
# (Comment lines aside: the file's header names what it never calls.)
grep -nE "$pat" "$top/web/app.js" | grep -vE '^[0-9]+:[[:space:]]*(\*|//|/\*)' >"$T/grep"
[ ! -s "$T/grep" ]
ok $? "web/app.js has no innerHTML, insertAdjacentHTML, document.write, eval $(cat "$T/grep")"
{ cat "$top/web/app.js"; echo '		x.innerHTML = y;'; } | grep -nE "$pat" |
    grep -vqE '^[0-9]+:[[:space:]]*(\*|//|/\*)'
ok $? "... (positive control: the pattern finds an innerHTML added)"
! grep -nE '<script>|<script [^>]*>[^<]|[[:space:]]on[a-z]+=|[[:space:]]style=' "$top/web/index.html" >"$T/grep"
ok $? "web/index.html has no inline script, handler or style $(cat "$T/grep")"

N=${AIRLOCK_SERVE_RECORDS:-100000}
TLINE=$((N - 50))
perl "$BROWSER/audit_spec.pl" "$N" "$T/expect" >"$T/spec100k"
"$GEN" "$T/big.jsonl" <"$T/spec100k" >/dev/null
ok $? "a log of $N records, written by audit_gen"
"$AIRLOCK" audit verify "$T/big.jsonl" >"$T/out"
ok $? "... it verifies ($(cat "$T/out" | cut -c1-90))"
cp "$T/big.jsonl" "$T/bigt.jsonl"
sed -i "${TLINE}s/\"ts\":\"2026-12-/\"ts\":\"2026-11-/" "$T/bigt.jsonl"
"$AIRLOCK" audit verify "$T/bigt.jsonl" >"$T/out"
grep -q ":$TLINE: hash mismatch" "$T/out"
ok $? "a copy with line $TLINE edited: audit verify says line $TLINE"
serve big --listen 127.0.0.1:0 "$T/big.jsonl" || { fail "the view of $N records starts"; done_testing; }
MAIN="$URL#token=${TOK[$URL]}"
BIG_PID=$PID
diag "$(cat "$T/big.err")"
serve bigt --listen 127.0.0.1:0 "$T/bigt.jsonl" || { fail "the tampered view starts"; done_testing; }
TAMPERED="$URL#token=${TOK[$URL]}"
BIGT_PID=$PID
printf '%s\n' \
    'ts=2026-12-03T00:00:00.000Z sandbox=demo event=connect dst=tail.test:443 decision=allow rule=r' \
    'ts=2026-12-03T00:00:01.000Z sandbox=ci event=deny dst=tail.test:443 decision=deny reason=name_not_allowed' \
    'ts=2026-12-03T00:00:02.000Z sandbox=build event=connect dst=tail.test:443 decision=allow rule=r' \
    >"$T/tailspec"
rm -rf "$ART"
mkdir -p "$ART"
SHOT=""
[ "${AIRLOCK_UPDATE_SCREENSHOT:-0}" = 1 ] && SHOT=$top/docs/audit-serve.png
CHROMIUM=$CHROMIUM MAIN=$MAIN TAMPERED=$TAMPERED LOG=$T/big.jsonl EXPECT=$T/expect \
    TLINE=$TLINE ART=$ART GEN=$GEN TAILSPEC=$T/tailspec SHOT=$SHOT \
    NODE_PATH=$BROWSER/node_modules timeout 600 node "$BROWSER/audit_serve.js" \
    >"$T/browser.out" 2>"$T/browser.err"
brc=$?
while IFS=$'\t' read -r kind text; do
	case $kind in
	PASS) pass "$text" ;;
	FAIL) fail "$text" ;;
	NOTE) diag "$text" ;;
	*) diag "browser: $kind $text" ;;
	esac
done <"$T/browser.out"
is "$brc" 0 "the browser run ended well"
[ "$brc" = 0 ] || sed 's/^/# browser stderr: /' "$T/browser.err" | tail -20
for s in 01-loaded 02-filtered 03-record 04-hostile 05-summary 06-tampered 07-tail; do
	[ -s "$ART/$s.png" ] && [ "$(head -c 8 "$ART/$s.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]
	ok $? "screenshot $ART/$s.png (a PNG)"
done
for v in big:$BIG_PID bigt:$BIGT_PID; do
	stop "${v#*:}"
	is "$rc" 0 "the view of ${v%%:*}.jsonl stops on SIGTERM with exit 0 (under SAN=1: no leak, no error)"
	[ "$rc" = 0 ] || sed "s/^/# ${v%%:*}: /" "$T/${v%%:*}.err" | tail -20
done
done_testing
