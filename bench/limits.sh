#!/usr/bin/env bash
# Cost of the fleet-wide rate limit on lookups: the same gateway binary run
# twice, side by side on one SQLite file with one key — "on" with
# limits.rate enabled and Redis configured (a huge limit, so every request
# is checked and none is denied), "off" with limits.rate.enabled: false —
# and measured alternately, round by round, medians compared, since these
# machines are shared and noisy.
#
#  (a) throughput: wrk (1 thread, 64 connections) against each, printed as
#      requests/s on ÷ off; and, less sensitive to other load on a shared
#      machine, the gateway's CPU time per request (from /proc) off ÷ on,
#      which is what the throughput ratio tends to when the CPU is the
#      limit;
#  (b) added latency at a fixed load: bench/probe, an open-loop probe that
#      sends RATE requests/s on a fixed schedule over CONNS connections and
#      measures each latency from its scheduled send time (no coordinated
#      omission); p50/p99 of each and the difference on − off (target: p99
#      added <= 0.3 ms).
#
# With limits.CachedLimiter in front of the Redis limiter, the hot key of
# these runs is admitted from blocks of units reserved in Redis (one round
# trip per block); without it, every request makes one Redis round trip.
#
# Both gateways are pinned to CPU 0. wrk, the probe and redis-server share
# CPU 1: Redis stands for a server on another machine, so its CPU is not
# charged to the gateway. The script starts its own redis-server (Debian
# package) on a free port and stops everything it started on exit.
#
#   bench/limits.sh [ROUNDS] [WRK_SECONDS] [PROBE_SECONDS]   (defaults 5, 5, 10)
#   RATE=2000 CONNS=16 MODEL=openai/gpt-4o bench/limits.sh
#   GATEWAY_BIN=/path/to/gateway bench/limits.sh    (measure a prebuilt binary)
set -euo pipefail
rounds=${1:-5}
secs=${2:-5}
probe_secs=${3:-10}
rate=${RATE:-2000}
conns=${CONNS:-16}
model=${MODEL:-openai/gpt-4o}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

need() {
  command -v "$1" >/dev/null && return
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq >/dev/null && apt-get install -y -qq "$2" >/dev/null
  else
    echo "bench: $1 is missing (Debian: apt-get install $2)" >&2; exit 1
  fi
}
need wrk wrk
need redis-server redis-server
pin_server=() pin_load=()
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
  pin_server=(taskset -c 0) pin_load=(taskset -c 1)
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/gateway-bench.XXXXXX")
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

if [ -n "${GATEWAY_BIN:-}" ]; then
  cp "$GATEWAY_BIN" "$work/gateway"
else
  go build -o "$work/gateway" ./cmd/gateway
fi
go build -o "$work/probe" ./bench/probe

# shellcheck source=lib.sh
source "$root/bench/lib.sh"

redis_port=$(free_port)
mkdir -p "$work/redis"
"${pin_load[@]}" redis-server --bind 127.0.0.1 --port "$redis_port" --save '' --appendonly no \
  --dir "$work/redis" --daemonize no --logfile "$work/redis/redis.log" >/dev/null 2>&1 </dev/null &
pids+=($!)
for _ in $(seq 50); do
  redis_pings "$redis_port" && break
  sleep 0.1
done

on_port=$(free_port) off_port=$(free_port)
common="metadata: {driver: sqlite, dsn: $work/gateway.db}
storage: {backend: fs, fs: {dir: $work/files}}
catalog: {path: $root/configs/models.yaml}"
cat >"$work/on.yaml" <<YAML
server: {listen: "127.0.0.1:$on_port"}
$common
redis: {url: "redis://127.0.0.1:$redis_port/0", timeout: 200ms, replicas_hint: 1}
limits: {rate: {default: {requests: 1000000000, per: 1s, burst: 1000000000}}}
YAML
cat >"$work/off.yaml" <<YAML
server: {listen: "127.0.0.1:$off_port"}
$common
limits: {rate: {enabled: false}}
YAML
key=$("$work/gateway" keys create --config "$work/off.yaml" --name bench --user bench 2>/dev/null | tail -n 1)
"${pin_server[@]}" "$work/gateway" serve --config "$work/on.yaml" 2>"$work/on.log" &
on_pid=$!
pids+=($!)
"${pin_server[@]}" "$work/gateway" serve --config "$work/off.yaml" 2>"$work/off.log" &
off_pid=$!
pids+=($!)
wait_http "127.0.0.1:$on_port/healthz"
wait_http "127.0.0.1:$off_port/healthz"
on_url="http://127.0.0.1:$on_port/api/v1/model/$model"
off_url="http://127.0.0.1:$off_port/api/v1/model/$model"
auth="Authorization: Bearer $key"
# The "on" gateway must really be deciding through Redis, not locally.
curl -fsS -D "$work/headers" -o /dev/null -H "$auth" "$on_url"
grep -qi '^ratelimit-limit:' "$work/headers" || { echo "bench: the on gateway sent no RateLimit headers" >&2; exit 1; }
curl -fsS "127.0.0.1:$on_port/readyz" | grep -q '"redis":"ok"' || { echo "bench: the on gateway is not on Redis" >&2; exit 1; }

