# tests/lib/netctl.sh: the common start of the netctl_*.t tests (sh): the TAP helpers
# (tests/lib/tap.sh), the namespace helpers (tests/lib/netns.sh; the whole test is
# skipped unless root with a working `ip netns`), B (the build directory), AL (the
# airlock binary) and POLICY (policies/deny-all.json, absolute).
#
#	. "$(dirname "$0")/../lib/netctl.sh"

. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/netns.sh"
netns_require

B=${AIRLOCK_BUILD:-build}
AL=${AIRLOCK:-$B/airlock}
POLICY=$(cd "$(dirname "$0")/../.." && pwd)/policies/deny-all.json
