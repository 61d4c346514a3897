#!/bin/bash
# tests/fuzz/long.sh: long libFuzzer runs that add up across sessions (make fuzz-long).
#
#	tests/fuzz/long.sh BUILD SECONDS [TARGET...]
#
# Runs each target (default: every BUILD/fuzz/fuzz_*) for SECONDS of CPU on a copy of
# its corpus, JOBS at a time (default 2), then merges what it found that adds
# coverage into tests/fuzz/corpus/TARGET (libFuzzer -merge=1: the growth stays
# minimised).  Each run appends one line to tests/fuzz/results.tsv (committed, so
# the totals carry over); tests/fuzz/RESULTS.md is then written from all the lines:
# per target CPU-seconds, executions, exec/s of the latest run, coverage, crashes.
# A crash leaves its input in tests/fuzz/crashes/TARGET/ (not committed until fixed:
# its fix adds it to the corpus as a regression case) and counts as open while the
# file is there.  SECONDS 0 runs nothing and writes RESULTS.md again.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${1:?usage: long.sh BUILD SECONDS [TARGET...]}
S=${2:?usage: long.sh BUILD SECONDS [TARGET...]}
shift 2
JOBS=${JOBS:-2}
TSV=tests/fuzz/results.tsv
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo -)
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
	for f in "$B"/fuzz/fuzz_*; do
		[ -x "$f" ] && targets+=("$(basename "$f")")
	done
fi
[ -s "$TSV" ] || printf 'date\tcommit\ttarget\tcpu_s\texecs\texec_per_s\tcov\tft\tcrashes\n' >"$TSV"
W=$(mktemp -d "${TMPDIR:-/tmp}/airlock-fuzz.XXXXXX")
trap 'rm -rf "$W"' EXIT

# one TARGET: the run, the merge, its line (printed; the caller appends)
one() {
	local t=$1 bin=$B/fuzz/$1 d=$W/$1 log cpu execs eps cov ft crashes
	mkdir -p "$d/new" "$d/art" "tests/fuzz/corpus/$t"
	log=$d/log
	TIMEFORMAT='%U %S'
	{ time "$bin" -max_total_time="$S" -print_final_stats=1 -timeout=30 \
	    -rss_limit_mb=2048 -artifact_prefix="$d/art/" -close_fd_mask=3 \
	    "$d/new" "tests/fuzz/corpus/$t" >"$log" 2>&1; } 2>"$d/time"
	cpu=$(awk '{ printf "%d", $1 + $2 }' "$d/time")
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
	ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
	crashes=$(find "$d/art" -type f | wc -l)
	if [ "$crashes" -gt 0 ]; then
		mkdir -p "tests/fuzz/crashes/$t"
		cp "$d"/art/* "tests/fuzz/crashes/$t/"
		echo "$t: $crashes crash(es), inputs in tests/fuzz/crashes/$t/" >&2
		grep -m1 -A3 'ERROR\|==ERROR\|deadly signal' "$log" >&2
	fi
	"$bin" -merge=1 "tests/fuzz/corpus/$t" "$d/new" >"$d/merge.log" 2>&1 ||
	    echo "$t: merge failed (see $d/merge.log)" >&2
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$COMMIT" \
	    "$t" "${cpu:-0}" "${execs:-0}" "${eps:-0}" "${cov:-0}" "${ft:-0}" "$crashes"
}

# SECONDS 0: no run, the table only (from results.tsv as it is).
[ "$S" = 0 ] && targets=()
running=0
for t in "${targets[@]}"; do
	if [ ! -x "$B/fuzz/$t" ]; then
		echo "long.sh: $B/fuzz/$t not built (make fuzz)" >&2
		exit 2
	fi
	one "$t" >"$W/$t.line" &
	running=$((running + 1))
	if [ "$running" -ge "$JOBS" ]; then
		wait -n
		running=$((running - 1))
	fi
done
wait
for t in "${targets[@]}"; do
	cat "$W/$t.line" >>"$TSV"
done
[ ${#targets[@]} -eq 0 ] && [ "$S" != 0 ] && { echo "long.sh: no target" >&2; exit 2; }

# RESULTS.md from every line so far.
{
	echo "# Fuzzing results"
	echo
	echo "Written by \`make fuzz-long\` (tests/fuzz/long.sh) from \`tests/fuzz/results.tsv\`,"
	echo "which keeps one line per run; corpora carry over between runs, so the totals add"
	echo "up.  CPU-seconds are user + system time of the fuzzer process; exec/s and"
	echo "coverage (edges, features) are those of the latest run.  Open crashes: inputs in"
	echo "\`tests/fuzz/crashes/TARGET/\` not yet fixed."
	echo
	echo "| target | CPU time | executions | exec/s (latest) | cov / ft (latest) | runs | open crashes |"
	echo "|---|---|---|---|---|---|---|"
	awk -F'\t' 'NR > 1 {
		t = $3; cpu[t] += $4; ex[t] += $5; eps[t] = $6; cov[t] = $7; ft[t] = $8
		runs[t]++; if (!(t in seen)) { seen[t] = 1; order[n++] = t }
	} END {
		for (i = 0; i < n; i++) {
			t = order[i]
			printf "%s\t%d\t%d\t%s\t%s\t%s\t%d\n", t, cpu[t], ex[t], eps[t], cov[t], ft[t], runs[t]
		}
	}' "$TSV" | sort | while IFS=$'\t' read -r t cpu ex eps cov ft runs; do
		open=0
		[ -d "tests/fuzz/crashes/$t" ] && open=$(find "tests/fuzz/crashes/$t" -type f | wc -l)
		printf '| %s | %dh %02dm %02ds | %s | %s | %s / %s | %s | %s |\n' "$t" \
		    $((cpu / 3600)) $((cpu % 3600 / 60)) $((cpu % 60)) "$ex" "$eps" "$cov" "$ft" \
		    "$runs" "$open"
	done
} >tests/fuzz/RESULTS.md
cat tests/fuzz/RESULTS.md
