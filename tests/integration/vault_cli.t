#!/bin/sh
# tests/integration/vault_cli.t: `airlock vault put|ls|rm|rotate-key` in a temporary
# state directory: the commands, their refusals and messages, file modes, and a
# canary value that must appear in no output, no message and no file in clear.
# No privileges.

. "$(dirname "$0")/../lib/cli.sh"
CANARY=CANARY-3b1f0e77-never-print-me-9d2c

if [ ! -x "$AIRLOCK" ]; then
	echo "1..0 # SKIP no airlock binary at $AIRLOCK"
	exit 0
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
echo '{}' >"$tmp/airlock.json"
export AIRLOCK_CONFIG="$tmp/airlock.json"
export AIRLOCK_STATE_DIR="$tmp/state"
: >"$tmp/all"

mode() {
	stat -c %a "$1"
}

run vault ls
expect_rc 2 "ls without a vault"
expect_err "vault.key is missing"

printf '%s\n' "$CANARY" >"$tmp/in"
run vault put canary --host api.example.com <"$tmp/in"
expect_rc 0 "put canary (value on stdin)"
grep -q '^stored secret canary, placeholder AIRLOCK_PLACEHOLDER_CANARY_[0-9a-f]\{16\}$' "$tmp/out"
ok $? "put prints the default placeholder"
ph=$(sed 's/.*placeholder //' "$tmp/out")
[ "$(mode "$tmp/state/vault.key")" = 600 ] && [ "$(mode "$tmp/state/vault.db")" = 600 ]
ok $? "vault.key and vault.db are 0600"
[ "$(mode "$tmp/state")" = 700 ]
ok $? "the state directory it made is 0700"

printf 'ghp_abcdefghijklmnop0123' >"$tmp/in"
run vault put github_token --host api.github.com \
    --host '*.example.org' --placeholder ghp_AIRLOCK_00000000000000000000 <"$tmp/in"
expect_rc 0 "put with two hosts and --placeholder"

run vault ls
expect_rc 0 "ls"
grep -q '^github_token  *api.github.com,\*.example.org  *ghp_AIRLOCK_00000000000000000000 ' "$tmp/out"
ok $? "ls shows name, hosts, placeholder"
grep -qF "$ph" "$tmp/out"
ok $? "ls shows the default placeholder"
run vault ls --json
expect_rc 0 "ls --json"
if command -v jq >/dev/null 2>&1; then
	[ "$(jq -r '.[0].name + " " + .[0].hosts[0] + " " + (.[0].created|tostring)' "$tmp/out" |
	    grep -c '^canary api.example.com 20[0-9][0-9]-')" = 1 ]
	ok $? "ls --json: name, hosts, created"
	[ "$(jq -r '.[1].hosts | length' "$tmp/out")" = 2 ]
	ok $? "ls --json: both hosts"
else
	grep -q '"placeholder": "ghp_AIRLOCK_00000000000000000000"' "$tmp/out"
	ok $? "ls --json has the placeholder"
	ok 0 "# SKIP no jq"
fi
run --json vault ls
expect_rc 0 "--json before the command"
grep -q '"name": "github_token"' "$tmp/out"
ok $? "... prints JSON"

# Refusals.
printf '' >"$tmp/in"
run vault put empty --host a.example.com <"$tmp/in"
expect_rc 2 "empty value refused"
expect_err "empty value"
printf '\n' >"$tmp/in"
run vault put empty --host a.example.com <"$tmp/in"
expect_rc 2 "a lone newline is an empty value"
head -c 65537 /dev/zero | tr '\0' a >"$tmp/in"
run vault put big --host a.example.com <"$tmp/in"
expect_rc 2 "65537-byte value refused"
expect_err "longer than 65536"
{ head -c 65536 /dev/zero | tr '\0' a; echo; } >"$tmp/in"
run vault put big --host a.example.com <"$tmp/in"
expect_rc 0 "65536 bytes + newline accepted"
for v in 'two\nlines' 'cr\rhere' 'nul\0byte' 'trailing-crlf\r\n\n'; do
	printf "$v" >"$tmp/in"
	run vault put ctl --host a.example.com <"$tmp/in"
	expect_rc 2 "a value with CR, LF or NUL refused ($v)"
	expect_err "contains CR, LF or NUL"
done
printf 'one-line-value\r\n' >"$tmp/in"
run vault put ctl --host a.example.com <"$tmp/in"
expect_rc 0 "control: one trailing CRLF is stripped, the value accepted"
run vault rm ctl
expect_rc 0 "... and removed again"
printf 'x-ghp_AIRLOCK_11111111111111111111-x' >"$tmp/in"
run vault put t2 --host a.example.com \
    --placeholder ghp_AIRLOCK_11111111111111111111 <"$tmp/in"
