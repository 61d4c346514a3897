#!/bin/sh
# bench/deps.sh PKG...: installs the Debian packages the benchmarks need (their peers:
# nginx, HAProxy, ..., and Hyperscan for make bench-scan), only those missing.  Never
# called by `make deps`: make check must not need them.  Package scripts must not
# start services in the machine's own namespace: with no policy-rc.d in place, one
# that refuses is put there for the install only.
missing="" prc=/usr/sbin/policy-rc.d made=""
for p in "$@"; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null |
	    grep -q '^install ok installed$' || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "bench: missing packages:$missing (run as root)" >&2
	exit 1
fi
echo "bench: installing$missing" >&2
if [ ! -e "$prc" ]; then
	printf '#!/bin/sh\nexit 101\n' >"$prc" && chmod 755 "$prc" && made=1
fi
DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 update -qq &&
DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 \
    install -y -qq --no-install-recommends $missing >&2
rc=$?
[ -n "$made" ] && rm -f "$prc"
exit $rc
