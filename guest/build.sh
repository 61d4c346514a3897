#!/bin/sh
# guest/build.sh OUTDIR: the default guest image of `airlock vm start` (make guest).
#
# Built from Debian packages alone, nothing installed on the host:
#	OUTDIR/vmlinux		the Debian cloud kernel, uncompressed: it carries the PVH
#				entry note, so QEMU boots it directly and skips the
#				LZ4 decompression of the bzImage (faster under TCG)
#	OUTDIR/initrd.cpio	busybox-static, curl with its shared libraries, the
#				virtio-net modules, the host's public CA roots,
#				guest/init as /init (raw newc
#				cpio: unpacks fastest; needs >= 112 MiB of guest RAM)
#	OUTDIR/VERSION		kernel release, for `airlock vm` and humans
# The per-VM parts (addresses, CA certificate, placeholders, agent) are not here:
# vmm appends a small second cpio for each VM, so this image stays shared.
#
# Idempotent: the kernel .deb is downloaded once (OUTDIR/dl); the outputs are
# replaced atomically.  Needs: apt-get, dpkg-deb, lz4, cpio, busybox-static, curl.
set -eu

out=${1:?usage: guest/build.sh OUTDIR}
src=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out/dl"
out=$(cd "$out" && pwd)

for c in apt-get apt-cache dpkg-deb lz4 cpio curl; do
	command -v "$c" >/dev/null || { echo "guest: missing $c (make deps)" >&2; exit 1; }
done
[ -x /bin/busybox ] || { echo "guest: missing busybox-static (make deps)" >&2; exit 1; }
/bin/busybox --list >/dev/null

# --- the kernel ---------------------------------------------------------------------
# The versioned package the cloud metapackage points at, e.g.
# linux-image-6.1.0-57-cloud-amd64.  A .deb already downloaded is reused.
deb=$(ls "$out"/dl/linux-image-*-cloud-amd64_*.deb 2>/dev/null | tail -n 1 || true)
if [ -z "$deb" ]; then
	pkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null |
	    sed -n 's/^ *Depends: \(linux-image-[0-9].*-cloud-amd64\)$/\1/p' | head -n 1)
	[ -n "$pkg" ] || { echo "guest: cannot find the cloud kernel package" >&2; exit 1; }
	echo "guest: downloading $pkg"
	(cd "$out/dl" && apt-get download -q "$pkg" 2>&1 |
	    grep -v 'Download is performed unsandboxed' >&2 || true)
	deb=$(ls "$out"/dl/linux-image-*-cloud-amd64_*.deb 2>/dev/null | tail -n 1 || true)
	[ -n "$deb" ] || { echo "guest: download of $pkg failed" >&2; exit 1; }
fi

work=$(mktemp -d "$out/work.XXXXXX")
trap 'rm -rf "$work"' EXIT
dpkg-deb -x "$deb" "$work/deb"
vmlinuz=$(ls "$work"/deb/boot/vmlinuz-* | head -n 1)
release=${vmlinuz##*/vmlinuz-}
moddir=$work/deb/lib/modules/$release/kernel

# vmlinux: the LZ4 (legacy frame) payload of the bzImage starts at the magic
# 02 21 4c 18; lz4 stops at the end of the frame and ignores what follows.
off=$(LC_ALL=C grep -obUaP '\x02\x21\x4c\x18' "$vmlinuz" | head -n 1 | cut -d: -f1)
[ -n "$off" ] || { echo "guest: no LZ4 payload in $vmlinuz" >&2; exit 1; }
tail -c +$((off + 1)) "$vmlinuz" | lz4 -dc >"$work/vmlinux" 2>/dev/null || true
# An ELF that carries the Xen/PVH ELF note (type 18) is what QEMU can boot.
head -c 4 "$work/vmlinux" | grep -q 'ELF' ||
    { echo "guest: $vmlinuz did not decompress to an ELF vmlinux" >&2; exit 1; }

# --- the initramfs -------------------------------------------------------------------
r=$work/root
mkdir -p "$r/bin" "$r/sbin" "$r/usr/bin" "$r/usr/sbin" "$r/etc/ssl/certs" \
    "$r/etc/airlock" "$r/lib/modules" "$r/proc" "$r/sys" "$r/dev" "$r/tmp" \
    "$r/run" "$r/root" "$r/var"
cp /bin/busybox "$r/bin/busybox"
for a in $(/bin/busybox --list-full); do
	[ -e "$r/$a" ] || ln -s /bin/busybox "$r/$a"
done

# curl and its shared libraries (ldd's closure; the loader is named explicitly).
curl=$(command -v curl)
cp "$curl" "$r/usr/bin/curl"
ldd "$curl" | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i }' |
    sort -u >"$work/libs"
echo /lib64/ld-linux-x86-64.so.2 >>"$work/libs"
while read -r lib; do
	[ -e "$lib" ] || continue
	mkdir -p "$r$(dirname "$lib")"
	cp -L "$lib" "$r$lib"
done <"$work/libs"

# virtio-net (and the ACPI power button + evdev, so `airlock vm stop` is a clean
# shutdown).  No modprobe here: /init loads them in this (dependency) order.
: >"$r/lib/modules/order"
for m in drivers/virtio/virtio_ring drivers/virtio/virtio \
    drivers/virtio/virtio_pci_modern_dev drivers/virtio/virtio_pci_legacy_dev \
    drivers/virtio/virtio_pci net/core/failover drivers/net/net_failover \
    drivers/net/virtio_net drivers/acpi/button drivers/input/evdev; do
	f=$moddir/$m.ko
	[ -f "$f" ] || { echo "guest: no module $m in $release" >&2; exit 1; }
	cp "$f" "$r/lib/modules/"
	echo "${m##*/}" >>"$r/lib/modules/order"
done

cp "$src/init" "$r/init"
chmod 755 "$r/init"
cat >"$r/etc/nsswitch.conf" <<EOT
hosts: files dns
EOT
echo 'root:x:0:0:root:/root:/bin/sh' >"$r/etc/passwd"
echo 'root:x:0:' >"$r/etc/group"
echo '127.0.0.1 localhost' >"$r/etc/hosts"
# The public roots of the host's ca-certificates: a spliced connection shows the
# origin's own certificate, which the guest verifies as any machine would.  /init
# puts the sandbox's CA (inspected names) in front of them in the bundle.
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
	cp /etc/ssl/certs/ca-certificates.crt "$r/etc/ssl/certs/public-roots.crt"
else
	: >"$r/etc/ssl/certs/public-roots.crt"
fi
: >"$r/etc/ssl/certs/ca-certificates.crt"
echo "$release" >"$r/etc/airlock/kernel"

(cd "$r" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0) \
    >"$work/initrd.cpio"

mv "$work/vmlinux" "$out/vmlinux"
mv "$work/initrd.cpio" "$out/initrd.cpio"
echo "$release" >"$out/VERSION"
echo "guest: $out/vmlinux ($release), $out/initrd.cpio" \
    "($(($(wc -c <"$out/initrd.cpio") / 1048576)) MiB)"
