#!/bin/bash
# tests/integration/dns_daemon.t: policy DNS of a running airlockd, queried with dig
# from sandbox guest addresses on loopback (127.0.0.2 = sb1, 127.0.0.4 = sb2; as root
# inside the daemon's own network namespace, see tests/lib/daemon.sh).  An allowed
# name gets a stable address in 198.18.0.0/15 over UDP and TCP; a denied name
# NXDOMAIN, audited; TXT refused; AAAA and HTTPS empty; an unknown source refused;
# repeats aggregated; a flood rate limited and summarised without hurting another
# sandbox; TCP framing and client limits; reload changes the answers.  Each sandbox
# has a DNS state of its own (bucket, budget, pending counts): another's flood takes
# nothing from it, and what a sandbox removed or replaced by a reload was still
# counting is written as it goes, every query once.
set -u
. "$(dirname "$0")/../lib/daemon.sh"

if ! command -v dig >/dev/null 2>&1; then
	echo "1..0 # SKIP dig not installed (bind9-dnsutils)"
	exit 0
fi
DNS_PORT=$((PORT_BASE + 1))

# Runs a command where the daemon's sockets are.
in_ns() {
	if [ "$IS_ROOT" = 1 ]; then
		nsenter -t "$DPID" -n "$@"
	else
		"$@"
	fi
}
# q SRC ARGS...: dig from SRC; the whole output.
q() {
	local src=$1
	shift
	in_ns dig +tries=1 +time=2 -b "$src" -p "$DNS_PORT" @127.0.0.1 "$@" 2>&1
}
status_of() {
	printf '%s\n' "$1" | sed -n 's/.*status: \([A-Z]*\),.*/\1/p'
}
ancount_of() {
	printf '%s\n' "$1" | sed -n 's/.*ANSWER: \([0-9]*\),.*/\1/p'
}
audit_lines() {	# audit_lines REGEX: how many audit lines match
	grep -Ec -- "$1" "$T/audit.jsonl"
}

dt_config
cat >"$T/p1.json" <<-EOF
{"policy":"p1","rules":[{"id":"r1","host":"example.com","ports":[443]},
 {"id":"w","host":"*.example.org"}]}
EOF
dt_record sb1 127.0.0.2 "$T/p1.json"
dt_record sb2 127.0.0.4 "$T/p1.json"
if ! dt_start; then
	ok 1 "airlockd starts"
	done_testing
fi
ok 0 "airlockd starts"

# --- answers over UDP ---
out=$(q 127.0.0.2 example.com A)
is "$(status_of "$out")" NOERROR "A example.com: NOERROR"
a1=$(q 127.0.0.2 +short example.com A)
like "$a1" '^198\.1[89]\.[0-9]+\.[0-9]+$' "A example.com: a mapped address ($a1)"
a2=$(q 127.0.0.2 +short EXAMPLE.com. A)
is "$a2" "$a1" "same name again (other case): same address"
like "$(q 127.0.0.2 example.com A)" 'example\.com\.[[:space:]]+60[[:space:]]+IN[[:space:]]+A' \
    "answer has TTL 60"
a3=$(q 127.0.0.2 +short api.example.org A)
like "$a3" '^198\.1[89]\.' "wildcard rule: a mapped address"
ok "$([ "$a3" != "$a1" ]; echo $?)" "another name, another address"

out=$(q 127.0.0.2 evil.com A)
is "$(status_of "$out")" NXDOMAIN "A evil.com: NXDOMAIN"
out=$(q 127.0.0.2 example.org A)
is "$(status_of "$out")" NXDOMAIN "wildcard's own suffix: NXDOMAIN"
out=$(q 127.0.0.2 example.com TXT)
is "$(status_of "$out")" REFUSED "TXT: REFUSED"
out=$(q 127.0.0.2 example.com MX)
is "$(status_of "$out")" REFUSED "MX: REFUSED"
out=$(q 127.0.0.2 example.com AAAA)
is "$(status_of "$out") $(ancount_of "$out")" "NOERROR 0" "AAAA: NOERROR, no answer"
out=$(q 127.0.0.2 example.com TYPE65)
is "$(status_of "$out") $(ancount_of "$out")" "NOERROR 0" "HTTPS: NOERROR, no answer"
out=$(q 127.0.0.2 example.com TYPE64)
is "$(status_of "$out") $(ancount_of "$out")" "NOERROR 0" "SVCB: NOERROR, no answer"
out=$(q 127.0.0.3 example.com A)
is "$(status_of "$out")" REFUSED "a source that is no sandbox: REFUSED"
out=$(q 127.0.0.2 +noedns example.com A)
is "$(status_of "$out") $(ancount_of "$out")" "NOERROR 1" "without EDNS too"

