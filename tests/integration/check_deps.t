#!/bin/sh
# tests/integration/check_deps.t: tests/check-deps.sh (make check-deps) on tiny fake
# trees: a clean one passes (the positive control), each kind of stray is refused
# with its FILE:LINE message and exit 1.  No privileges, no build needed.

top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/lib/tap.sh"

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# Three parts: base <- mid <- app (app may use mid and, through it, base).
DEPS='base: mid:base app:mid'
HEADERS='base:base.h,base_types.h mid:mid.h app:app.h'
PARTS='app mid base'

# The clean tree: every kind of allowed include once (tests/ is a consumer: it may
# include a part's private header).
mk() {
	rm -rf "$tmp/t"
	mkdir -p "$tmp/t/include" "$tmp/t/base" "$tmp/t/mid" "$tmp/t/app" "$tmp/t/tests/unit"
	printf '#include "base_types.h"\n' >"$tmp/t/include/base.h"
	printf 'enum e { E };\n' >"$tmp/t/include/base_types.h"
	printf '#include "base.h"\n' >"$tmp/t/include/mid.h"
	printf '#include <stdio.h>\n#include "mid.h"\n' >"$tmp/t/include/app.h"
	printf '#include "base.h"\n' >"$tmp/t/base/base.c"
	printf '#include "mid.h"\n' >"$tmp/t/mid/mid_int.h"
	printf '#include "mid_int.h"\n#include "base.h"\n' >"$tmp/t/mid/mid.c"
	printf '#include "app.h"\n#include "base.h"\n#  include "mid.h"\n' >"$tmp/t/app/app.c"
	printf '#include "../../mid/mid_int.h"\n#include "app.h"\n' >"$tmp/t/tests/unit/t.c"
}

# run [DEPS [HEADERS [PARTS]]]: the script on $tmp/t; output in $tmp/out, status in rc
run() {
	sh "$top/tests/check-deps.sh" -C "$tmp/t" "${1:-$DEPS}" "${2:-$HEADERS}" \
	    "${3:-$PARTS}" >"$tmp/out" 2>&1
	rc=$?
}

# refused WANT DESC: exit 1 and WANT as a whole line of the output
refused() {
	[ "$rc" -eq 1 ] && grep -qxF -- "$1" "$tmp/out"
	ok $? "$2"
	if ! grep -qxF -- "$1" "$tmp/out"; then
		diag "exit $rc, want 1 and: $1"
		sed 's/^/# got: /' "$tmp/out"
	fi
}

mk
run
is "$rc:$(cat "$tmp/out")" "0:" "a clean tree passes, silently"

# A public header of the bottom part includes one of a part above it.
mk
printf '#include "base_types.h"\n#include "mid.h"\n' >"$tmp/t/include/base.h"
run
refused 'include/base.h:2: base includes include/mid.h of mid (not below it)' \
    "a public header including upwards is refused"

# A .c file of a lower part includes a higher part's header.
mk
printf '#include "base.h"\n\n#include "app.h"\n' >"$tmp/t/base/base.c"
run
refused 'base/base.c:3: base includes include/app.h of app (not below it)' \
    "a part including a part above it is refused"
[ "$(wc -l <"$tmp/out")" -eq 1 ]
ok $? "  one line for one violation"

# Another part's private header, even of a part below.
mk
printf '#include "../mid/mid_int.h"\n' >"$tmp/t/app/app.c"
run
refused 'app/app.c:1: app includes mid/mid_int.h, private to mid/' \
    "a private header of a part below is refused"

# A private header with a public header's name.
mk
printf '#include "mid.h"\n' >"$tmp/t/mid/mid.h"
run
refused 'mid/mid.h: shadows include/mid.h in mid/ (name it mid_int.h)' \
    "a private header shadowing a public one is refused"

# A cycle among headers.
mk
printf '#include "b_int.h"\n' >"$tmp/t/mid/a_int.h"
printf '#include "a_int.h"\n' >"$tmp/t/mid/b_int.h"
run
[ "$rc" -eq 1 ] && grep -q 'include cycle: mid/a_int.h -> mid/b_int.h -> mid/a_int.h' "$tmp/out"
ok $? "an include cycle is refused"

# A public header nobody owns; a header that does not exist.
mk
: >"$tmp/t/include/stray.h"
printf '#include "nothere.h"\n' >>"$tmp/t/app/app.c"
run
refused 'include/stray.h: belongs to no part (add it to HEADERS in the Makefile)' \
    "a public header of no part is refused"
refused 'app/app.c:4: "nothere.h" is not a file of the tree' \
    "an include that resolves to nothing is refused"

# The rule itself: the link order must agree with it, and no arrow may go round.
mk
run "$DEPS" "$HEADERS" 'mid app base'
refused 'Makefile: PARTS: app uses mid but is linked after it' \
    "a link order against the direction is refused"
run 'base:app mid:base app:mid'
refused 'Makefile: DEPS: base is below itself' "a cycle in DEPS is refused"

done_testing
