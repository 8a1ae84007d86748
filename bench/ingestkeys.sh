#!/usr/bin/env bash
# Usage ingest spread over many keys, against a baseline: BenchmarkUsageIngest
# posts every report for one key, where a fleet's batches carry many. Here
# the real binary of this tree and of BASE_REV (default 5c203d3, main before
# the spend-at-scale work, built in a git worktree) each take REPORTS reports
# (batches of 1,000 through POST /usage, two in flight, bench/usageload
# -plain: id, key, cost, byok and at, which both versions accept) spread
# round-robin over KEYS keys, on a fresh database each run, SQLite and
# PostgreSQL, rounds alternating which goes first. It prints reports/s of
# each run, the medians and this tree's over the baseline's.
#
# Needs PostgreSQL for its half: run it under the test servers' script,
# which exports GATEWAY_TEST_POSTGRES_URL (STORES=sqlite runs without):
#
#   deploy/testenv/run.sh bench/ingestkeys.sh [ROUNDS]             (default 3)
#   KEYS=1000 REPORTS=200000 STORES="sqlite postgres" deploy/testenv/run.sh bench/ingestkeys.sh 5
#   KEYS=1 bench/ingestkeys.sh      (the one-key case the Go benchmark measures)
set -euo pipefail
rounds=${1:-3}
nkeys=${KEYS:-1000}
reports=${REPORTS:-200000}
stores=${STORES:-sqlite postgres}
base_rev=${BASE_REV:-5c203d3}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# shellcheck source=lib.sh
source "$root/bench/lib.sh"
case " $stores " in *" postgres "*) need psql; : "${GATEWAY_TEST_POSTGRES_URL:?run under deploy/testenv/run.sh, or STORES=sqlite}" ;; esac

bench_dir ingestkeys
export GATEWAY_BYOK_ENCRYPTION_KEY=${GATEWAY_BYOK_ENCRYPTION_KEY:-$(head -c 32 /dev/urandom | base64)}
go build -o "$work/usageload" ./bench/usageload
go build -o "$work/gateway-head" ./cmd/gateway
git worktree add --detach "$work/base-src" "$base_rev" >/dev/null 2>&1
(cd "$work/base-src" && go build -o "$work/gateway-base" ./cmd/gateway)
git worktree remove --force "$work/base-src"

# run VERSION STORE: one load on a fresh database; prints reports/s. It runs
# in a command substitution's subshell: its database is named by that
# subshell's pid, and the gateway's pid goes to $work/pids for the cleanup.
run() {
  local v=$1 store=$2 port dsn pid mgmt svc db="ingestkeys_$BASHPID"
  port=$(free_port)
  rm -rf "$work/db"
  mkdir -p "$work/db"
  dsn="$work/db/gateway.db"
  if [ "$store" = postgres ]; then
    psql -q "$GATEWAY_TEST_POSTGRES_URL" -c "CREATE DATABASE $db" >/dev/null
    dsn=$(sed -E "s#^(postgres://[^/]*/)[^?]*#\1$db#" <<<"$GATEWAY_TEST_POSTGRES_URL")
  fi
  cat >"$work/$v.yaml" <<YAML
server: {listen: "127.0.0.1:$port"}
metadata: {driver: $store, dsn: "$dsn"}
storage: {backend: fs, fs: {dir: $work/db/files}}
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
  "$work/usageload" -url "http://127.0.0.1:$port" -management "$mgmt" -service "$svc" \
    -keys "$nkeys" -reports "$reports" -plain | field reports_per_s
  kill "$pid"
  wait "$pid" || true
}

echo "== ingest of $reports reports over $nkeys keys: base $base_rev vs this tree"
for store in $stores; do
  base=() head=()
  for i in $(seq "$rounds"); do
    if ((i % 2)); then b=$(run base "$store"); h=$(run head "$store"); else h=$(run head "$store"); b=$(run base "$store"); fi
    base+=("$b") head+=("$h")
    printf '%s round %d: base %6d reports/s  head %6d reports/s  ratio %s\n' "$store" "$i" "$b" "$h" "$(ratio "$h" "$b")"
  done
  m_base=$(printf '%s\n' "${base[@]}" | median)
  m_head=$(printf '%s\n' "${head[@]}" | median)
  printf '%s median: base %.0f  head %.0f reports/s  ratio (head / base) %s\n' "$store" "$m_base" "$m_head" "$(ratio "$m_head" "$m_base")"
done