# --- TCP ---
is "$(q 127.0.0.2 +tcp +short example.com A)" "$a1" "TCP: same address"
out=$(q 127.0.0.2 +tcp evil.com A)
is "$(status_of "$out")" NXDOMAIN "TCP: denied name NXDOMAIN"
out=$(q 127.0.0.2 +tcp +keepopen +short example.com A api.example.org A example.com A)
is "$(printf '%s\n' "$out" | tr '\n' ' ')" "$a1 $a3 $a1 " \
    "TCP: three queries on one connection"
# Framing: a zero length or an oversized message closes the connection at once.
tcp_probe() {	# tcp_probe SRC PERL-BYTES: prints what the server did
	in_ns perl -MIO::Socket::INET -e '
	    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1", PeerPort => $ARGV[0],
		LocalAddr => $ARGV[1], Proto => "tcp") or do { print "CONNECT\n"; exit };
	    print $s eval $ARGV[2]; $s->flush;
	    $SIG{ALRM} = sub { print "OPEN\n"; exit }; alarm 3;
	    my $n = sysread($s, my $buf, 1); print defined $n && $n == 0 ? "EOF\n" :
		defined $n ? "DATA\n" : "ERR\n";' "$DNS_PORT" "$1" "$2"
}
is "$(tcp_probe 127.0.0.2 '"\0\0"')" EOF "TCP: length 0 closes the connection"
is "$(tcp_probe 127.0.0.2 '"\x10\x00" . ("x" x 10)')" EOF \
    "TCP: a 4096-byte length closes the connection"
