#!/usr/bin/env bash
# Lookup throughput of the gateway against a bare net/http server writing
# the same bytes. GET /api/v1/model/... goes through the full middleware
# chain (request id, access log, metrics, auth, rate limiting; the limits are
# raised so nothing is refused, and RATE=off turns them off). The
# server is pinned to CPU 0, wrk (1 thread, 64 connections) to CPU 1; the
# servers take turns round by round and the medians are compared, since
# these machines are shared and noisy.
#
# A second baseline, "obliged", is the same bare server doing what the
# gateway must do on every lookup before any code of its own runs: it sends
# the gateway's answer headers (request ids, RateLimit-*, ETag: the ones the
# gateway answered this lookup with), arms the same slow-client deadlines
# (the default read_header_timeout and idle_timeout), and is sent the same
# Authorization header. obliged / bare is what net/http charges for those;
# gateway / obliged is the share of the gateway's own chain.
#
# Each round also reads the server's CPU time per request, which the other
# load of a shared machine disturbs far less than the rate.
#
# BASE=REV adds a fourth contender, "base": the gateway built from the git
# revision REV, on a copy of the same data, so that a change is measured
# before and after in the same rounds (gateway / base).
#
#   bench/lookup.sh [ROUNDS] [SECONDS]      (defaults 5 rounds of 5 s)
set -euo pipefail
rounds=${1:-5}
secs=${2:-5}
model=${MODEL:-openai/gpt-4o}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# shellcheck source=lib.sh
source "$root/bench/lib.sh"
need wrk
cpus=$(nproc)
pin_server=() pin_load=()
if [ "$cpus" -ge 2 ] && command -v taskset >/dev/null; then
  pin_server=(taskset -c 0) pin_load=(taskset -c 1)
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/gateway-bench.XXXXXX")
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

go build -o "$work/gateway" ./cmd/gateway
go build -o "$work/bare" ./bench/bare
if [ -n "${BASE:-}" ]; then
  mkdir "$work/base-src"
  git -C "$root" archive "$BASE" | tar -x -C "$work/base-src"
  (cd "$work/base-src" && go build -o "$work/gateway-base" ./cmd/gateway)
fi

gw_port=$(free_port) bare_port=$(free_port) obliged_port=$(free_port)
cat >"$work/gateway.yaml" <<YAML
server: {listen: "127.0.0.1:$gw_port"}
metadata: {driver: sqlite, dsn: $work/gateway.db}
storage: {backend: fs, fs: {dir: $work/files}}
catalog: {path: $root/configs/models.yaml}
limits:
  rate:
    enabled: $([ "${RATE:-on}" = off ] && echo false || echo true)
    default: {requests: 100000000, per: 1s, burst: 100000000}
YAML
key=$("$work/gateway" keys create --config "$work/gateway.yaml" --name bench --user bench 2>/dev/null | tail -n 1)
contenders=(bare obliged gateway)
if [ -n "${BASE:-}" ]; then
  contenders+=(base)
  base_port=$(free_port)
  cp "$work/gateway.db" "$work/base.db"
  sed -e "s/:$gw_port\"/:$base_port\"/" -e "s#$work/gateway.db#$work/base.db#" -e "s#$work/files#$work/base-files#" \
    "$work/gateway.yaml" >"$work/base.yaml"
  "${pin_server[@]}" "$work/gateway-base" serve --config "$work/base.yaml" 2>"$work/base.log" &
  base_pid=$!
  pids+=("$base_pid")
  wait_http "http://127.0.0.1:$base_port/healthz"
fi
"${pin_server[@]}" "$work/gateway" serve --config "$work/gateway.yaml" 2>"$work/gateway.log" &
gw_pid=$!
pids+=("$gw_pid")
wait_http "http://127.0.0.1:$gw_port/healthz"
curl -fsS -D "$work/headers.txt" -H "Authorization: Bearer $key" "127.0.0.1:$gw_port/api/v1/model/$model" >"$work/body.json"
"${pin_server[@]}" "$work/bare" -addr "127.0.0.1:$bare_port" -body "$work/body.json" 2>/dev/null &
bare_pid=$!
pids+=("$bare_pid")
# The gateway's defaults (configs.Default), which the bench config keeps.
"${pin_server[@]}" "$work/bare" -addr "127.0.0.1:$obliged_port" -body "$work/body.json" \
  -headers "$work/headers.txt" -read-header-timeout 10s -idle-timeout 120s 2>/dev/null &
obliged_pid=$!
pids+=("$obliged_pid")
wait_http "http://127.0.0.1:$bare_port/"
wait_http "http://127.0.0.1:$obliged_port/"

