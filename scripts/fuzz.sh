#!/usr/bin/env bash
# Runs every fuzz target in the repository briefly: each `func FuzzX(f *testing.F)` found
# in a *_test.go file, for PFL_FUZZTIME each (default 2s; any -fuzztime value, e.g. 30s
# or 5000x), one target at a time since Go fuzzes one target per run. Exits non-zero if
# any target fails; its failing input is written to the package's testdata/fuzz/FuzzX/
# and `go test -run 'FuzzX/<file>' ./<package>/` replays it.
#
# Each package's test binary is built once, instrumented as `go test -fuzz` builds it,
# and run once per target: linking a test binary against the native library takes
# seconds, which `go test -fuzz` would spend again for every target. New inputs the
# fuzzer finds go to a temporary cache, so that every run costs the same; minimizing them
# (PFL_FUZZMINIMIZE, default 0: off) would take most of a short run.
#
# Needs what `go test` needs: run scripts/build.sh first.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
fuzztime=${PFL_FUZZTIME:-2s}
minimize=${PFL_FUZZMINIMIZE:-0}
timeout=${PFL_FUZZTIMEOUT:-10m} # per target, as go test's default: a hang fails
root=$(pwd)
module=$(go list -m)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Packages with fuzz targets: the folders of *_test.go files (tracked, or new and not
# ignored, in a git checkout) that declare one.
test_files() {
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git ls-files --cached --others --exclude-standard -- '*_test.go'
  else
    find . -name '*_test.go' -not -path './.git/*' | sed 's|^\./||'
  fi
}
mapfile -t dirs < <(test_files | grep -v '/testdata/' | xargs -r grep -lE '^func Fuzz[A-Za-z0-9_]*\(' |
  xargs -r -n1 dirname | sort -u)
if [ ${#dirs[@]} -eq 0 ]; then
  echo "fuzz: no fuzz targets found" >&2
  exit 1
fi

# deadline_race LOG TARGET: whether the run in LOG failed only with the bare "context
# deadline exceeded" that Go before 1.27 can report when -fuzztime runs out (its fuzzing
# coordinator checks the deadline's error against its workers' context before that is
# cancelled, a race): no failing input written, no other message.
deadline_race() {
  grep -qx '[[:space:]]*context deadline exceeded' "$1" || return 1
  ! grep -vE "^fuzz: elapsed|^--- FAIL: $2 \(|^[[:space:]]*context deadline exceeded\$|^FAIL\$" "$1" | grep -q .
}

start=$SECONDS
failed=()
count=0
for dir in "${dirs[@]}"; do
  pkg="$module/$dir"
  [ "$dir" != . ] || pkg=$module
  bin="$work/$(echo "$dir" | tr / _).test"
  if ! go test -c -fuzz . -o "$bin" "./$dir"; then
    failed+=("$pkg (build)")
    continue
  fi
  listed=$("$bin" -test.list '^Fuzz' 2>/dev/null || true)
  mapfile -t targets < <(grep -hoE '^func Fuzz[A-Za-z0-9_]*\(' "$dir"/*_test.go | sed 's/^func //; s/($//' | sort -u)
  for target in "${targets[@]}"; do
    if ! grep -qx "$target" <<<"$listed"; then
      echo "fuzz: $pkg $target: not in the test binary (build constraints?), skipped"
      continue
    fi
    count=$((count + 1))
    log="$work/$target.log"
    t0=$SECONDS
    # the binary reads the seed corpus testdata/fuzz/<target> from its package folder
    rc=0
    (cd "$root/$dir" && "$bin" -test.run '^$' -test.fuzz "^$target\$" -test.fuzztime "$fuzztime" \
      -test.fuzzminimizetime "$minimize" -test.fuzzcachedir "$work/cache/$dir" -test.timeout "$timeout" >"$log" 2>&1) || rc=$?
    execs=$(grep -oE 'execs: [0-9]+' "$log" | tail -1 | cut -d' ' -f2 || true)
    if [ $rc -eq 0 ]; then
      echo "fuzz: $pkg $target ok ($((SECONDS - t0))s, ${execs:-0} runs)"
    elif deadline_race "$log" "$target"; then
      echo "fuzz: $pkg $target ok ($((SECONDS - t0))s, ${execs:-0} runs; Go's end-of-fuzztime race reported a deadline, no failing input)"
    else
      echo "fuzz: $pkg $target FAILED ($((SECONDS - t0))s):"
      grep -v '^fuzz: elapsed' "$log" | tail -40 | sed 's/^/    /'
      failed+=("$pkg $target")
    fi
  done
done

echo "fuzz: $count targets in $((SECONDS - start))s, $fuzztime each"
if [ ${#failed[@]} -gt 0 ]; then
  printf 'fuzz: failed: %s\n' "${failed[@]}" >&2
  exit 1
fi
