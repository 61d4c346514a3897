#!/bin/sh
# tests/integration/docs_audit.t: every field a part of airlock adds to an audit
# record of its own (an audit_kv key, `.ak_key = "name"`, in audit/ and proxy/) is a
# row of a table in docs/AUDIT.md.  The record types and the writer's standard fields
# are checked by tests/unit/docs_audit.c.  Fails when it finds no key at all, or an
# assignment of ak_key it cannot read (no string literal).  No privileges, no build.

top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/lib/tap.sh"

doc=$top/docs/AUDIT.md
parts="audit cli lib netctl policies proxy vault vmm"
lit='ak_key[[:space:]]*=[[:space:]]*"[a-z0-9_]+"'

check "docs/AUDIT.md is there" test -f "$doc"
# Every assignment to an ak_key (not a comparison), file:line: text.
assign=$(cd "$top" && grep -rnE --include='*.c' --include='*.h' \
    'ak_key[[:space:]]*=([^=]|$)' $parts)
unread=$(printf '%s\n' "$assign" | grep -vE "$lit" | grep -v '^$')
is "$unread" "" "every ak_key assignment names its key with a string literal"
keys=$(printf '%s\n' "$assign" | grep -oE "$lit" | sed -E 's/.*"([a-z0-9_]+)"$/\1/' |
    sort -u)
nkeys=$(printf '%s\n' "$keys" | grep -c .)
check "the sources give $nkeys field names (20 or more)" [ "$nkeys" -ge 20 ]
for k in $keys; do
	check "field $k is documented in docs/AUDIT.md" \
	    grep -q "^| \`$k\` |" "$doc"
done
fails "control: a made-up field is not documented" \
    grep -q '^| `no_such_field` |' "$doc"
done_testing
