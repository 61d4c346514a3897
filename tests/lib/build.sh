# tests/lib/build.sh: for the tests that run make themselves (install.t, man.t; sh
# or bash).  Sets top (the source tree), B (the build folder: $AIRLOCK_BUILD, else
# build) and SAN (1 when B is a build-san folder: `make SAN=$SAN` builds into it),
# and sources tests/lib/tap.sh.
#
#	. "$(dirname "$0")/../lib/build.sh"

top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/lib/tap.sh"
B=${AIRLOCK_BUILD:-$top/build}
SAN=0
[ "$(basename "$B")" = build-san ] && SAN=1
