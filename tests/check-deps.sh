#!/bin/sh
# tests/check-deps.sh: checks every #include "..." of the tree against the dependency
# direction the Makefile states (make check-deps passes its DEPS, HEADERS and PARTS).
#
#	sh tests/check-deps.sh [-C DIR] DEPS HEADERS PARTS
#
# DEPS	  "PART:USES ..." one word per part; USES are the parts it builds on directly,
#	  comma-separated (empty for the bottom).  A part is *below* another when it is
#	  reachable through these arrows.
# HEADERS "PART:H,H ..." which part each public header include/H belongs to.
# PARTS	  the link order (Makefile PARTS): every part must come before all parts below it.
#
# Rules, for each #include "X" in a .c or .h file (X resolved as gcc does with
# -Iinclude: the including file's folder first, then include/):
#   - a file in PART/ (or a public header of PART) may include the public headers of
#     PART and of the parts below it, and PART's own private headers (PART/...);
#   - files outside the parts and include/ (tests/, bench/) are consumers: anything;
#   - every include/ header belongs to exactly one part of DEPS; a private header may
#     not have the name of a public one (it would shadow it for its folder);
#   - no cycle among headers; every X resolves to a file of the tree.
# A violation prints FILE:LINE: ... and the exit status is 1.  Prints nothing and
# exits 0 when all is well.

root=.
if [ "$1" = "-C" ]; then
	root=$2
	shift 2
