#!/usr/bin/env bash
# Checks that a change leaves every result bit-identical: runs every built-in config at toy
# size (the test TestEveryConfigRunsTwoRoundsAtToySize: every algorithm, model and data
# path, the side-by-side configs included) and, with --demo, the demo at full size, once at
# commit REF and once at NEW, then compares every run's metrics.jsonl and summary.json with
# the time fields left out. Exit 0 when all are equal.
#
#   bash scripts/same-metrics.sh REF [NEW] [--demo] [--keep DIR]
#
# REF and NEW are commits (NEW defaults to the work tree as it is). Each is checked out
# into a temporary git worktree (the work tree itself for NEW when it is omitted) and its
# test binary and bin/pfl built there; the native library is this checkout's build/ (a
# change to cuda/csrc needs its own comparison). Takes about 10 minutes on 2 cores (the
# demo adds about 6).
set -euo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)
usage="usage: scripts/same-metrics.sh REF [NEW] [--demo] [--keep DIR]"
ref=${1:?$usage}; shift
new=; demo=; keep=
while [ $# -gt 0 ]; do
  case $1 in
    --demo) demo=1; shift ;;
    --keep) keep=$2; shift 2 ;;
    --*) echo "same-metrics.sh: unknown argument $1; $usage" >&2; exit 2 ;;
    *) new=$1; shift ;;
  esac
done
export PATH="/usr/local/go/bin:$PATH"
work=${keep:-$(mktemp -d)}
mkdir -p "$work"
lib="$top/build/libpfltorch.so"
[ -f "$lib" ] || { echo "same-metrics.sh: $lib missing; run bash scripts/build.sh" >&2; exit 1; }
trees=()
cleanup() { for t in "${trees[@]}"; do git -C "$top" worktree remove --force "$t" >/dev/null 2>&1 || true; done; [ -n "$keep" ] || rm -rf "$work"; }
trap cleanup EXIT

# side SIDE COMMIT: builds and runs one side into $work/SIDE
side() {
  local name=$1 commit=$2 tree
  if [ -z "$commit" ]; then
    tree=$top
  else
    tree="$work/tree-$name"
    git -C "$top" worktree add --detach -f "$tree" "$commit" >/dev/null
    trees+=("$tree")
  fi
  echo "== $name: ${commit:-work tree} ($(git -C "$tree" rev-parse --short HEAD))"
  (cd "$tree" && go test -c -o "$work/$name.test" ./cmd/pfl && go build -o "$work/$name-pfl" ./cmd/pfl)
  rm -rf "$work/$name"
  (cd "$tree/cmd/pfl" && env -u OMP_NUM_THREADS PFL_NATIVE_LIB="$lib" PFL_REQUIRE_TEST_DATA=1 PFL_TEST_KEEP_RUNS="$work/$name/toy" \
    "$work/$name.test" -test.run '^TestEveryConfigRunsTwoRoundsAtToySize$' -test.count=1 -test.timeout 60m >"$work/$name-toy.log" 2>&1) ||
    { tail -30 "$work/$name-toy.log" >&2; echo "same-metrics.sh: the toy runs failed at $name" >&2; exit 1; }
  if [ -n "$demo" ]; then
    env -u OMP_NUM_THREADS PFL_NATIVE_LIB="$lib" "$work/$name-pfl" train --set "out=$work/$name" --set name=demo >"$work/$name-demo.log" 2>&1 ||
      { tail -30 "$work/$name-demo.log" >&2; echo "same-metrics.sh: the demo failed at $name" >&2; exit 1; }
  fi
}
side ref "$ref"
side new "$new"

/usr/bin/python3 - "$work/ref" "$work/new" <<'EOF'
import json, os, sys
ref, new = sys.argv[1], sys.argv[2]
TIME = ("time_", "wall_seconds", "samples_per_sec")
def strip(obj):
    if isinstance(obj, dict):
        return {k: strip(v) for k, v in obj.items() if not k.startswith(TIME)}
    if isinstance(obj, list):
        return [strip(v) for v in obj]
    return obj
def load(path):
    with open(path) as f:
        if path.endswith(".jsonl"):
            return [strip(json.loads(l)) for l in f if l.strip()]
        return strip(json.load(f))
files = []
for root, _, names in os.walk(ref):
    for n in names:
        if n in ("metrics.jsonl", "summary.json"):
            files.append(os.path.relpath(os.path.join(root, n), ref))
bad = []
for rel in sorted(files):
    other = os.path.join(new, rel)
    if not os.path.exists(other):
        bad.append(f"{rel}: missing at new")
    elif load(os.path.join(ref, rel)) != load(other):
        bad.append(f"{rel}: differs")
for root, _, names in os.walk(new):
    for n in names:
        rel = os.path.relpath(os.path.join(root, n), new)
        if n in ("metrics.jsonl", "summary.json") and rel not in files:
            bad.append(f"{rel}: missing at ref")
print(f"same-metrics: {len(files)} files compared, {len(bad)} differ")
for b in bad[:40]:
    print("  " + b)
sys.exit(1 if bad or not files else 0)
EOF
