#!/usr/bin/perl
# bench/report.pl META RESULTS: the Markdown report of one bench/run.sh run.
#
# META: key=value lines (date, machine, versions, idle_KEY, hwm_KEY, unavail_CFG).
# RESULTS: one tab-separated line per wrk run:
#   scenario conns repeat cfg requests bytes duration_us p50_us p99_us errors cpu_ticks
# Every figure in the tables is the median over the repeats.
use strict;
use warnings;

my ($metaf, $resf) = @ARGV;
die "usage: report.pl META RESULTS\n" unless defined $resf;

my %m;
open(my $mh, '<', $metaf) or die "$metaf: $!\n";
while (<$mh>) {
	chomp;
	next unless /^([^=]+)=(.*)$/;
	$m{$1} = $2;
}
close($mh);

my @cfgs = qw(direct splice inspect nginx haproxy squid-bump squid-splice mitm);
my %label = (
	'direct' => 'direct (no proxy)',
	'splice' => '**airlock splice**',
	'inspect' => '**airlock inspect** (+1 injected header)',
	'nginx' => 'nginx TLS re-origination (+1 header)',
	'haproxy' => 'HAProxy TCP (original dst)',
	'squid-bump' => 'Squid ssl-bump (+1 header)',
	'squid-splice' => 'Squid peek+splice',
	'mitm' => 'mitmproxy transparent (+1 header)',
);
my %scen_label = (
	'lat' => 'Latency: one keep-alive connection, 100-byte responses',
	'ka' => 'Keep-alive, 100-byte responses',
	'new' => 'New TLS connection per request (Connection: close), 100 bytes',
	'big' => '1 MiB downloads, keep-alive',
	'h2' => 'HTTP/2 keep-alive (h2load, 4 connections), 100-byte responses',
);
my @scens = qw(lat ka new big h2);

# runs{scen}{conns}{cfg} = [ { rps, p50, p99, mibs, err, cpu } ... ]
my %runs;
my %conns_seen;
open(my $rh, '<', $resf) or die "$resf: $!\n";
while (<$rh>) {
	chomp;
	my ($s, $c, $rep, $cfg, $req, $bytes, $dur, $p50, $p99, $err, $ticks) =
	    split /\t/;
	next unless defined $ticks && $dur > 0;
	my $sec = $dur / 1e6;
	# No request completed (every transfer slower than the run): no latency.
	push @{$runs{$s}{$c}{$cfg}}, {
		rps => $req / $sec,
		p50 => $req > 0 ? $p50 / 1000 : undef,
		p99 => $req > 0 ? $p99 / 1000 : undef,
		mibs => $bytes / $sec / 1048576,
		err => $err,
		cpu => ($req > 0 && $cfg ne 'direct' && $ticks >= 0) ?
		    $ticks * 1e6 / ($m{clk} || 100) / $req : undef,
		req => $req,
	};
	$conns_seen{$c} = 1;
}
close($rh);
my @conns = sort { $a <=> $b } keys %conns_seen;

sub median {
	my @v = sort { $a <=> $b } grep { defined } @_;
	return undef unless @v;
	my $n = @v;
	return $n % 2 ? $v[$n / 2] : ($v[$n / 2 - 1] + $v[$n / 2]) / 2;
}

# med{scen}{conns}{cfg}{field}
my %med;
for my $s (keys %runs) {
	for my $c (keys %{$runs{$s}}) {
		for my $cfg (keys %{$runs{$s}{$c}}) {
			my $r = $runs{$s}{$c}{$cfg};
			for my $f (qw(rps p50 p99 mibs cpu)) {
				$med{$s}{$c}{$cfg}{$f} = median(map { $_->{$f} } @$r);
			}
			my $e = 0;
			my $q = 0;
			$e += $_->{err} for @$r;
			$q += $_->{req} for @$r;
			$med{$s}{$c}{$cfg}{err} = $e;
			$med{$s}{$c}{$cfg}{req} = $q;
			$med{$s}{$c}{$cfg}{n} = scalar @$r;
		}
	}
}

sub fmt {
	my ($v, $d) = @_;
	return '-' unless defined $v;
	return sprintf("%.${d}f", $v);
}
sub ratio {
	my ($a, $b) = @_;
	return undef unless defined $a && defined $b;
	return 9**9**9 if $b == 0 && $a > 0;	# the peer completed nothing
	return undef unless $b > 0;
	return $a / $b;
}
sub get {
	my ($s, $c, $cfg, $f) = @_;
	return undef unless exists $med{$s}{$c}{$cfg};
	return $med{$s}{$c}{$cfg}{$f};
}

