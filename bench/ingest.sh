#!/usr/bin/env bash
# Usage ingest against a baseline (issue 36): BenchmarkUsageIngest
# (internal/e2e) of this tree and of BASE_REV (default 5c203d3, main before
# the spend-at-scale work, built in a git worktree), run alternately round by
# round (the baseline first in odd rounds), on SQLite and PostgreSQL, flat out
# and paced at 20,000 reports/s. Per run it takes reports/s (flat out) and
# the lookups' p99 during the ingest over their p99 in the idle windows of
# the same run; it prints each round, the medians of each, and this tree's
# medians over the baseline's.
#
# Needs PostgreSQL: run it under the test servers' script, which exports
# GATEWAY_TEST_POSTGRES_URL:
#
#   deploy/testenv/run.sh bench/ingest.sh [ROUNDS] [BENCHTIME]   (defaults 3, 2s)
#   BASE_REV=5c203d3 deploy/testenv/run.sh bench/ingest.sh 5
set -euo pipefail
rounds=${1:-3}
benchtime=${2:-2s}
base_rev=${BASE_REV:-5c203d3}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# shellcheck source=lib.sh
source "$root/bench/lib.sh"
: "${GATEWAY_TEST_POSTGRES_URL:?run under deploy/testenv/run.sh, which starts PostgreSQL}"

bench_dir ingest
go test -c -o "$work/e2e-head.test" ./internal/e2e
git worktree add --detach "$work/base-src" "$base_rev" >/dev/null 2>&1
(cd "$work/base-src" && go test -c -o "$work/e2e-base.test" ./internal/e2e)
git worktree remove --force "$work/base-src"

# Anchored: BenchmarkUsageIngestKeys (other figures, no lookups) must not run.
runs='^BenchmarkUsageIngest$/^(sqlite|postgres)(/paced-20k)?$'
# bench VERSION: one run of every sub-benchmark, appended to $work/VERSION.out
# as "name reports/s p99-ratio" lines. The test binary runs in the package's
# directory, where its relative paths (the catalog) lead.
bench() {
  (cd "$root/internal/e2e" && "$work/e2e-$1.test" -test.run '^$' -test.bench "$runs" -test.benchtime "$benchtime") |
    tee -a "$work/$1.raw" | awk '/^BenchmarkUsageIngest\// {
      name = $1; sub(/^BenchmarkUsageIngest\//, "", name); sub(/-[0-9]+$/, "", name)
      for (i = 3; i < NF; i++) v[$(i + 1)] = $i
      printf "%s %s %.3f\n", name, (("reports/s" in v) ? v["reports/s"] : 0), v["lookup-p99-ingest-µs"] / v["lookup-p99-idle-µs"]
      delete v
    }' | tee -a "$work/$1.out"
}

echo "== BenchmarkUsageIngest, $benchtime a run: base $base_rev vs this tree"
for i in $(seq "$rounds"); do
  echo "round $i"
  if ((i % 2)); then bench base | sed 's/^/  base /'; bench head | sed 's/^/  head /'
  else bench head | sed 's/^/  head /'; bench base | sed 's/^/  base /'; fi
done
# med VERSION NAME COLUMN: the median of a column over the rounds.
med() { awk -v n="$2" -v c="$3" '$1 == n {print $c}' "$work/$1.out" | median; }
printf '%-18s %12s %12s %7s   %10s %10s %7s\n' run 'base rep/s' 'head rep/s' ratio 'base p99x' 'head p99x' ratio
for name in sqlite postgres sqlite/paced-20k postgres/paced-20k; do
  br=$(med base "$name" 2) hr=$(med head "$name" 2) bp=$(med base "$name" 3) hp=$(med head "$name" 3)
  if [ "$br" = 0 ]; then # a paced run's rate is its pace's: reports/s are not reported
    printf '%-18s %12s %12s %7s   %10.2f %10.2f %7s\n' "$name" - - - "$bp" "$hp" "$(ratio "$hp" "$bp")"
  else
    printf '%-18s %12.0f %12.0f %7s   %10.2f %10.2f %7s\n' "$name" "$br" "$hr" "$(ratio "$hr" "$br")" "$bp" "$hp" "$(ratio "$hp" "$bp")"
  fi
done
echo "(p99x: the lookups' p99 during the ingest over their p99 in the idle windows of the same run)"