# cpu_ticks PID: user+system CPU time of a process, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
tick_us=$((1000000 / $(getconf CLK_TCK)))
# rps URL PID: "requests/s CPU-µs-per-request" of one wrk run.
rps() {
  local before after
  before=$(cpu_ticks "$2")
  "${pin_load[@]}" wrk -t1 -c64 -d"${secs}s" -H "$auth" "$1" >"$work/wrk.out"
  after=$(cpu_ticks "$2")
  awk -v t=$(((after - before) * tick_us)) '/requests in/ {n = $1} /^Requests\/sec/ {r = $2} END {printf "%s %.2f\n", r, t / n}' "$work/wrk.out"
}
# probe URL: "p50 p99" in microseconds of one open-loop run.
probe() {
  "${pin_load[@]}" "$work/probe" -url "$1" -H "$auth" -rate "$rate" -conns "$conns" -duration "${probe_secs}s" |
    tee -a "$work/probe.log" | awk '{for (i = 1; i <= NF; i++) {split($i, kv, "="); v[kv[1]] = kv[2]}
      if (v["errors"] + v["non2xx"] > 0) {print "probe: errors or non-2xx: " $0 > "/dev/stderr"; exit 1}
      print v["p50_us"], v["p99_us"]}'
}

# Warm up both (connections, the auth cache, Redis's script cache).
rps "$on_url" "$on_pid" >/dev/null
rps "$off_url" "$off_pid" >/dev/null

echo "== (a) lookup throughput, wrk -t1 -c64, ${secs}s per run, limits on (Redis) vs off"
on=() off=() con=() coff=()
for i in $(seq "$rounds"); do
  # Alternate which goes first so drift does not favour one side.
  if ((i % 2)); then read -r a ca < <(rps "$on_url" "$on_pid"); read -r b cb < <(rps "$off_url" "$off_pid")
  else read -r b cb < <(rps "$off_url" "$off_pid"); read -r a ca < <(rps "$on_url" "$on_pid"); fi
  on+=("$a") off+=("$b") con+=("$ca") coff+=("$cb")
  printf 'round %d: on %9.0f rps %6.1f us CPU/req   off %9.0f rps %6.1f us CPU/req   ratio %s\n' \
    "$i" "$a" "$ca" "$b" "$cb" "$(ratio "$a" "$b")"
done
m_on=$(printf '%s\n' "${on[@]}" | median)
m_off=$(printf '%s\n' "${off[@]}" | median)
mc_on=$(printf '%s\n' "${con[@]}" | median)
mc_off=$(printf '%s\n' "${coff[@]}" | median)
printf 'median: on %.0f rps %.1f us CPU/req, off %.0f rps %.1f us CPU/req\n' "$m_on" "$mc_on" "$m_off" "$mc_off"
printf 'throughput ratio (limits on / off): %s  (fix below 0.5)\n' "$(ratio "$m_on" "$m_off")"
printf 'CPU-per-request ratio (off / on):   %s\n' "$(ratio "$mc_off" "$mc_on")"

echo "== (b) added latency at $rate requests/s, open loop, $conns connections, ${probe_secs}s per run"
p50_on=() p99_on=() p50_off=() p99_off=() d50=() d99=()
for i in $(seq "$rounds"); do
  # Assignments, so a failed probe (errors, non-2xx) stops the script.
  if ((i % 2)); then a=$(probe "$on_url"); b=$(probe "$off_url"); else b=$(probe "$off_url"); a=$(probe "$on_url"); fi
  read -r a50 a99 <<<"$a"
  read -r b50 b99 <<<"$b"
  p50_on+=("$a50") p99_on+=("$a99") p50_off+=("$b50") p99_off+=("$b99")
  d50+=($((a50 - b50))) d99+=($((a99 - b99)))
  printf 'round %d: on p50 %5d us p99 %5d us   off p50 %5d us p99 %5d us   added p50 %+5d us p99 %+5d us\n' \
    "$i" "$a50" "$a99" "$b50" "$b99" $((a50 - b50)) $((a99 - b99))
done
printf 'median: on p50 %s us p99 %s us; off p50 %s us p99 %s us\n' \
  "$(printf '%s\n' "${p50_on[@]}" | median)" "$(printf '%s\n' "${p99_on[@]}" | median)" \
  "$(printf '%s\n' "${p50_off[@]}" | median)" "$(printf '%s\n' "${p99_off[@]}" | median)"
printf 'added latency of the limit check (median of paired rounds): p50 %s us, p99 %s us  (target p99 <= 300 us)\n' \
  "$(printf '%s\n' "${d50[@]}" | median)" "$(printf '%s\n' "${d99[@]}" | median)"
lags=$(awk '{for (i = 1; i <= NF; i++) if ($i ~ /^lag_p99_us=/) {sub(/.*=/, "", $i); print $i}}' "$work/probe.log" | median)
echo "probe's own send lag, p99 (median over runs): ${lags} us"
if grep -q 'redis unavailable' "$work/on.log"; then echo "warning: the on gateway fell back to local limits during the run" >&2; fi