expect_rc 2 "value containing its placeholder refused"
expect_err "contain one another"
printf 'abc' >"$tmp/in"
run vault put t3 --host a.example.com --placeholder short <"$tmp/in"
expect_rc 2 "short placeholder refused"
expect_err "16-128 printable"
printf 'abc' >"$tmp/in"
run vault put t3 --host a.example.com --placeholder 'with space 0123456789' <"$tmp/in"
expect_rc 2 "placeholder with a space refused"
printf 'abcdef' >"$tmp/in"
run vault put t4 --host a.example.com --placeholder ghp_AIRLOCK_00000000000000000000 <"$tmp/in"
expect_rc 2 "placeholder of another secret refused"
expect_err "overlaps the placeholder of secret 'github_token'"
printf 'abc' >"$tmp/in"
run vault put t5 --host '*.com' <"$tmp/in"
expect_rc 2 "host *.com refused"
expect_err "host '*.com'"
printf 'abc' >"$tmp/in"
run vault put t5 --host 192.168.1.1 <"$tmp/in"
expect_rc 2 "IP host refused"
printf 'abc' >"$tmp/in"
run vault put t5 <"$tmp/in"
expect_rc 2 "put without --host refused"
printf 'abc' >"$tmp/in"
run vault put 'bad/name' --host a.example.com <"$tmp/in"
expect_rc 2 "bad name refused"
run vault frobnicate
expect_rc 2 "unknown subcommand"
run vault rm nosuch
expect_rc 1 "rm of an unknown secret"
expect_err "no secret named 'nosuch'"

# Replacing a value keeps the placeholder.
printf 'new-canary-value-2' >"$tmp/in"
run vault put github_token --host api.github.com <"$tmp/in"
expect_rc 0 "put over an existing secret"
grep -q 'placeholder ghp_AIRLOCK_00000000000000000000$' "$tmp/out"
ok $? "... keeps its placeholder"

# Permissions and damage.
chmod 0644 "$tmp/state/vault.key"
run vault ls
expect_rc 2 "loose vault.key refused"
expect_err "vault.key: mode 0644, must be 0600"
chmod 0600 "$tmp/state/vault.key"
cp "$tmp/state/vault.db" "$tmp/db.orig"
head -c 60 "$tmp/db.orig" >"$tmp/state/vault.db"
run vault ls
expect_rc 2 "truncated vault.db refused"
expect_err "vault.db: truncated"
{ cat "$tmp/db.orig"; printf 'x'; } >"$tmp/state/vault.db"
run vault ls
expect_rc 2 "trailing byte refused"
expect_err "trailing bytes"
# Flip one ciphertext byte of the first entry (canary): right after its tag area.
size=$(stat -c %s "$tmp/db.orig")
off=$(grep -obaF "$ph" "$tmp/db.orig" | head -1 | cut -d: -f1)
off=$((off + ${#ph} + 2 + 2 + 15 + 16 + 12 + 4 + 5))
# (XOR 0x01: always a different byte; a character map left some bytes as they were)
perl -e 'local $/; my $d = <STDIN>; substr($d, $ARGV[0], 1) ^= "\x01"; print $d' \
    "$off" <"$tmp/db.orig" >"$tmp/state/vault.db"
run vault ls
expect_rc 2 "tampered entry refused"
expect_err "vault.db: entry 'canary' failed authentication (tampered?)"
cp "$tmp/db.orig" "$tmp/state/vault.db"
cp "$tmp/state/vault.key" "$tmp/key.orig"
head -c 32 /dev/urandom >"$tmp/state/vault.key"
run vault ls
expect_rc 2 "another key refused"
expect_err "wrong vault key"
cp "$tmp/key.orig" "$tmp/state/vault.key"

run vault rotate-key
expect_rc 0 "rotate-key"
grep -q 're-encrypted 3 secrets' "$tmp/out"
ok $? "... re-encrypted all three"
cmp -s "$tmp/key.orig" "$tmp/state/vault.key"
[ $? -eq 1 ]
ok $? "... the key changed"
[ "$(mode "$tmp/state/vault.key")" = 600 ] && [ ! -e "$tmp/state/vault.key.new" ]
ok $? "... new key 0600, no vault.key.new left"
run vault ls
expect_rc 0 "ls after rotate-key"
cp "$tmp/key.orig" "$tmp/state/vault.key.bak"
run vault rm canary
expect_rc 0 "rm canary"
run vault ls
! grep -q '^canary ' "$tmp/out"
ok $? "canary gone from ls"
printf '%s' "$CANARY" >"$tmp/in"
run vault put canary --host api.example.com <"$tmp/in"
expect_rc 0 "put canary again"
ph=$(sed 's/.*placeholder //' "$tmp/out")

# The canary's value: nowhere in clear.
! grep -qF "$CANARY" "$tmp/all"
ok $? "the canary value never appeared on stdout or stderr"
! grep -rqaF "$CANARY" "$tmp/state"
ok $? "nor in any file of the state directory (vault.db included)"
grep -qaF "$ph" "$tmp/state/vault.db"
ok $? "(while its placeholder is there: the grep can find things)"

done_testing
