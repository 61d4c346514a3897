# tests/lib/airlockd.sh: airlockd's processes, for the tests that look at them
# (bash; sourced by daemon.sh and proxynet.sh, which set AL_SOCK to the control
# socket).  The PID a test starts is the supervisor; its child, the worker, parses
# the VMs' bytes and has the reader and netwatch as its children, keyd as the
# reader's.  While a worker restarts, the old one's helpers may still be the
# supervisor's children for a moment: the worker is the one that answers.

# al_worker: the worker's PID, from its own answer to "ping" on the control socket,
# waiting up to 10 s for one (e.g. while it restarts); prints nothing, 1, if none.
al_worker() {
	local i w
	for i in $(seq 100); do
		w=$(perl -MIO::Socket::UNIX -e '
		    my $s = IO::Socket::UNIX->new(Peer => $ARGV[0]) or exit 1;
		    print $s "{\"cmd\":\"ping\"}\n"; $s->flush;
		    $SIG{ALRM} = sub { exit 1 }; alarm 2;
		    my $l = <$s>; exit 1 unless defined $l && $l =~ /"pid":\s*(\d+)/;
		    print "$1\n";' "$AL_SOCK" 2>/dev/null)
		[ -n "$w" ] && { echo "$w"; return 0; }
		sleep 0.1
	done
	return 1
}