fi
if [ $# -ne 3 ]; then
	echo "usage: $0 [-C DIR] DEPS HEADERS PARTS" >&2
	exit 2
fi
cd "$root" || exit 2

list=$(mktemp) || exit 2
trap 'rm -f "$list"' EXIT INT TERM
find . -type d \( -name .git -o -name 'build*' -o -path ./tests/fuzz/corpus \) -prune -o \
    -type f \( -name '*.c' -o -name '*.h' \) -print | sed 's|^\./||' | LC_ALL=C sort >"$list"

LC_ALL=C awk -v deps="$1" -v headers="$2" -v parts="$3" -v listfile="$list" '
function fail(msg) { print msg; bad = 1 }
function dirof(p) { return (p ~ /\//) ? substr(p, 1, match(p, /\/[^\/]*$/) - 1) : "" }
function top(p) { return (p ~ /\//) ? substr(p, 1, index(p, "/") - 1) : "" }
# a/b/../c -> a/c, ./ removed
function norm(p,    n, i, k, seg, out, o) {
	n = split(p, seg, "/"); o = 0
	for (i = 1; i <= n; i++) {
		if (seg[i] == "." || seg[i] == "") continue
		if (seg[i] == ".." && o > 0 && out[o] != "..") { o--; continue }
		out[++o] = seg[i]
	}
	p = ""
	for (k = 1; k <= o; k++) p = p (k > 1 ? "/" : "") out[k]
	return p
}
# The part a file belongs to, or "" (a consumer: tests/, bench/, ...).
function owner(f,    t) {
	if (f ~ /^include\//) return hdr_owner[substr(f, 9)]
	t = top(f)
	return (t in isPart) ? t : ""
}
# 1 when part a may use part b (b is a or below a).
function below(a, b) { return a == b || ((a SUBSEP b) in reach) }
function visit(f, path,    i, n, g) {
	state[f] = 1
	n = nedge[f]
	for (i = 1; i <= n; i++) {
		g = edge[f, i]
		if (state[g] == 1)
			fail(f ":" edgeline[f, i] ": include cycle: " path " -> " g)
		else if (state[g] == 0)
			visit(g, path " -> " g)
	}
	state[f] = 2
}
BEGIN {
	np = split(deps, dw, " ")
	for (i = 1; i <= np; i++) {
		split(dw[i], kv, ":")
		p = kv[1]; isPart[p] = 1; pname[i] = p
		nu[p] = split(kv[2], uw, ",")
		for (j = 1; j <= nu[p]; j++) use[p, j] = uw[j]
	}
	for (p in isPart)
		for (j = 1; j <= nu[p]; j++)
			if (!(use[p, j] in isPart)) {
				fail("Makefile: DEPS: " p " uses " use[p, j] ", which is not a part")
				exit 1
			}
	# reach = transitive closure (a handful of parts: iterate until nothing changes)
	for (p in isPart) for (j = 1; j <= nu[p]; j++) reach[p, use[p, j]] = 1
	do {
		grew = 0
		for (k in reach) {
			split(k, ab, SUBSEP)
			for (j = 1; j <= nu[ab[2]]; j++)
				if (!((ab[1] SUBSEP use[ab[2], j]) in reach)) {
					reach[ab[1], use[ab[2], j]] = 1; grew = 1
				}
		}
	} while (grew)
	for (p in isPart)
		if ((p SUBSEP p) in reach) fail("Makefile: DEPS: " p " is below itself")

	# link order
	nl = split(parts, lw, " ")
	for (i = 1; i <= nl; i++) { pos[lw[i]] = i
		if (!(lw[i] in isPart)) fail("Makefile: PARTS: " lw[i] " is not in DEPS") }
	for (p in isPart) {
		if (!(p in pos)) { fail("Makefile: DEPS: " p " is not in PARTS"); continue }
		for (k in reach) {
			split(k, ab, SUBSEP)
			if (ab[1] == p && (ab[2] in pos) && pos[ab[2]] < pos[p])
				fail("Makefile: PARTS: " p " uses " ab[2] " but is linked after it")
		}
	}

	nh = split(headers, hw, " ")
	for (i = 1; i <= nh; i++) {
		split(hw[i], kv, ":")
		if (!(kv[1] in isPart)) fail("Makefile: HEADERS: " kv[1] " is not a part")
		n = split(kv[2], uw, ",")
		for (j = 1; j <= n; j++) {
			if (uw[j] in hdr_owner)
				fail("Makefile: HEADERS: include/" uw[j] " belongs to " \
				    hdr_owner[uw[j]] " and " kv[1])
			hdr_owner[uw[j]] = kv[1]
		}
	}

	while ((getline f < listfile) > 0) { exists[f] = 1; files[++nf] = f }
	close(listfile)
	for (h in hdr_owner)
		if (!(("include/" h) in exists))
			fail("Makefile: HEADERS: include/" h " does not exist")
	for (i = 1; i <= nf; i++) {
		f = files[i]
		if (f ~ /^include\//) {
			if (dirof(f) != "include")
				fail(f ": public headers live directly in include/")
			else if (!(substr(f, 9) in hdr_owner))
				fail(f ": belongs to no part (add it to HEADERS in the Makefile)")
			continue
		}
		n = split(f, seg, "/")
		if ((top(f) in isPart) && f ~ /\.h$/ && (("include/" seg[n]) in exists))
			fail(f ": shadows include/" seg[n] " in " dirof(f) \
			    "/ (name it " substr(seg[n], 1, length(seg[n]) - 2) "_int.h)")
	}

	for (i = 1; i <= nf; i++) {
		f = files[i]; fp = owner(f); ln = 0
		while ((getline line < f) > 0) {
			ln++
			if (line !~ /^[ \t]*#[ \t]*include[ \t]*"/) continue
			x = line; sub(/^[ \t]*#[ \t]*include[ \t]*"/, "", x); sub(/".*/, "", x)
			d = dirof(f)
			r = norm((d != "" ? d "/" : "") x)
			if (!(r in exists)) r = norm("include/" x)
			if (!(r in exists)) { fail(f ":" ln ": \"" x "\" is not a file of the tree"); continue }
			edge[f, ++nedge[f]] = r; edgeline[f, nedge[f]] = ln
			if (fp == "" && !(f ~ /^include\//)) continue	# a consumer
			if (fp == "") continue		# reported above (no owner)
			rp = owner(r)
			if (r ~ /^include\//) {
				if (rp != "" && !below(fp, rp))
					fail(f ":" ln ": " fp " includes " r " of " rp " (not below it)")
			} else if (rp == "" || !below(fp, rp)) {
				fail(f ":" ln ": " fp " includes " r " of " \
				    (rp != "" ? rp : top(r) "/") " (not below it)")
			} else if (rp != fp || f ~ /^include\//) {
				fail(f ":" ln ": " fp " includes " r ", private to " rp "/")
			}
		}
		close(f)
	}
	for (i = 1; i <= nf; i++)
		if (files[i] ~ /\.h$/ && state[files[i]] == 0) visit(files[i], files[i])
	exit bad
}'