# Nine clients from one sandbox: the ninth is closed at once.
out=$(in_ns perl -MIO::Socket::INET -e '
    my @s;
    for my $i (1..8) { push @s, IO::Socket::INET->new(PeerAddr => "127.0.0.1",
	PeerPort => $ARGV[0], LocalAddr => "127.0.0.2", Proto => "tcp") or die }
    select(undef, undef, undef, 0.3);
    my $x = IO::Socket::INET->new(PeerAddr => "127.0.0.1", PeerPort => $ARGV[0],
	LocalAddr => "127.0.0.2", Proto => "tcp") or die;
    $SIG{ALRM} = sub { print "OPEN\n"; exit }; alarm 3;
    my $n = sysread($x, my $b, 1); print defined $n && $n == 0 ? "EOF\n" : "ERR\n";
    ' "$DNS_PORT")
is "$out" EOF "TCP: ninth concurrent client of a sandbox is closed"
is "$(q 127.0.0.2 +tcp +short example.com A)" "$a1" \
    "TCP: served again once those clients are gone"

# --- audit ---
is "$(audit_lines '"event":"dns".*"decision":"deny".*"reason":"name_not_allowed".*"qname":"evil.com","qtype":"A","outcome":"nxdomain"')" 1 \
    "denied name: one dns deny record (the repeat over TCP is counted)"
is "$(audit_lines '"sandbox":"sb1".*"event":"dns".*"qname":"example.com","qtype":"TXT","outcome":"refused"')" 1 \
    "TXT: audited as refused"
is "$(audit_lines '"event":"dns","src":"127.0.0.3".*"reason":"unknown_sandbox"')" 1 \
    "unknown source: audited without a sandbox"
for i in 1 2 3 4 5; do q 127.0.0.2 +short rep.example.org A >/dev/null; done
is "$(audit_lines '"qname":"rep.example.org"')" 1 "five repeats: one record so far"

# --- a flood from sb2: rate limited, summarised, sb1 unaffected ---
flood=$(in_ns perl -MIO::Socket::INET -MIO::Select -e '
    my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1", PeerPort => $ARGV[0],
	LocalAddr => "127.0.0.4", Proto => "udp") or die;
    my $sel = IO::Select->new($s); my $got = 0;
    for my $i (1..400) {
	my $name = join "", map { chr(length $_) . $_ } ("f$i", "example", "org");
	print $s pack("nnnnnn", $i, 0x0100, 1, 0, 0, 0) . $name . "\0" . pack("nn", 1, 1);
	while ($sel->can_read(0)) { $s->recv(my $b, 2048); $got++ }
    }
    while ($sel->can_read(1)) { $s->recv(my $b, 2048); $got++ }
    print "$got\n";' "$DNS_PORT")
diag "flood: $flood of 400 answered"
ok "$([ "$flood" -ge 150 ] && [ "$flood" -le 320 ]; echo $?)" \
    "flood of 400 queries: about the burst of 200 answered ($flood)"
is "$(q 127.0.0.2 +short example.com A)" "$a1" "another sandbox is still answered"
nrec=$(audit_lines '"qname":"f[0-9]+\.example\.org"')
ok "$([ "$nrec" -le 32 ]; echo $?)" "flood: at most 32 records with a name ($nrec)"

# --- reload: the policy no longer names example.com ---
printf '{"policy":"p1","rules":[{"id":"w","host":"*.example.org"}]}\n' >"$T/p1.json"
"$AIRLOCK" --config "$CFG" reload >/dev/null 2>&1
ok $? "airlock reload"
out=$(q 127.0.0.2 example.com A)
is "$(status_of "$out")" NXDOMAIN "after reload: example.com NXDOMAIN"
is "$(q 127.0.0.2 +short api.example.org A)" "$a3" \
    "after reload: a kept name keeps its address"

# --- each sandbox its own DNS state: isolation, and nothing lost when one goes ---
# dns_accounted SANDBOX [REGEX]: the queries its dns records account for (a record
# with "count":N stands for N queries, one without for its own).
dns_accounted() {
	perl -e 'my ($sb, $re) = (shift, shift); my $n = 0;
	    while (<>) {
		next unless /"sandbox":"\Q$sb\E".*"event":"dns"/ && /$re/;
		$n += /"count":(\d+)/ ? $1 : 1;
	    }
	    print "$n\n";' "$1" "${2:-.}" "$T/audit.jsonl"
}
dns_queries_of() {	# dns_queries_of SANDBOX: the daemon's own count (stats)
	"$AIRLOCK" --config "$CFG" stats --json |
	    perl -ne 'print $1 if /"name":"\Q'"$1"'\E"[^}]*"dns_queries":(\d+)/'
}
printf '{"policy":"p3","rules":[{"id":"w","host":"*.example.org"}]}\n' >"$T/p3.json"
dt_record sb3 127.0.0.5 "$T/p3.json"
dt_record sb4 127.0.0.6 "$T/p3.json"
"$AIRLOCK" --config "$CFG" reload >/dev/null 2>&1
ok $? "reload: sb3 and sb4 added"
for i in 1 2 3 4 5; do q 127.0.0.5 +short rep3.example.org A >/dev/null; done
for i in 1 2 3; do q 127.0.0.6 +short rep4.example.org A >/dev/null; done
# sb3 spends its whole bucket and budget on new names; once the daemon is through
# them (0.3 s without an answer), sb4 sends a burst of 100 at once: its own bucket
# (200) answers them all where a shared one would have refilled only ~30.
flood3=$(in_ns perl -MIO::Socket::INET -MIO::Select -e '
    sub sock { IO::Socket::INET->new(PeerAddr => "127.0.0.1", PeerPort => $ARGV[0],
	LocalAddr => $_[0], Proto => "udp") or die }
    sub query { my ($id, @l) = @_;
	pack("nnnnnn", $id, 0x0100, 1, 0, 0, 0) .
	    join("", map { chr(length $_) . $_ } @l) . "\0" . pack("nn", 1, 1) }
    my ($s, $t) = (sock("127.0.0.5"), sock("127.0.0.6"));
    my ($got3, $got4) = (0, 0);
    my $sel = IO::Select->new($s);
    for my $i (1..400) {
	print $s query($i, "g$i", "example", "org");
	while ($sel->can_read(0)) { $s->recv(my $b, 2048); $got3++ }
    }
    while ($sel->can_read(0.3)) { $s->recv(my $b, 2048); $got3++ }
    print $t query($_, "burst", "example", "org") for 1..100;
    $sel = IO::Select->new($t);
    while ($sel->can_read(1)) { $t->recv(my $b, 2048); $got4++ }
    print "$got3 $got4\n";' "$DNS_PORT")
got3=${flood3% *}
got4=${flood3#* }
diag "sb3's flood: $got3 of 400 answered; then sb4's burst: $got4 of 100"
ok "$([ "$got3" -ge 150 ] && [ "$got3" -le 320 ]; echo $?)" \
    "sb3's flood is rate limited ($got3 of 400 answered)"
ok "$([ "$got4" -ge 80 ]; echo $?)" \
    "right after sb3's flood: sb4's burst answered from a bucket of its own ($got4 of 100)"
# sb3 used up its budget of names: sb4's new name is still written at once.
like "$(q 127.0.0.6 +short iso.example.org A)" '^198\.1[89]\.' \
    "after sb3's flood: sb4 is answered"
is "$(audit_lines '"sandbox":"sb4".*"event":"dns".*"qname":"iso.example.org"')" 1 \
    "after sb3's flood: sb4's new name written at once (a budget of its own)"
# A reload that takes sb3 out and replaces sb4 (its interface changed): what each
# was still counting is written as it goes, once.
n3=$(dns_queries_of sb3)
n4=$(dns_queries_of sb4)
diag "queries before the reload: sb3 $n3, sb4 $n4"
rm -f "$T/state/sandboxes/sb3.json"
sed -i 's/"veth-sb4"/"veth-sb4b"/' "$T/state/sandboxes/sb4.json"
"$AIRLOCK" --config "$CFG" reload >/dev/null 2>&1
ok $? "reload: sb3 removed, sb4 replaced"
! "$AIRLOCK" --config "$CFG" stats --json | grep -q '"name":"sb3"'
ok $? "sb3 is gone"
is "$(dns_accounted sb3)" "$n3" \
    "sb3 removed: every query it had is in the audit log, once"
is "$(dns_accounted sb3 '"qname":"rep3\.example\.org"')" 5 \
    "sb3 removed: its five repeats accounted for"
like "$(grep -E '"sandbox":"sb3".*"reason":"rate_limited"' "$T/audit.jsonl")" \
    '"outcome":"drop","count":[0-9]+' "sb3 removed: its rate-limited drops written"
is "$(dns_accounted sb4)" "$n4" \
    "sb4 replaced: every query of the old one is in the audit log, once"
# The new sb4 counts afresh, and the window's end writes it (no stop needed).
for i in 1 2 3; do q 127.0.0.6 +short win.example.org A >/dev/null; done
for i in $(seq 220); do
	[ "$(dns_accounted sb4 '"qname":"win\.example\.org"')" = 3 ] && break
	sleep 0.1
done
is "$(dns_accounted sb4 '"qname":"win\.example\.org"')" 3 \
    "new sb4: its repeats written when the window closes"

# The last proxy_dns to go writes what it was counting.
dt_stop
is "$(audit_lines '"qname":"rep.example.org".*"count":4')" 1 \
    "repeats written as one record with count 4"
like "$(grep -E '"sandbox":"sb2".*"reason":"rate_limited"' "$T/audit.jsonl")" \
    '"outcome":"drop","count":[0-9]+' "flood: rate-limited drops summarised with a count"
like "$(grep -E '"sandbox":"sb2".*"aggregate":"sandbox"' "$T/audit.jsonl" | head -1)" \
    '"outcome":"answer","count":[0-9]+' "flood: names past the budget summarised per sandbox"
"$AIRLOCK" audit verify "$T/audit.jsonl" >/dev/null 2>&1
ok $? "audit log verifies"
done_testing
