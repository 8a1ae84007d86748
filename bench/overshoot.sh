#!/usr/bin/env bash
# Spend overshoot (issue 36): how far past a $1 limit a key's usage runs when
# 50 clients use it through two replicas at once. Two replicas of the real
# binary share one PostgreSQL database; bench/overshoot creates a standard key
# with the limit, and its clients each loop "GET /api/v1/models/count with the
# key; when served, POST /usage of the cost for it with a service key", the
# same replica for both and the other replica for the next request, until
# each client has had a 402 from both replicas. The overshoot is the key's
# final usage (GET /keys/{hash}) minus the limit. The clients start SETTLE
# (default 3s) after the key is made, once every replica has read its limit
# in a refresh: until then a replica does not hold the key as limited.
#
# The same rounds run on a baseline binary built from BASE_REV (default
# 5c203d3, main before the spend-at-scale work, whose replicas refused only
# after their next one-second refresh) in a git worktree, and on the working
# tree, alternately (the baseline first in odd rounds); each has its own
# database and replicas, started once. It prints each round, the median and
# range of each, and the ratio of the medians. Rate limits are off so that
# nothing but spend refuses a request.
#
# Needs PostgreSQL: run it under the test servers' script, which exports
# GATEWAY_TEST_POSTGRES_URL (the user must be allowed to create databases):
#
#   deploy/testenv/run.sh bench/overshoot.sh [ROUNDS]          (default 5)
#   CLIENTS=50 COST=0.10 LIMIT=1 SETTLE=3s BASE_REV=5c203d3 deploy/testenv/run.sh bench/overshoot.sh 3
set -euo pipefail
rounds=${1:-5}
clients=${CLIENTS:-50}
cost=${COST:-0.10}
limit=${LIMIT:-1}
settle=${SETTLE:-3s}
base_rev=${BASE_REV:-5c203d3}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# shellcheck source=lib.sh
source "$root/bench/lib.sh"
need psql
pg=${GATEWAY_TEST_POSTGRES_URL:?run under deploy/testenv/run.sh, which starts PostgreSQL}

bench_dir overshoot
# Replicas share a sealing key, as a fleet does (they need one to start).
export GATEWAY_BYOK_ENCRYPTION_KEY=${GATEWAY_BYOK_ENCRYPTION_KEY:-$(head -c 32 /dev/urandom | base64)}
go build -o "$work/overshoot" ./bench/overshoot
go build -o "$work/gateway-head" ./cmd/gateway
git worktree add --detach "$work/base-src" "$base_rev" >/dev/null 2>&1
(cd "$work/base-src" && go build -o "$work/gateway-base" ./cmd/gateway)
git worktree remove --force "$work/base-src"

# pg_dsn DB: the test server's URL naming database DB instead.
pg_dsn() { sed -E "s#^(postgres://[^/]*/)[^?]*#\1$1#" <<<"$pg"; }

# start VERSION: a fresh database for the VERSION binary, its management and
# service keys (in $work/VERSION.keys), and two replicas of it, their URLs in
# $work/VERSION.urls.
start() {
  local v=$1 db="overshoot_${1}_$$" urls=() port i cfg
  psql -q "$pg" -c "CREATE DATABASE $db" >/dev/null
  for i in 1 2; do
    port=$(free_port)
    cfg="$work/$v-$i.yaml"
    cat >"$cfg" <<YAML
server: {listen: "127.0.0.1:$port"}
metadata: {driver: postgres, dsn: "$(pg_dsn "$db")"}
storage: {backend: fs, fs: {dir: $work/$v-files}}
catalog: {path: $root/configs/models.yaml}
limits: {rate: {enabled: false}}
sweeper: {interval: 0s}
YAML
    if [ "$i" = 1 ]; then
      {
        "$work/gateway-$v" keys create --config "$cfg" --name bench-mgmt --user bench --management 2>/dev/null | tail -n 1
        "$work/gateway-$v" keys create --config "$cfg" --name bench-service --user bench --service 2>/dev/null | tail -n 1
      } >"$work/$v.keys"
    fi
    "$work/gateway-$v" serve --config "$cfg" 2>"$work/$v-$i.log" &
    pids+=($!)
    urls+=("http://127.0.0.1:$port")
  done
  for u in "${urls[@]}"; do wait_http "$u/healthz"; done
  (IFS=,; echo "${urls[*]}") >"$work/$v.urls"
}

# round VERSION: one measurement; prints the overshoot in dollars.
round() {
  local keys
  mapfile -t keys <"$work/$1.keys"
  "$work/overshoot" -replicas "$(cat "$work/$1.urls")" -management "${keys[0]}" -service "${keys[1]}" \
    -clients "$clients" -cost "$cost" -limit "$limit" -settle "$settle" | tee -a "$work/$1.out" | field overshoot
}

start base
start head
echo "== overshoot of a \$$limit limit: $clients clients, \$$cost a request, 2 replicas on PostgreSQL; base $base_rev vs this tree"
base=() head=()
for i in $(seq "$rounds"); do
  if ((i % 2)); then b=$(round base); h=$(round head); else h=$(round head); b=$(round base); fi
  base+=("$b") head+=("$h")
  printf 'round %d: base $%.2f  head $%.2f\n' "$i" "$b" "$h"
done
summary() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {printf "$%.2f to $%.2f", a[1], a[NR]}'; }
m_base=$(printf '%s\n' "${base[@]}" | median)
m_head=$(printf '%s\n' "${head[@]}" | median)
printf 'base: median $%.2f (%s)\n' "$m_base" "$(summary "${base[@]}")"
printf 'head: median $%.2f (%s)\n' "$m_head" "$(summary "${head[@]}")"
printf 'overshoot ratio (head / base): %s\n' "$(ratio "$m_head" "$m_base")"
echo "requests served per round (limit/cost of them within it): $(field served <"$work/head.out" | paste -sd' ') (head), $(field served <"$work/base.out" | paste -sd' ') (base)"