# run PID URL [HEADER]: "rps cpu_us" of one wrk run: requests per second,
# and the server's CPU time (user + system, from /proc/PID/stat) per request
# in microseconds. The CPU cost per request is what the server's own work
# costs; the rate also moves with whatever else the shared machine runs.
ticks=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
run() {
  local pid=$1 args=(-t1 -c64 -d"${secs}s" --latency) c0 c1 out
  [ $# -gt 2 ] && args+=(-H "$3")
  c0=$(cpu "$pid")
  out=$("${pin_load[@]}" wrk "${args[@]}" "$2")
  c1=$(cpu "$pid")
  echo "$out" | awk -v c=$((c1 - c0)) -v t="$ticks" '
    /requests in/ {n = $1} /^Requests\/sec/ {r = $2}
    END {printf "%s %.2f\n", r, (n > 0 ? c / t * 1e6 / n : 0)}'
}

bare_url="http://127.0.0.1:$bare_port/api/v1/model/$model"
obliged_url="http://127.0.0.1:$obliged_port/api/v1/model/$model"
gw_url="http://127.0.0.1:$gw_port/api/v1/model/$model"
base_url="http://127.0.0.1:${base_port:-0}/api/v1/model/$model"
auth="Authorization: Bearer $key"
# measure NAME: one run of the contender NAME, as "rps cpu_us".
measure() {
  case $1 in
    bare) run "$bare_pid" "$bare_url" ;;
    obliged) run "$obliged_pid" "$obliged_url" "$auth" ;;
    gateway) run "$gw_pid" "$gw_url" "$auth" ;;
    base) run "$base_pid" "$base_url" "$auth" ;;
  esac
}
# Warm all up (caches, connections, the auth cache).
for c in "${contenders[@]}"; do measure "$c" >/dev/null; done

declare -A rps cpu
rr=() orr=() gor=() cr=() ocr=() bare_r=() obliged_r=() gw_r=() bare_c=() obliged_c=() gw_c=()
gbr=() gbc=()
order=("${contenders[@]}")
for i in $(seq "$rounds"); do
  # The order rotates, so no server always runs first.
  for c in "${order[@]}"; do read -r "rps[$c]" "cpu[$c]" < <(measure "$c"); done
  order=("${order[@]:1}" "${order[0]}")
  b=${rps[bare]} o=${rps[obliged]} g=${rps[gateway]}
  rr+=("$(ratio "$g" "$b")") orr+=("$(ratio "$o" "$b")") gor+=("$(ratio "$g" "$o")")
  cr+=("$(ratio "${cpu[bare]}" "${cpu[gateway]}")") ocr+=("$(ratio "${cpu[obliged]}" "${cpu[gateway]}")")
  bare_r+=("$b") obliged_r+=("$o") gw_r+=("$g")
  bare_c+=("${cpu[bare]}") obliged_c+=("${cpu[obliged]}") gw_c+=("${cpu[gateway]}")
  printf 'round %d: bare %6.0f rps %5.1f us/req  obliged %6.0f rps %5.1f us/req  gateway %6.0f rps %5.1f us/req  gateway/bare %s (cpu %s)  obliged/bare %s  gateway/obliged %s\n' \
    "$i" "$b" "${cpu[bare]}" "$o" "${cpu[obliged]}" "$g" "${cpu[gateway]}" "${rr[-1]}" "${cr[-1]}" "${orr[-1]}" "${gor[-1]}"
  if [ -n "${BASE:-}" ]; then
    gbr+=("$(ratio "$g" "${rps[base]}")") gbc+=("$(ratio "${cpu[base]}" "${cpu[gateway]}")")
    printf '         base %6.0f rps %5.1f us/req  gateway/base %s (cpu %s)\n' "${rps[base]}" "${cpu[base]}" "${gbr[-1]}" "${gbc[-1]}"
  fi
done
med() { printf '%s\n' "$@" | median; }
# The headline is the median of the round ratios: each round's runs share
# the machine's weather, while the medians of each side may come from
# different rounds (one noisy round can move one of them alone).
printf 'median: bare %.0f rps, obliged %.0f rps, gateway %.0f rps\n' "$(med "${bare_r[@]}")" "$(med "${obliged_r[@]}")" "$(med "${gw_r[@]}")"
printf 'lookup ratio (gateway / bare, median of round ratios): %s  (target >= 0.85)\n' "$(med "${rr[@]}")"
printf 'what net/http charges for the headers and deadlines (obliged / bare): %s; the chain'"'"'s share (gateway / obliged): %s\n' \
  "$(med "${orr[@]}")" "$(med "${gor[@]}")"
printf 'server CPU per request: bare %.1f us, obliged %.1f us, gateway %.1f us; bare / gateway %s, obliged / gateway %s (medians of round ratios)\n' \
  "$(med "${bare_c[@]}")" "$(med "${obliged_c[@]}")" "$(med "${gw_c[@]}")" "$(med "${cr[@]}")" "$(med "${ocr[@]}")"
if [ -n "${BASE:-}" ]; then
  printf 'against %s (gateway / base, medians of round ratios): rate %s, CPU per request (base / gateway) %s\n' \
    "$BASE" "$(med "${gbr[@]}")" "$(med "${gbc[@]}")"
fi
lines=$(grep -c '"msg":"request"' "$work/gateway.log" || true)
echo "access log lines written: $lines"
# Every measured request must have been answered 200: a refusal is cheaper.
curl -fsS "127.0.0.1:$gw_port/metrics" | awk '/^gateway_http_requests_total/ && !/status="200"/ && !/route="\/healthz"/ && !/route="\/metrics"/ {bad += $2} END {print "answers other than 200: " bad + 0; exit (bad > 0)}'
