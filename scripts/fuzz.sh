#!/usr/bin/env bash
# Runs every Go fuzz target of the repository in turn and prints the executions each
# one made. Targets are found by their declaration (func FuzzXxx(f *testing.F)), so a
# new one is run without being listed here.
#
#   scripts/fuzz.sh [seconds] [regexp]
#
# seconds is each target's fuzzing time (default 60); regexp picks targets by name
# (default all). FUZZ_PARALLEL sets the workers per target (default 1). A crash is kept
# by go test under the package's testdata/fuzz/FuzzXxx/, where it becomes a seed of every
# later go test; the script then exits non-zero.
set -euo pipefail

seconds=${1:-60}
pick=${2:-.}
parallel=${FUZZ_PARALLEL:-1}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# targets prints "package-dir target" for every fuzz target.
targets() {
	grep -rHo --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' internal cmd |
		sed -E 's#^(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\(.*#\1 \2#' | sort -u
}

failed=0
printf '%-28s %-32s %12s %8s %10s  %s\n' target package execs seconds execs/s result
while read -r dir name; do
	[[ $name =~ $pick ]] || continue
	log="$logs/$name.log"
	start=$(date +%s)
	result=ok
	# Minimising every new input costs more than it gives on inputs of kilobytes.
	if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "${seconds}s" -fuzzminimizetime 0 \
		-parallel "$parallel" "./$dir" >"$log" 2>&1; then
		result=FAIL
		failed=1
	fi
	elapsed=$(($(date +%s) - start))
	execs=$(grep -oE 'execs: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+' || echo 0)
	rate=$((execs / (seconds > 0 ? seconds : 1)))
	printf '%-28s %-32s %12s %8s %10s  %s\n' "$name" "$dir" "$execs" "$elapsed" "$rate" "$result"
	if [[ $result == FAIL ]]; then
		grep -vE '^fuzz: elapsed' "$log" | tail -12 | sed 's/^/    /'
	fi
done < <(targets)
exit $failed
