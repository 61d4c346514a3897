#!/bin/sh
# bench/scan.sh BINARY: runs the scanner microbenchmark (bench/scanbench.c) under
# nice and writes its table to bench/results/YYYY-MM-DD-HHMM-scan.md and
# LATEST-scan.md, with what the run was (commit, CPU, load).  make bench-scan.
cd "$(dirname "$0")/.." || exit 1
BIN=${1:-build/bench/scanbench}
OUT=${BENCH_OUT:-bench/results}
stamp=$(date -u +%Y-%m-%d-%H%M)
f="$OUT/$stamp-scan.md"
tmp=$(mktemp) || exit 1
trap 'rm -f "$tmp"' EXIT
load0=$(cut -d' ' -f1-3 /proc/loadavg)
nice -n 10 "$BIN" >"$tmp" || { echo "bench-scan: $BIN failed" >&2; exit 1; }
load1=$(cut -d' ' -f1-3 /proc/loadavg)
mkdir -p "$OUT"
{
	echo "# Scanner microbenchmark, $(date -u '+%Y-%m-%d %H:%M') UTC"
	echo
	echo "airlock $(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet HEAD -- proxy 2>/dev/null || echo ' (proxy/ modified)'),"
	echo "Hyperscan $(dpkg-query -W -f='${Version}' libhyperscan5 2>/dev/null),"
	echo "$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1), $(nproc) cores."
	echo "Load average before / after: $load0 / $load1. The machine is shared (other"
	echo "builds and tests run beside it): the run is niced, and times are the process's"
	echo "CPU time (CLOCK_PROCESS_CPUTIME_ID), median of ${SCANBENCH_REPEATS:-7} runs of"
	echo "at least ${SCANBENCH_MIN_MS:-100} ms each, so waiting for a core does not count;"
	echo "cache and frequency sharing still may."
	echo
	echo "Command: \`make bench-scan\` (\`nice -n 10 $BIN\`)."
	echo
	echo "Data: 1 MiB, made from a fixed seed: JSON API responses (\\\\u00XX, \\\\/, \\\\n,"
	echo "\\\\\" escapes) and HTML pages with inline JavaScript (URLs with %XX), with 16"
	echo "planted needles (placeholder and secret 0 raw, base64 in a Basic-style"
	echo "credential, hex, all-escaped percent, JSON-escaped; secrets / placeholders 5,"
	echo "13 and 200 raw). Fed in 16 KiB pieces (the proxy's reads) except HS block."
	echo
	echo "MiB/s of CPU time. *detect*: airlock's \`struct scan_stream\` over the placeholder"
	echo "set; *redact*: \`struct scan_redact\` over the secret set (output drained after"
	echo "each piece). *HS*: Hyperscan \`hs_compile_lit_multi\` of the literal patterns"
	echo "airlock's automaton holds for the same set (raw, 6 base64 middles, percent"
	echo "literal styles, hex; each checked to be found by airlock as that needle and"
	echo "encoding), \`hs_scan\` over the whole MiB (block) or \`hs_scan_stream\` per piece"
	echo "(stream), all matches reported. Hyperscan does not run airlock's percent-decoded"
	echo "and JSON-unescaped views: its figure is a lower bound on the work. The ratio"
	echo "columns are HS stream MiB/s / airlock MiB/s (how many times slower airlock is)."
	echo "The run fails unless both find the same raw needles at the same offsets."
	echo
	cat "$tmp"
} >"$f"
cp "$f" "$OUT/LATEST-scan.md"
cat "$f"
