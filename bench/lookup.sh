#!/usr/bin/env bash
# Lookup throughput of the gateway against a bare net/http server writing
# the same bytes. GET /api/v1/model/... goes through the full middleware
# chain (request id, access log, metrics, auth, rate limiting; the limits are
# raised so nothing is refused, and RATE=off turns them off). The
# server is pinned to CPU 0, wrk (1 thread, 64 connections) to CPU 1; the
# two servers alternate round by round and the medians are compared, since
# these machines are shared and noisy.
#
#   bench/lookup.sh [ROUNDS] [SECONDS]      (defaults 5 rounds of 5 s)
set -euo pipefail
rounds=${1:-5}
secs=${2:-5}
model=${MODEL:-openai/gpt-4o}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

if ! command -v wrk >/dev/null; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq >/dev/null && apt-get install -y -qq wrk >/dev/null
  else
    echo "bench: wrk is missing (Debian: apt-get install wrk)" >&2; exit 1
  fi
fi
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

port() { echo $((20000 + RANDOM % 30000)); }
gw_port=$(port) bare_port=$(port)
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
"${pin_server[@]}" "$work/gateway" serve --config "$work/gateway.yaml" 2>"$work/gateway.log" &
pids+=($!)
for _ in $(seq 100); do curl -fsS "127.0.0.1:$gw_port/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
curl -fsS -H "Authorization: Bearer $key" "127.0.0.1:$gw_port/api/v1/model/$model" >"$work/body.json"
"${pin_server[@]}" "$work/bare" -addr "127.0.0.1:$bare_port" -body "$work/body.json" 2>/dev/null &
pids+=($!)
for _ in $(seq 100); do curl -fsS "127.0.0.1:$bare_port/" >/dev/null 2>&1 && break; sleep 0.1; done

# rps URL [HEADER]: requests per second of one wrk run.
rps() {
  local args=(-t1 -c64 -d"${secs}s" --latency)
  [ $# -gt 1 ] && args+=(-H "$2")
  "${pin_load[@]}" wrk "${args[@]}" "$1" | awk '/^Requests\/sec/ {print $2}'
}
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

# Warm both up (JIT-free Go, but caches, connections, the auth cache).
rps "http://127.0.0.1:$bare_port/api/v1/model/$model" >/dev/null
rps "http://127.0.0.1:$gw_port/api/v1/model/$model" "Authorization: Bearer $key" >/dev/null

bare=() gw=()
for i in $(seq "$rounds"); do
  b=$(rps "http://127.0.0.1:$bare_port/api/v1/model/$model")
  g=$(rps "http://127.0.0.1:$gw_port/api/v1/model/$model" "Authorization: Bearer $key")
  bare+=("$b") gw+=("$g")
  printf 'round %d: bare %10.0f rps   gateway %10.0f rps   ratio %.3f\n' "$i" "$b" "$g" "$(awk -v g="$g" -v b="$b" 'BEGIN {print g / b}')"
done
mb=$(printf '%s\n' "${bare[@]}" | median)
mg=$(printf '%s\n' "${gw[@]}" | median)
printf 'median: bare %.0f rps, gateway %.0f rps\n' "$mb" "$mg"
printf 'lookup ratio (gateway / bare): %.3f  (target >= 0.85)\n' "$(awk -v g="$mg" -v b="$mb" 'BEGIN {print g / b}')"
lines=$(grep -c '"msg":"request"' "$work/gateway.log" || true)
echo "access log lines written: $lines"
# Every measured request must have been answered 200: a refusal is cheaper.
curl -fsS "127.0.0.1:$gw_port/metrics" | awk '/^gateway_http_requests_total/ && !/status="200"/ && !/route="\/healthz"/ && !/route="\/metrics"/ {bad += $2} END {print "answers other than 200: " bad + 0; exit (bad > 0)}'
