#!/usr/bin/env bash
# What a day of usage takes on disk (issue 36), on SQLite and PostgreSQL:
# the real binary, fresh database; bench/usageload creates KEYS standard keys
# and posts REPORTS reports (batches of 1,000 through POST /usage, two in
# flight) dated one UTC day, spread over the keys and MODELS models, a third
# of them BYOK, each saying what was served (model, provider, endpoint,
# tokens). Measured before and after the load, with the tables' indexes:
# the raw reports (usage_reports), the daily rollups (usage_rollups) and the
# running totals (usage_totals); SQLite through its dbstat table (pages in
# use, WAL included), PostgreSQL with pg_total_relation_size, as written and
# after VACUUM FULL (the rollups are rewritten by every batch, and dead rows
# stay until vacuumed). It prints bytes per raw report and per rollup row,
# and from them a day at 1,000 and 10,000 reports/s, the raw reports' steady
# state (kept 36 days), and a day of rollups for 10,000 keys × 5 models.
#
# Needs PostgreSQL: run it under the test servers' script, which exports
# GATEWAY_TEST_POSTGRES_URL (the user must be allowed to create databases):
#
#   deploy/testenv/run.sh bench/usagebytes.sh
#   REPORTS=1000000 KEYS=1000 MODELS=5 STORES="sqlite postgres" deploy/testenv/run.sh bench/usagebytes.sh
set -euo pipefail
reports=${REPORTS:-1000000}
nkeys=${KEYS:-1000}
models=${MODELS:-5}
stores=${STORES:-sqlite postgres}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# shellcheck source=lib.sh
source "$root/bench/lib.sh"
need sqlite3
need psql
pg=${GATEWAY_TEST_POSTGRES_URL:?run under deploy/testenv/run.sh, which starts PostgreSQL}

bench_dir usagebytes
bench_bulky=(gateway.db gateway.db-wal)
export GATEWAY_BYOK_ENCRYPTION_KEY=${GATEWAY_BYOK_ENCRYPTION_KEY:-$(head -c 32 /dev/urandom | base64)}
go build -o "$work/gateway" ./cmd/gateway
go build -o "$work/usageload" ./bench/usageload

tables="'usage_reports','usage_rollups','usage_totals'"
# sizes STORE [full]: "table bytes rows" for each of the three tables, their
# indexes included; with full, PostgreSQL's after VACUUM FULL.
sizes() {
  if [ "$1" = sqlite ]; then
    sqlite3 "$work/gateway.db" "SELECT m.tbl_name, SUM(s.pgsize),
      (CASE m.tbl_name WHEN 'usage_reports' THEN (SELECT COUNT(*) FROM usage_reports)
        WHEN 'usage_rollups' THEN (SELECT COUNT(*) FROM usage_rollups) ELSE (SELECT COUNT(*) FROM usage_totals) END)
      FROM dbstat s JOIN sqlite_master m ON m.name = s.name WHERE m.tbl_name IN ($tables) GROUP BY m.tbl_name" | tr '|' ' '
    return
  fi
  [ "${2:-}" = full ] && psql -q "$dsn" -c 'VACUUM FULL usage_reports, usage_rollups, usage_totals' >/dev/null
  psql -qAt -F ' ' "$dsn" -c "SELECT 'usage_reports', pg_total_relation_size('usage_reports'), (SELECT COUNT(*) FROM usage_reports)
    UNION ALL SELECT 'usage_rollups', pg_total_relation_size('usage_rollups'), (SELECT COUNT(*) FROM usage_rollups)
    UNION ALL SELECT 'usage_totals', pg_total_relation_size('usage_totals'), (SELECT COUNT(*) FROM usage_totals)"
}

# report STORE LABEL BEFORE AFTER: the per-row figures and what they make.
report() {
  awk -v store="$1" -v label="$2" 'NR == FNR {b[$1] = $2; next} {a[$1] = $2; n[$1] = $3}
    END {
      raw = (a["usage_reports"] - b["usage_reports"]) / n["usage_reports"]
      roll = (a["usage_rollups"] - b["usage_rollups"]) / n["usage_rollups"]
      tot = n["usage_totals"] ? (a["usage_totals"] - b["usage_totals"]) / n["usage_totals"] : 0
      printf "%s %s: raw %d reports %.1f MB, %.0f B/report; rollups %d rows %.2f MB, %.0f B/row; totals %d rows, %.0f B/row\n",
        store, label, n["usage_reports"], (a["usage_reports"] - b["usage_reports"]) / 1e6, raw,
        n["usage_rollups"], (a["usage_rollups"] - b["usage_rollups"]) / 1e6, roll, n["usage_totals"], tot
      for (i = 1; i <= 2; i++) {
        rate = (i == 1) ? 1000 : 10000
        printf "  at %d reports/s: raw %.1f GB a day, %.0f GB kept (36 days)\n", rate, rate * 86400 * raw / 1e9, rate * 86400 * raw * 36 / 1e9
      }
      printf "  rollups of 10,000 keys x 5 models: %.1f MB a day (%.2f GB a year); x2 if each also has BYOK use\n",
        50000 * roll / 1e6, 50000 * roll * 365 / 1e9
    }' "$3" "$4"
}

echo "== a day of usage on disk: $reports reports over $nkeys keys and $models models"
for store in $stores; do
  port=$(free_port)
  if [ "$store" = sqlite ]; then
    rm -f "$work"/gateway.db*
    dsn="$work/gateway.db"
  else
    db="usagebytes_$$"
    psql -q "$pg" -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null
    dsn=$(sed -E "s#^(postgres://[^/]*/)[^?]*#\1$db#" <<<"$pg")
  fi
  cat >"$work/$store.yaml" <<YAML
server: {listen: "127.0.0.1:$port"}
metadata: {driver: $store, dsn: "$dsn"}
storage: {backend: fs, fs: {dir: $work/files}}
catalog: {path: $root/configs/models.yaml}
limits: {rate: {enabled: false}}
sweeper: {interval: 0s}
YAML
  mgmt=$("$work/gateway" keys create --config "$work/$store.yaml" --name bench-mgmt --user bench --management 2>/dev/null | tail -n 1)
  svc=$("$work/gateway" keys create --config "$work/$store.yaml" --name bench-service --user bench --service 2>/dev/null | tail -n 1)
  "$work/gateway" serve --config "$work/$store.yaml" 2>"$work/$store.log" &
  pid=$!
  pids+=("$pid")
  wait_http "http://127.0.0.1:$port/healthz"
  sizes "$store" >"$work/$store.before"
  "$work/usageload" -url "http://127.0.0.1:$port" -management "$mgmt" -service "$svc" \
    -keys "$nkeys" -models "$models" -reports "$reports" | sed "s/^/$store load: /"
  kill "$pid"
  wait "$pid" || true
  sizes "$store" >"$work/$store.after"
  report "$store" "as written" "$work/$store.before" "$work/$store.after"
  if [ "$store" = postgres ]; then
    sizes "$store" full >"$work/$store.full"
    report "$store" "after VACUUM FULL" "$work/$store.before" "$work/$store.full"
  fi
done
