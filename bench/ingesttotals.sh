#!/usr/bin/env bash
# Usage ingest into keys that keep running totals (each with a spending
# limit, so the 402 decision reads them), against a baseline: the real
# binary of this tree and of BASE_REV (built in a git worktree) each take
# REPORTS reports (batches of 1,000 through POST /usage, two in flight,
# bench/usageload -plain -limit) spread round-robin over KEYS keys of one
# workspace, on a fresh PostgreSQL database each run, rounds alternating
# which goes first. Per run it prints reports/s, and right after the load
# (as written, autovacuum as configured) the bytes of the running totals
# with their change marks and indexes (usage_totals, and usage_changes where
# the version has it) and the share of their updates PostgreSQL made in
# place (HOT: no new index entries, the old row reclaimed without a
# vacuum); then the medians and this tree's over the baseline's.
#
# Needs PostgreSQL: run it under the test servers' script, which exports
# GATEWAY_TEST_POSTGRES_URL:
#
#   deploy/testenv/run.sh bench/ingesttotals.sh [ROUNDS]          (default 3)
#   BASE_REV=5c203d3 KEYS=1000 REPORTS=200000 deploy/testenv/run.sh bench/ingesttotals.sh 5
set -euo pipefail
rounds=${1:-3}
nkeys=${KEYS:-1000}
reports=${REPORTS:-200000}
base_rev=${BASE_REV:-7783835}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# shellcheck source=lib.sh
source "$root/bench/lib.sh"
need psql
: "${GATEWAY_TEST_POSTGRES_URL:?run under deploy/testenv/run.sh, which starts PostgreSQL}"

bench_dir ingesttotals
export GATEWAY_BYOK_ENCRYPTION_KEY=${GATEWAY_BYOK_ENCRYPTION_KEY:-$(head -c 32 /dev/urandom | base64)}
go build -o "$work/usageload" ./bench/usageload
go build -o "$work/gateway-head" ./cmd/gateway
git worktree add --detach "$work/base-src" "$base_rev" >/dev/null 2>&1
(cd "$work/base-src" && go build -o "$work/gateway-base" ./cmd/gateway)
git worktree remove --force "$work/base-src"

# run VERSION: one load on a fresh database; prints "reports/s bytes hot%".
# It runs in a command substitution's subshell: its database is named by
# that subshell's pid, and the gateway's pid goes to $work/pids.
run() {
  local v=$1 port dsn pid mgmt svc db="ingesttotals_$BASHPID" rate
  port=$(free_port)
  psql -q "$GATEWAY_TEST_POSTGRES_URL" -c "CREATE DATABASE $db" >/dev/null
  dsn=$(sed -E "s#^(postgres://[^/]*/)[^?]*#\1$db#" <<<"$GATEWAY_TEST_POSTGRES_URL")
  cat >"$work/$v.yaml" <<YAML
server: {listen: "127.0.0.1:$port"}
metadata: {driver: postgres, dsn: "$dsn"}
storage: {backend: fs, fs: {dir: $work/files}}
catalog: {path: $root/configs/models.yaml}
limits: {rate: {enabled: false}}
sweeper: {interval: 0s}
YAML
  mgmt=$("$work/gateway-$v" keys create --config "$work/$v.yaml" --name bench-mgmt --user bench --management 2>/dev/null | tail -n 1)
  svc=$("$work/gateway-$v" keys create --config "$work/$v.yaml" --name bench-service --user bench --service 2>/dev/null | tail -n 1)
  "$work/gateway-$v" serve --config "$work/$v.yaml" >/dev/null 2>"$work/$v.log" &
  pid=$!
  echo "$pid" >>"$work/pids"
  wait_http "http://127.0.0.1:$port/healthz"
  rate=$("$work/usageload" -url "http://127.0.0.1:$port" -management "$mgmt" -service "$svc" \
    -keys "$nkeys" -reports "$reports" -plain -limit 1000000 | field reports_per_s)
  kill "$pid"
  wait "$pid" || true
  psql -qAt -F ' ' "$dsn" -c "SELECT $rate, SUM(pg_total_relation_size(c.oid)),
      round(100.0 * SUM(s.n_tup_hot_upd) / GREATEST(SUM(s.n_tup_upd), 1), 1)
    FROM pg_class c JOIN pg_stat_user_tables s ON s.relid = c.oid
    WHERE c.relname IN ('usage_totals', 'usage_changes')"
}

echo "== $reports reports over $nkeys keys with limits, on PostgreSQL: base $base_rev vs this tree"
for i in $(seq "$rounds"); do
  if ((i % 2)); then b=$(run base); h=$(run head); else h=$(run head); b=$(run base); fi
  echo "$b" >>"$work/base.out"
  echo "$h" >>"$work/head.out"
  read -r br bb bh <<<"$b"
  read -r hr hb hh <<<"$h"
  printf 'round %d: base %6d reports/s, totals %6.1f MB, %5.1f%% HOT   head %6d reports/s, totals %6.1f MB, %5.1f%% HOT\n' \
    "$i" "$br" "$(awk -v b="$bb" 'BEGIN {print b / 1e6}')" "$bh" "$hr" "$(awk -v b="$hb" 'BEGIN {print b / 1e6}')" "$hh"
done
med() { awk -v c="$2" '{print $c}' "$work/$1.out" | median; }
printf 'median: reports/s base %.0f head %.0f ratio %s; totals MB base %.1f head %.1f ratio %s\n' \
  "$(med base 1)" "$(med head 1)" "$(ratio "$(med head 1)" "$(med base 1)")" \
  "$(awk -v b="$(med base 2)" 'BEGIN {print b / 1e6}')" "$(awk -v b="$(med head 2)" 'BEGIN {print b / 1e6}')" "$(ratio "$(med head 2)" "$(med base 2)")"