my $out = '';
sub p { $out .= join('', @_) . "\n"; }

p('# airlock benchmark', ($m{quick} ? ' (QUICK subset)' : ''));
p();
p("- date: $m{date}");
p("- machine: $m{machine}");
p("- versions: airlock $m{airlock}, nginx $m{nginx}, HAProxy $m{haproxy}, ",
    "Squid $m{squid}, mitmproxy $m{mitmproxy}, wrk $m{wrk}, ",
    (defined $m{h2load} ? "h2load $m{h2load}, " : ''), "OpenSSL $m{openssl}");
p("- method: `make bench` (bench/run.sh): $m{repeats} repeat(s) of $m{seconds} s ",
    "per configuration and scenario, configurations alternating; medians. ",
    "wrk (2 threads), every proxy with one worker, and the origin (nginx, 2 workers) ",
    "share the machine's cores, so requests/s are capped by the whole machine; ",
    "**proxy CPU per request** (utime+stime of the proxy's processes from /proc, ",
    "over the run) is the steadiest figure.");
p("- measured wall time: $m{wall} s");
my @na = grep { exists $m{"unavail_$_"} } @cfgs;
for my $cfg (@na) {
	my $l = $label{$cfg};
	$l =~ s/\*//g;
	p("- $l: ", $m{"unavail_$cfg"});
}
for my $cfg (grep { exists $m{"unavail_h2-$_"} } @cfgs) {
	my $l = $label{$cfg};
	$l =~ s/\*//g;
	p("- $l, HTTP/2: ", $m{"unavail_h2-$cfg"});
}
p();

