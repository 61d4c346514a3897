#!/bin/sh
# Installs every Debian package that airlock's build, tests and demo need.
# Idempotent and quick when everything is there: apt runs only for what is missing.
set -eu
PKGS="build-essential pkg-config perl
libevent-dev libjansson-dev libssl-dev libnftnl-dev libmnl-dev libvirt-dev
libpsl-dev publicsuffix libnghttp2-dev libseccomp-dev
nghttp2-client python3-h2 python3-grpcio gdb prometheus
clang libclang-rt-14-dev
iproute2 nftables curl openssl bind9-dnsutils wrk groff-base man-db
qemu-system-x86 libvirt-daemon libvirt-daemon-driver-qemu busybox-static cpio lz4
ca-certificates squid-openssl chromium rsyslog rsyslog-openssl"
# (vmm: libvirtd + QEMU without libvirt-daemon-system, whose service scripts,
# polkit and firewall dependencies are not needed: the VM tests start a private
# libvirtd; busybox-static, cpio, lz4 build the default guest image; groff-base and
# man-db check and render the man pages, tests/integration/man.t; squid-openssl is
# the corporate proxy of tests/integration/upstream_proxy.t, run only inside that
# test's namespaces: Debian's other build, squid, conflicts with it, and make bench
# installs this one; chromium, and node with npm below, run the audit view's browser
# test, tests/integration/audit_serve.t, which installs its npm packages itself from
# tests/browser; rsyslog and rsyslog-openssl are the collectors of
# tests/integration/audit_syslog.t, started by that test alone, with its own
# configuration: their service is not needed.)
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' ||
	    missing="$missing $p"
done
# Debian's nodejs and npm, only where there is no npm at all: a node installed
# otherwise (a vendor's nodejs package, which has npm inside and conflicts with
# Debian's) is used as it is, never replaced.
command -v npm >/dev/null 2>&1 || missing="$missing nodejs npm"
# airlockd drops to this user after binding its ports (config "user").
ensure_user() {
	getent passwd airlock >/dev/null && return 0
	if [ "$(id -u)" != 0 ]; then
		echo "deps: no user 'airlock' (run 'make deps' as root)" >&2
		return 0
	fi
	echo "deps: adding system user airlock"
	getent passwd airlock >/dev/null || useradd --system --no-create-home \
	    --shell /usr/sbin/nologin airlock
}
# libvirtd's QEMU driver resolves its compiled-in user and group (libvirt-qemu)
# when it starts, even when qemu.conf says root; libvirt-daemon-system would make
# them.
ensure_libvirt_user() {
	[ "$(id -u)" = 0 ] || return 0
	getent group kvm >/dev/null || groupadd --system kvm
	getent group libvirt-qemu >/dev/null || groupadd --system libvirt-qemu
	getent passwd libvirt-qemu >/dev/null || useradd --system --no-create-home \
	    --shell /usr/sbin/nologin -g kvm libvirt-qemu
}
if [ -z "$missing" ]; then
	ensure_user
	ensure_libvirt_user
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "deps: missing packages:$missing (run 'make deps' as root)" >&2
	exit 1
fi
echo "deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
# A fresh cloud VM often runs its own apt at first boot: wait for the dpkg lock (up
# to 10 minutes, apt says it waits) rather than fail at once.
LOCK="-o DPkg::Lock::Timeout=600"
if command -v fuser >/dev/null &&
    fuser /var/lib/dpkg/lock-frontend /var/lib/apt/lists/lock >/dev/null 2>&1; then
	echo "deps: another apt or dpkg holds the lock: waiting for it (at most 10 minutes)"
fi
apt-get $LOCK update -qq
# Package scripts must not start services (Squid's) in the machine's own namespace:
# a policy-rc.d that refuses every start (exit 101) is in place for the install, and
# the one that was there before, if any, is put back afterwards.
PRC=/usr/sbin/policy-rc.d
PRC_SAVED=""
prc_restore() {
	rm -f "$PRC"
	[ -z "$PRC_SAVED" ] || mv -f "$PRC_SAVED" "$PRC"
}
if [ -e "$PRC" ] || [ -L "$PRC" ]; then
	PRC_SAVED=$PRC.airlock-saved.$$
	mv -f "$PRC" "$PRC_SAVED"
fi
trap prc_restore EXIT
trap 'exit 1' INT TERM
printf '#!/bin/sh\nexit 101\n' >"$PRC"
chmod 755 "$PRC"
apt-get $LOCK install -y -qq --no-install-recommends $missing
prc_restore
trap - EXIT INT TERM
# Nor start Squid at the next boot: the tests run their own, by PID.
case " $missing " in
*" squid-openssl "*)
	if command -v systemctl >/dev/null; then
		systemctl disable squid >/dev/null 2>&1 || :
	fi
	if command -v update-rc.d >/dev/null; then
		update-rc.d squid disable >/dev/null 2>&1 || :
	fi
	;;
esac
ensure_user
ensure_libvirt_user
