# tests/lib/libvirtd.sh: a private libvirtd for the VM tests (and the demo), sourced by
# sh/bash scripts.  Nothing on the machine is disturbed: the daemon runs
#   - in a network namespace the caller made (so it, and the QEMU it starts, open the
#     sandbox taps that live there: a tap can only be opened in its own namespace),
#   - in a private mount namespace where /etc/libvirt, /var/lib/libvirt,
#     /var/log/libvirt, /var/cache/libvirt and /run are bind mounts of folders under
#     DIR, so its config, sockets, pid file and domain state are its own,
#   - under a small perl subreaper (PR_SET_CHILD_SUBREAPER), so QEMU processes that
#     libvirtd daemonised are reaped at once (PID 1 here reaps slowly: `destroy`
#     would otherwise wait 1-2 s for the zombie),
# and is stopped by PID.  No systemd, virtlogd or polkit is needed.
#
#	libvirtd_start NS DIR	starts it; sets LIBVIRTD_PID and LIBVIRT_URI
#				(qemu:///system?socket=DIR/run/libvirt/libvirt-sock);
#				returns 1 (with the log on stdout as "# " lines) if it
#				did not answer within 20 s
#	libvirtd_stop		SIGTERM to that PID (the subreaper passes it on), wait
#	libvirtd_usable		0 if libvirtd, qemu-system-x86_64 and the qemu driver
#				are installed
#	vm_test_require FILE...	a VM test's preconditions: root, every FILE built,
#				libvirtd usable; else prints TAP "1..0 # SKIP why"
#				and exits 0
#
# Running domains are the caller's to destroy before libvirtd_stop (the VM tests do it
# with `airlock vm destroy`); whatever is left is killed by libvirtd_stop through the
# subreaper, which kills every descendant it still has when libvirtd is gone.

LIBVIRTD_PID=""
LIBVIRT_URI=""

vm_test_require() {
	if [ "$(id -u)" != 0 ]; then
		echo "1..0 # SKIP needs root (network namespaces, libvirtd)"
		exit 0
	fi
	for _vt_f in "$@"; do
		if [ ! -e "$_vt_f" ]; then
			echo "1..0 # SKIP $_vt_f not built (make tests guest)"
			exit 0
		fi
	done
	if ! libvirtd_usable; then
		echo "1..0 # SKIP libvirtd or qemu-system-x86_64 not installed (make deps)"
		exit 0
	fi
}

libvirtd_usable() {
	command -v libvirtd >/dev/null 2>&1 || return 1
	command -v qemu-system-x86_64 >/dev/null 2>&1 || return 1
	ls /usr/lib/*/libvirt/connection-driver/libvirt_driver_qemu.so \
	    >/dev/null 2>&1 || return 1
	command -v unshare >/dev/null 2>&1 && command -v perl >/dev/null 2>&1
}

libvirtd_start() {
	_lv_ns=$1
	_lv_dir=$2
	mkdir -p "$_lv_dir/etc/libvirt/qemu" "$_lv_dir/lib" "$_lv_dir/log" \
	    "$_lv_dir/cache" "$_lv_dir/run"
	cat >"$_lv_dir/etc/libvirt/libvirtd.conf" <<-EOT
	unix_sock_group = "root"
	unix_sock_ro_perms = "0700"
	unix_sock_rw_perms = "0700"
	auth_unix_ro = "none"
	auth_unix_rw = "none"
	log_outputs = "3:stderr"
	EOT
	# root QEMU: /dev/kvm and the taps are root's here (no udev), and libvirt
	# re-probes QEMU on every start when it runs as another user.  No cgroups
	# (no systemd), no virtlogd (console straight to its file).
	cat >"$_lv_dir/etc/libvirt/qemu.conf" <<-EOT
	user = "root"
	group = "root"
	dynamic_ownership = 0
	remember_owner = 0
	security_driver = "none"
	stdio_handler = "file"
	cgroup_controllers = [ ]
	EOT
	: >"$_lv_dir/libvirtd.log"
	ip netns exec "$_lv_ns" unshare --mount --propagation private \
	    perl -e '
		use POSIX ":sys_wait_h";
		my ($dir, @cmd) = @ARGV;
		syscall(157, 36, 1, 0, 0, 0) == 0 or die "subreaper: $!\n";
		for (["etc/libvirt", "/etc/libvirt"], ["lib", "/var/lib/libvirt"],
		    ["log", "/var/log/libvirt"], ["cache", "/var/cache/libvirt"],
		    ["run", "/run"]) {
			system("mkdir", "-p", $_->[1]);
			system("mount", "--bind", "$dir/$_->[0]", $_->[1]) == 0
			    or die "bind mount $_->[1] failed\n";
		}
		my $pid = fork // die "fork: $!\n";
		if ($pid == 0) { exec @cmd or die "exec: $!\n" }
		$SIG{TERM} = $SIG{INT} = sub { kill "TERM", $pid };
		my $st;
		for (;;) {
			my $w = waitpid(-1, 0);
			if ($w == $pid) { $st = $?; last }
			last if $w == -1 && !$!{EINTR};
		}
		# Whatever libvirtd left behind (a QEMU of a domain nobody
		# destroyed) is a child of ours now: end it.
		for (1 .. 50) {
			my @k;
			for my $t (glob "/proc/$$/task/*/children") {
				open(my $f, "<", $t) or next;
				push @k, split " ", (<$f> // "");
			}
			last unless @k;
			kill "KILL", @k;
			1 while waitpid(-1, WNOHANG) > 0;
			select(undef, undef, undef, 0.02);
		}
		exit($st >> 8);
	    ' "$_lv_dir" libvirtd -f /etc/libvirt/libvirtd.conf \
	    >>"$_lv_dir/libvirtd.log" 2>&1 &
	LIBVIRTD_PID=$!
	LIBVIRT_URI="qemu:///system?socket=$_lv_dir/run/libvirt/libvirt-sock"
	_lv_i=0
	while [ "$_lv_i" -lt 200 ]; do
		[ -S "$_lv_dir/run/libvirt/libvirt-sock" ] && return 0
		kill -0 "$LIBVIRTD_PID" 2>/dev/null || break
		sleep 0.1
		_lv_i=$((_lv_i + 1))
	done
	echo "# libvirtd did not start:"
	sed 's/^/#   /' "$_lv_dir/libvirtd.log"
	libvirtd_stop
	return 1
}

libvirtd_stop() {
	[ -n "$LIBVIRTD_PID" ] || return 0
	kill "$LIBVIRTD_PID" 2>/dev/null
	wait "$LIBVIRTD_PID" 2>/dev/null
	LIBVIRTD_PID=""
}