for my $s (@scens) {
	for my $c (@conns) {
		next unless exists $med{$s}{$c};
		p($s eq 'h2' ? "## $scen_label{$s}, $c streams per connection" :
		    "## $scen_label{$s}, $c connections");
		p();
		p('h2load -c 4 -m ', $c, ': HTTP/2 both ways; airlock and nginx answer ',
		    'SETTINGS_MAX_CONCURRENT_STREAMS 100, the origin 256. nginx re-originates ',
		    'over HTTP/1.1 (keep-alive pool), airlock over one HTTP/2 upstream session ',
		    'per VM connection. p50/p99 from h2load\'s per-request log.')
		    if $s eq 'h2';
		p() if $s eq 'h2';
		p('| configuration | req/s | x direct | p50 ms | p99 ms | ',
		    'added p50 ms | MiB/s | errors | proxy CPU us/req |');
		p('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
		my $d = $med{$s}{$c}{direct};
		for my $cfg (@cfgs) {
			my $r = $med{$s}{$c}{$cfg};
			if (!defined $r) {
				next unless exists $m{"unavail_$cfg"};
				p("| $label{$cfg} | not available yet | | | | | | | |")
				    if $m{"unavail_$cfg"} =~ /not available yet/;
				next;
			}
			my $x = $d ? ratio($r->{rps}, $d->{rps}) : undef;
			my $add = ($d && $cfg ne 'direct' && defined $r->{p50} &&
			    defined $d->{p50}) ? $r->{p50} - $d->{p50} : undef;
			p("| $label{$cfg} | ", fmt($r->{rps}, 0), ' | ',
			    fmt($x, 2), ' | ', fmt($r->{p50}, 2), ' | ',
			    fmt($r->{p99}, 2), ' | ', fmt($add, 3), ' | ',
			    fmt($r->{mibs}, 1), ' | ', $r->{err}, ' | ',
			    fmt($r->{cpu}, 1), ' |');
		}
		p();
	}
}

# airlock against each peer.
my @pairs = (
	[ 'splice', 'haproxy' ], [ 'splice', 'squid-splice' ],
	[ 'inspect', 'nginx' ], [ 'inspect', 'squid-bump' ], [ 'inspect', 'mitm' ],
);
p('## airlock against each peer');
p();
p('Ratio airlock / peer of requests/s (MiB/s for 1 MiB downloads); in brackets the ',
    'ratio of proxy CPU per request (below 1: airlock uses less).');
p();
my @cols;
for my $s (@scens) {
	for my $c (@conns) {
		push @cols, [ $s, $c ] if exists $med{$s}{$c};
	}
}
my %short = (lat => 'one conn', ka => 'keep-alive', new => 'new conn',
    big => '1 MiB', h2 => 'h2');
p('| airlock / peer | ', join(' | ', map { "$short{$_->[0]} " .
    ($_->[0] eq 'h2' ? 'm' : 'c') . $_->[1] } @cols), ' |');
p('|---|', join('', map { '---:|' } @cols));
for my $pr (@pairs) {
	my ($a, $b) = @$pr;
	my @cells;
	for my $col (@cols) {
		my ($s, $c) = @$col;
		my $f = $s eq 'big' ? 'mibs' : 'rps';
		my $r = ratio(get($s, $c, $a, $f), get($s, $c, $b, $f));
		my $cr = ratio(get($s, $c, $a, 'cpu'), get($s, $c, $b, 'cpu'));
		push @cells, defined $r ? fmt($r, 2) . ' (' . fmt($cr, 2) . ')' : '-';
	}
	my $la = $a eq 'splice' ? 'splice' : 'inspect';
	my $lb = $label{$b};
	$lb =~ s/ \(.*//;
	p("| $la / $lb | ", join(' | ', @cells), ' |');
}
p();

# Goals (issue 7; README.md, "Benchmarks", states them): each with its bound.
sub each_conns {	# each_conns(sub { value for c }, sub { ok(v) }, fmt digits)
	my ($val, $okf, $dig, $s) = @_;
	my (@txt, $all, $any);
	$all = 1;
	my $pre = $s eq 'h2' ? 'm' : 'c';	# h2: streams per connection
	for my $c (@conns) {
		next unless exists $med{$s}{$c};
		my $v = $val->($c);
		if (!defined $v) {
			push @txt, "$pre$c: -";
			$all = 0;
			next;
		}
		$any = 1;
		my $ok = $okf->($v);
		$all = 0 unless $ok;
		push @txt, "$pre$c: " . fmt($v, $dig);
	}
	return ('-', 'not measured') unless $any;
	return (join(', ', @txt), $all ? 'holds' : 'MISSED');
}
p('## Goals');
p();
p('| goal | measured | verdict |');
p('|---|---|---|');
my $lat = exists $med{lat} ? 'lat' : 'ka';
my @goals = (
	[ 'splice: <= 12 us proxy CPU per keep-alive request', 'ka',
	    sub { get('ka', $_[0], 'splice', 'cpu') }, sub { $_[0] <= 12 }, 1 ],
	[ 'splice: >= 0.80x direct requests/s (keep-alive)', 'ka',
	    sub { ratio(get('ka', $_[0], 'splice', 'rps'), get('ka', $_[0], 'direct', 'rps')) },
	    sub { $_[0] >= 0.80 }, 2 ],
	[ 'splice: 1 MiB downloads >= 0.60x direct MiB/s', 'big',
	    sub { ratio(get('big', $_[0], 'splice', 'mibs'), get('big', $_[0], 'direct', 'mibs')) },
	    sub { $_[0] >= 0.60 }, 2 ],
	[ 'splice: requests/s >= HAProxy (keep-alive)', 'ka',
	    sub { ratio(get('ka', $_[0], 'splice', 'rps'), get('ka', $_[0], 'haproxy', 'rps')) },
	    sub { $_[0] >= 1 }, 2 ],
	[ 'splice: MiB/s >= HAProxy (1 MiB)', 'big',
	    sub { ratio(get('big', $_[0], 'splice', 'mibs'), get('big', $_[0], 'haproxy', 'mibs')) },
	    sub { $_[0] >= 1 }, 2 ],
	[ 'splice: added p50 latency < 100 us (ms shown; one connection when the lat ' .
	    'scenario ran, else keep-alive under load)', $lat,
	    sub { my $a = get($lat, $_[0], 'splice', 'p50');
		  my $b = get($lat, $_[0], 'direct', 'p50');
		  defined $a && defined $b ? $a - $b : undef }, sub { $_[0] < 0.100 }, 3 ],
	[ 'inspect: <= 20 us proxy CPU per keep-alive request', 'ka',
	    sub { get('ka', $_[0], 'inspect', 'cpu') }, sub { $_[0] <= 20 }, 1 ],
	[ 'inspect: >= 0.55x direct requests/s (keep-alive)', 'ka',
	    sub { ratio(get('ka', $_[0], 'inspect', 'rps'), get('ka', $_[0], 'direct', 'rps')) },
	    sub { $_[0] >= 0.55 }, 2 ],
	[ 'inspect: <= 500 us proxy CPU per new-connection request', 'new',
	    sub { get('new', $_[0], 'inspect', 'cpu') }, sub { $_[0] <= 500 }, 0 ],
	[ 'inspect: >= nginx requests/s (keep-alive)', 'ka',
	    sub { ratio(get('ka', $_[0], 'inspect', 'rps'), get('ka', $_[0], 'nginx', 'rps')) },
	    sub { $_[0] >= 1 }, 2 ],
	[ 'inspect: >= 3x Squid ssl-bump requests/s (keep-alive)', 'ka',
	    sub { ratio(get('ka', $_[0], 'inspect', 'rps'), get('ka', $_[0], 'squid-bump', 'rps')) },
	    sub { $_[0] >= 3 }, 2 ],
	[ 'inspect: >= 10x mitmproxy requests/s (keep-alive)', 'ka',
	    sub { ratio(get('ka', $_[0], 'inspect', 'rps'), get('ka', $_[0], 'mitm', 'rps')) },
	    sub { $_[0] >= 10 }, 2 ],
	[ 'inspect: >= nginx requests/s (new connection per request)', 'new',
	    sub { ratio(get('new', $_[0], 'inspect', 'rps'), get('new', $_[0], 'nginx', 'rps')) },
	    sub { $_[0] >= 1 }, 2 ],
	[ "inspect h2: proxy CPU per request <= nginx's (ratio airlock / nginx; " .
	    'h2load -c 4 -m N)', 'h2',
	    sub { ratio(get('h2', $_[0], 'inspect', 'cpu'), get('h2', $_[0], 'nginx', 'cpu')) },
	    sub { $_[0] <= 1 }, 2 ],
);
for my $g (@goals) {
	my ($name, $s, $val, $okf, $dig) = @$g;
	my ($txt, $verdict) = each_conns($val, $okf, $dig, $s);
	$verdict = 'not available yet'
	    if $verdict eq 'not measured' && $name =~ /^inspect/ &&
	    ($m{unavail_inspect} // '') =~ /not available yet/;
	p("| $name | $txt | $verdict |");
}
my ($iu, $if, $r0, $r1) = split ' ', ($m{idle_airlock} // '');
if (defined $r1 && $iu > 0) {
	my $per = ($r1 - $r0) * 1024 / $iu / 1024;
	p("| memory per idle connection <= 32 KiB | ", fmt($per, 1),
	    " KiB ($iu spliced TLS connections) | ", ($per <= 32 ? 'holds' : 'MISSED'),
	    ' |');
} else {
	p('| memory per idle connection <= 32 KiB | - | not measured |');
}
if (defined $m{idle_airlock_reasons}) {
	p("| (idle run: why airlockd refused the failed ones) | ",
	    $m{idle_airlock_reasons}, ' | see README |');
}
if (defined $r1) {
	my $ten = $iu >= 10000 ? 'holds' :
	    "not shown: $iu held (RLIMIT_NOFILE $m{nofile} allows " .
	    int(($m{nofile} - 200) / 2) . ' with 2 sockets each)';
	p("| 10,000 concurrent connections on one host | $iu up, $if failed | $ten |");
}
p('| all cores used (one event loop per core) | every proxy runs 1 worker here ',
    '(the goals are stated per worker) | not measured |');
p();

p('## Memory');
p();
p('| | |');
p('|---|---|');
for my $k (qw(airlock haproxy)) {
	my ($u, $f, $a, $b) = split ' ', ($m{"idle_$k"} // '');
	next unless defined $b;
	my $name = $k eq 'airlock' ? 'airlockd' : 'HAProxy';
	p("| $name, $u idle TLS connections (splice) | VmRSS $a -> $b kB: ",
	    $u > 0 ? fmt(($b - $a) / $u, 1) : '-', " KiB per connection |");
}
my %hl = (airlock => 'airlockd (splice and inspect runs)', nginx => 'nginx (master + worker)',
    haproxy => 'HAProxy', squid => 'Squid (both ports, + certificate helpers)',
    mitm => 'mitmdump');
for my $k (qw(airlock nginx haproxy squid mitm)) {
	next unless defined $m{"hwm_$k"};
	p("| peak RSS (VmHWM), $hl{$k} | ", fmt($m{"hwm_$k"} / 1024, 1), ' MiB |');
}
p();
print $out;
