#!/bin/bash
# tests/integration/install.t: make install and make uninstall.  Into a DESTDIR with
# PREFIX=/usr (the layout a package would have; the man pages where man finds them),
# then into a prefix of its own so that the installed unit names a binary that
# exists: systemd-analyze verify checks the unit, and the installed airlockd is
# started exactly as the unit's ExecStart says (these machines do not run systemd
# as PID 1), its configuration the shipped one with only the paths moved into the
# test's folder (AIRLOCK_CONFIG).  Then
# ExecReload's SIGHUP, a stop, and make uninstall, which keeps a changed
# configuration.  As root airlockd runs in a network namespace of its own.
set -u
. "$(dirname "$0")/../lib/build.sh"
if [ ! -x "$B/airlock" ] || [ ! -x "$B/airlockd" ] || [ ! -f "$B/guest/vmlinux" ]; then
	echo "1..0 # SKIP not built (make all guest)"
	exit 0
fi
T=$(mktemp -d /tmp/airlock-install.XXXXXX) || exit 1
chmod 755 "$T"
DPID=""
cleanup() {
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT

mk() { make -s -C "$top" SAN=$SAN "$@" >>"$T/make.log" 2>&1; }

# --- a package's layout: DESTDIR, PREFIX=/usr --------------------------------------
D=$T/dest
mk install DESTDIR="$D" PREFIX=/usr
ok $? "make install DESTDIR=... PREFIX=/usr"
for f in usr/bin/airlock usr/sbin/airlockd etc/airlock/airlock.json \
    usr/share/airlock/policies/coding-agent.json usr/share/airlock/policies/SCHEMA.md \
    usr/share/airlock/policies/presets/pypi.json \
    usr/share/airlock/guest/vmlinux usr/share/airlock/guest/initrd.cpio \
    usr/share/airlock/web/index.html usr/share/airlock/web/app.js \
    usr/share/airlock/web/style.css \
    usr/share/doc/airlock/README.md usr/share/doc/airlock/docs/CONFIGURATION.md \
    lib/systemd/system/airlockd.service usr/lib/tmpfiles.d/airlock.conf; do
	[ -f "$D/$f" ]
	ok $? "installed /$f"
done
mans="usr/share/man/man1/airlock.1 usr/share/man/man8/airlockd.8
    usr/share/man/man5/airlock.json.5 usr/share/man/man5/airlock-policy.5"
for f in $mans; do
	[ -f "$D/$f" ] && cmp -s "$D/$f" "$B/man/$(basename "$f")" &&
	    [ "$(stat -c %a "$D/$f")" = 644 ]
	ok $? "installed /$f (0644, the page make man made)"
done
if command -v man >/dev/null; then
	MANPATH=$D/usr/share/man man -w 5 airlock.json >"$T/manw" 2>&1 &&
	    grep -qx "$D/usr/share/man/man5/airlock.json.5" "$T/manw"
	ok $? "man finds the installed airlock.json(5) ($(head -1 "$T/manw"))"
	MANPATH=$D/usr/share/man MANWIDTH=80 man airlockd 2>/dev/null | grep -q '^NAME$'
	ok $? "... and shows airlockd(8)"
else
	skip "man not installed" 2
fi
is "$(stat -c %a "$D/usr/sbin/airlockd")" 755 "airlockd is 0755"
is "$(stat -c %a "$D/etc/airlock/airlock.json")" 644 "the configuration is 0644"
grep -q '^ExecStart=/usr/sbin/airlockd --foreground$' "$D/lib/systemd/system/airlockd.service"
ok $? "the unit starts /usr/sbin/airlockd"
grep -q '^ExecReload=/bin/kill -HUP \$MAINPID$' "$D/lib/systemd/system/airlockd.service"
ok $? "... and reloads with SIGHUP"
! grep -q '@' "$D/lib/systemd/system/airlockd.service"
ok $? "... with every @VAR@ filled in"
grep -q '^d /run/airlock ' "$D/usr/lib/tmpfiles.d/airlock.conf"
ok $? "tmpfiles makes /run/airlock"
is "$("$D/usr/bin/airlock" --version)" "$("$B/airlock" --version)" "the installed airlock runs"
"$D/usr/sbin/airlockd" --version >/dev/null
ok $? "the installed airlockd runs"
# The installed airlock finds its web files in ../share/airlock/web (nothing beside
# it): audit serve answers / with the installed page (marked, so that no other copy
# can pass for it).
printf '{}\n' >"$T/view.jsonl"
echo '<!-- the installed copy -->' >>"$D/usr/share/airlock/web/index.html"
env -u AIRLOCK_WEB_DIR "$D/usr/bin/airlock" audit serve --listen 127.0.0.1:0 \
    "$T/view.jsonl" >"$T/view.out" 2>"$T/view.err" &
VPID=$!
for i in $(seq 100); do
	grep -q '^serving ' "$T/view.out" && break
	kill -0 "$VPID" 2>/dev/null || break
	sleep 0.1
done
vurl=$(sed -n 's|^serving \(http://[^ #]*/\)#token=[0-9a-f]* .*|\1|p' "$T/view.out")
[ -n "$vurl" ] && curl -s "$vurl" >"$T/view.html" &&
    cmp -s "$T/view.html" "$D/usr/share/airlock/web/index.html" &&
    grep -q 'the installed copy' "$T/view.html"
ok $? "the installed airlock audit serve finds the installed web files ($vurl; $(head -c 200 "$T/view.err"))"
kill "$VPID" 2>/dev/null
wait "$VPID" 2>/dev/null
# An operator's configuration is never overwritten.
echo '{ "workers": 2 }' >"$D/etc/airlock/airlock.json"
mk install DESTDIR="$D" PREFIX=/usr
is "$(cat "$D/etc/airlock/airlock.json")" '{ "workers": 2 }' \
    "make install again keeps a changed configuration"
mk uninstall DESTDIR="$D" PREFIX=/usr
ok $? "make uninstall"
for f in $mans; do
	[ ! -e "$D/$f" ]
	ok $? "... removes /$f"
done
left=$(cd "$D" && find . -type f | sort | tr '\n' ' ')
is "$left" "./etc/airlock/airlock.json " "... removes all but the changed configuration"

# --- a prefix of its own: the unit verified, airlockd started as it says -----------
P=$T/pfx
mk install PREFIX="$P/usr" SYSCONFDIR="$P/etc" UNITDIR="$P/unit" TMPFILESDIR="$P/tmpfiles"
ok $? "make install PREFIX=$P/usr"
U=$P/unit/airlockd.service
if command -v systemd-analyze >/dev/null; then
	systemd-analyze verify "$U" >"$T/verify.out" 2>&1
	ok $? "systemd-analyze verify accepts the unit ($(head -c 200 "$T/verify.out"))"
	sed 's|^ExecStart=.*|ExecStart=/nonexistent/airlockd|' "$U" >"$T/broken.service"
	! systemd-analyze verify "$T/broken.service" >/dev/null 2>&1
	ok $? "... and refuses one whose ExecStart does not exist (positive control)"
else
	skip "systemd-analyze not installed" 2
fi
mkdir -p "$T/state/sandboxes" "$T/run"
chmod 700 "$T/state" "$T/state/sandboxes"
sed -e "s|\"/var/lib/airlock\"|\"$T/state\"|" \
    -e "s|\"/run/airlock/control.sock\"|\"$T/run/control.sock\"|" \
    -e "s|\"/var/log/airlock/audit.jsonl\"|\"$T/audit.jsonl\"|" \
    "$P/etc/airlock/airlock.json" >"$T/airlock.json"
[ "$(id -u)" = 0 ] || sed -i 's|"proxy_port": 15001|"proxy_port": 35001|;
    s|"dns_port": 15053|"dns_port": 35053|' "$T/airlock.json"
AIRLOCK_CONFIG=$T/airlock.json "$P/usr/sbin/airlockd" -n >"$T/n.out" 2>&1
ok $? "the installed airlockd -n accepts the shipped configuration ($(tail -1 "$T/n.out"))"
cmd=$(sed -n 's/^ExecStart=//p' "$U")
# shellcheck disable=SC2086
if [ "$(id -u)" = 0 ]; then
	AIRLOCK_CONFIG=$T/airlock.json unshare -n sh -c 'ip link set lo up && exec "$@"' \
	    sh $cmd >"$T/daemon.log" 2>&1 &
else
	AIRLOCK_CONFIG=$T/airlock.json $cmd >"$T/daemon.log" 2>&1 &
fi
DPID=$!
up=1
for i in $(seq 100); do
	AIRLOCK_CONFIG=$T/airlock.json "$P/usr/bin/airlock" stats >/dev/null 2>&1 &&
	    { up=0; break; }
	kill -0 "$DPID" 2>/dev/null || break
	sleep 0.1
done
ok $up "airlockd started as the unit's ExecStart ($cmd) serves"
[ $up = 0 ] || sed 's/^/# /' "$T/daemon.log"
kill -HUP "$DPID"
for i in $(seq 50); do
	grep -q 'SIGHUP: reopening the audit log, reloading' "$T/daemon.log" && break
	sleep 0.1
done
grep -q 'SIGHUP: reopening the audit log, reloading' "$T/daemon.log"
ok $? "ExecReload's SIGHUP reloads"
kill "$DPID"
wait "$DPID"
is "$?" 0 "SIGTERM (systemctl stop) ends it with status 0"
DPID=""
mk uninstall PREFIX="$P/usr" SYSCONFDIR="$P/etc" UNITDIR="$P/unit" TMPFILESDIR="$P/tmpfiles"
is "$(find "$P" -type f | wc -l)" 0 "make uninstall leaves no file (the configuration was the shipped one)"

done_testing
