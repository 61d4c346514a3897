#!/usr/bin/perl
# tests/browser/audit_spec.pl: the records of the browser test's log, as the spec
# lines of tests/tools/audit_gen (which writes them through the real writer, so the
# log verifies).  Deterministic: record i (1-based, = its seq and its line) is a
# function of i alone.
#
#	audit_spec.pl N EXPECT >spec
#
# N records over three sandboxes: allowed requests and connections, DNS answers and
# refusals, denials of several reasons, exfil records; among them the records of
# one denied host (paste.attacker.test: connection denials and refused DNS
# queries for it) and a few records whose host, path, SNI and target hold markup
# and script (the hostile records).  EXPECT gets, one per line:
#	denied_host HOST
#	denied N1 N2 ...	the records whose host is HOST (all denials)
#	hostile N1 N2 ...	the hostile records
use strict;
use warnings;

my ($n, $expect) = @ARGV;
die "usage: audit_spec.pl N EXPECT\n" unless defined $expect && $n =~ /^\d+$/;
my $host = 'paste.attacker.test';
my @sandboxes = qw(demo ci build);
my @allowed = qw(api.github.com pypi.org files.pythonhosted.org registry.npmjs.test
    objects.githubusercontent.com);
my @reasons = qw(name_not_allowed sni_mismatch path_not_allowed method_not_allowed
    unmapped_address);
my (@denied, @hostile);
# Markup a VM could send as a host, path, SNI or target; %XX as audit_gen decodes.
sub enc {
	my ($s) = @_;
	$s =~ s/([^A-Za-z0-9._\/:-])/sprintf("%%%02x", ord($1))/ge;
	return $s;
}
my @payloads = (
	[ 'deny', 'sni', '<img src=x onerror="window.__pwned=1">' ],
	[ 'request', 'path', '/<script>window.__pwned=2</script>' ],
	[ 'request', 'host', '<img src=x onerror=window.__pwned=3>' ],
	[ 'request', 'target', 'http://x/"><svg onload=window.__pwned=4>' ],
);
my $base = 1796083200;		# 2026-12-01T00:00:00Z

for my $i (1 .. $n) {
	my $ms = $i * 800;
	my @t = gmtime($base + int($ms / 1000));
	my $ts = sprintf("%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", $t[5] + 1900, $t[4] + 1,
	    $t[3], $t[2], $t[1], $t[0], $ms % 1000);
	my $sb = $sandboxes[$i % 3];
	my $src = "src=10.233.0." . (2 + $i % 3) . ":" . (40000 + $i % 20000);
	my $line;
	if ($i % 2700 == 1300) {
		$line = "event=deny $src dst=$host:443 decision=deny " .
		    "reason=name_not_allowed x.proto=tls x.sni=$host";
		push @denied, $i;
	} elsif ($i % 2700 == 1301) {
		$line = "event=dns src=10.233.0.2 decision=deny reason=name_not_allowed " .
		    "x.qname=$host x.qtype=A x.outcome=nxdomain";
		push @denied, $i;
	} elsif ($i % 25000 == 777) {
		my $p = $payloads[int($i / 25000) % @payloads];
		my ($ev, $field, $val) = @$p;
		if ($ev eq 'deny') {
			$line = "event=deny $src dst=xss.test:443 decision=deny " .
			    "reason=sni_mismatch x.proto=tls x.sni=" . enc($val);
		} else {
			my $path = $field eq 'path' ? enc($val) : '/';
			$line = "event=request $src dst=xss.test:443 tls=inspect " .
			    "method=GET path=$path status=421 decision=deny " .
			    "rule=xss reason=host_mismatch";
			$line .= " x.$field=" . enc($val) if $field ne 'path';
		}
		push @hostile, $i;
	} elsif ($i % 97 == 5) {
		$line = "event=exfil $src dst=paste.example.net:443 tls=inspect " .
		    "method=POST path=/api/paste decision=deny rule=paste " .
		    "reason=placeholder_in_body x.secret=github_token x.where=body";
	} elsif ($i % 11 == 3) {
		my $r = $reasons[$i % @reasons];
		$line = "event=deny $src dst=h" . ($i % 8) . ".denied.test:443 " .
		    "decision=deny reason=$r";
	} elsif ($i % 7 == 1) {
		my $h = $allowed[$i % @allowed];
		$line = "event=dns src=10.233.0.2 decision=allow rule=r$i x.qname=$h " .
		    "x.qtype=A x.outcome=answer x.answer=198.18.0." . (1 + $i % 200);
	} elsif ($i % 5 == 2) {
		my $h = $allowed[$i % @allowed];
		$line = "event=connect $src dst=$h:443 tls=splice decision=allow " .
		    "rule=splice bytes_up=" . ($i % 9000) . " bytes_down=" . ($i % 70000) .
		    " ms=" . ($i % 300);
	} else {
		my $h = $allowed[$i % @allowed];
		$line = "event=request $src dst=$h:443 tls=inspect method=GET " .
		    "path=/repos/acme/app/" . ($i % 1000) . " status=200 decision=allow " .
		    "rule=github-api inject=github_token bytes_up=512 bytes_down=" .
		    (1000 + $i % 5000) . " ms=" . ($i % 90);
	}
	print "ts=$ts sandbox=$sb $line\n";
}
open(my $fh, '>', $expect) or die "$expect: $!\n";
print $fh "denied_host $host\n", "denied @denied\n", "hostile @hostile\n";
close($fh) or die "$expect: $!\n";
