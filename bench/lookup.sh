#!/usr/bin/env bash
# Lookup throughput of the gateway against a bare net/http server writing
# the same bytes. GET /api/v1/model/... goes through the full middleware
# chain (request id, access log, metrics, auth, rate limiting; the limits are
# raised so nothing is refused, and RATE=off turns them off). The
# server is pinned to CPU 0, wrk (1 thread, 64 connections) to CPU 1; the
# two servers alternate round by round and the medians are compared, since
# these machines are shared and noisy.
#
# Each round also reads the server's CPU time per request, which the other
# load of a shared machine disturbs far less than the rate.
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

gw_port=$(free_port) bare_port=$(free_port)
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
gw_pid=$!
pids+=("$gw_pid")
wait_http "http://127.0.0.1:$gw_port/healthz"
curl -fsS -H "Authorization: Bearer $key" "127.0.0.1:$gw_port/api/v1/model/$model" >"$work/body.json"
"${pin_server[@]}" "$work/bare" -addr "127.0.0.1:$bare_port" -body "$work/body.json" 2>/dev/null &
bare_pid=$!
pids+=("$bare_pid")
wait_http "http://127.0.0.1:$bare_port/"

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
gw_url="http://127.0.0.1:$gw_port/api/v1/model/$model"
auth="Authorization: Bearer $key"
# Warm both up (JIT-free Go, but caches, connections, the auth cache).
run "$bare_pid" "$bare_url" >/dev/null
run "$gw_pid" "$gw_url" "$auth" >/dev/null

bare=() gw=() rr=() bcpu=() gcpu=() cr=()
for i in $(seq "$rounds"); do
  # The order alternates, so neither server always runs first.
  if ((i % 2)); then
    read -r b bc < <(run "$bare_pid" "$bare_url")
    read -r g gc < <(run "$gw_pid" "$gw_url" "$auth")
  else
    read -r g gc < <(run "$gw_pid" "$gw_url" "$auth")
    read -r b bc < <(run "$bare_pid" "$bare_url")
  fi
  bare+=("$b") gw+=("$g") rr+=("$(ratio "$g" "$b")")
  bcpu+=("$bc") gcpu+=("$gc") cr+=("$(ratio "$bc" "$gc")")
  printf 'round %d: bare %8.0f rps %6.1f us/req   gateway %8.0f rps %6.1f us/req   ratio %s (cpu %s)\n' \
    "$i" "$b" "$bc" "$g" "$gc" "${rr[-1]}" "${cr[-1]}"
done
mb=$(printf '%s\n' "${bare[@]}" | median)
mg=$(printf '%s\n' "${gw[@]}" | median)
# The headline is the median of the round ratios: each round's two runs
# share the machine's weather, while the medians of each side may come from
# different rounds (one noisy round can move one of them alone).
printf 'median: bare %.0f rps, gateway %.0f rps; ratio of the medians %s\n' "$mb" "$mg" "$(ratio "$mg" "$mb")"
printf 'lookup ratio (gateway / bare, median of round ratios): %s  (target >= 0.85)\n' "$(printf '%s\n' "${rr[@]}" | median)"
mbc=$(printf '%s\n' "${bcpu[@]}" | median)
mgc=$(printf '%s\n' "${gcpu[@]}" | median)
printf 'server CPU per request: bare %.1f us, gateway %.1f us; bare / gateway %s (median of round ratios %s)\n' \
  "$mbc" "$mgc" "$(ratio "$mbc" "$mgc")" "$(printf '%s\n' "${cr[@]}" | median)"
lines=$(grep -c '"msg":"request"' "$work/gateway.log" || true)
echo "access log lines written: $lines"
# Every measured request must have been answered 200: a refusal is cheaper.
curl -fsS "127.0.0.1:$gw_port/metrics" | awk '/^gateway_http_requests_total/ && !/status="200"/ && !/route="\/healthz"/ && !/route="\/metrics"/ {bad += $2} END {print "answers other than 200: " bad + 0; exit (bad > 0)}'
