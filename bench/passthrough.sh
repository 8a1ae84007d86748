#!/usr/bin/env bash
# CPU cost of a provider passthrough: GET /api/v1/files?provider=openai&
# workspace_id=W through the real gateway binary on the embedded default
# (SQLite), with the workspace's own OpenAI key stored over /byok, against
# the OpenAI Files API stand-in of backends/providers/providertest run as a process
# of its own (bench/standin, holding FILES files, all listed in one page).
# Every call is the whole stack: auth, rate limit, spend guard, the
# workspace, the stored key, one upstream list call, the answer encoded.
#
# wrk (1 thread, 64 connections) drives the gateway. Each round reads, from
# /proc/PID/stat, the CPU time (user + system) that the gateway and the
# stand-in spent, per request: the stand-in's is the baseline of the same
# run, the cost of answering the very same call upstream, which a shared
# machine's other load disturbs as it does the gateway's. The issue's goal
# is at most 80 us of gateway CPU per call.
#
# A second baseline, the floor, is bench/relay: a bare net/http server that
# answers each request by fetching the same page from the stand-in with
# net/http's client and copying its bytes back. Whatever a passthrough on
# net/http costs before it does anything of its own (syscalls, the
# server's and the client's machinery) shows there, so gateway - relay is
# what the gateway adds. It is measured in the same rounds.
#
# BASE_BIN names a second gateway binary (say, built from main) to measure
# in the same run: it serves the same SQLite file beside the first, and the
# two alternate round by round, so a before/after comparison shares the
# machine's weather. Its figures are printed beside the first's.
#
# The gateway is pinned to CPU 0 and wrk with the stand-in to CPU 1 (PIN=0
# leaves them unpinned; a pinned gateway runs with GOMAXPROCS=1).
#
#   bench/passthrough.sh [ROUNDS] [SECONDS]     (defaults 5 rounds of 5 s)
#   FILES=20 bench/passthrough.sh               (files listed per call)
#   GATEWAY_BIN=/path/gateway BASE_BIN=/path/gateway-main bench/passthrough.sh
#   KEEP=1 bench/passthrough.sh                 (keep configs and logs)
set -euo pipefail
rounds=${1:-5}
secs=${2:-5}
nfiles=${FILES:-20}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# shellcheck source=lib.sh
source "$root/bench/lib.sh"
need wrk
pin_server=() pin_load=()
if [ "${PIN:-1}" = 1 ] && [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
  pin_server=(taskset -c 0) pin_load=(taskset -c 1)
fi

bench_dir passthrough

if [ -n "${GATEWAY_BIN:-}" ]; then
  cp "$GATEWAY_BIN" "$work/gateway"
else
  go build -o "$work/gateway" ./cmd/gateway
fi
go build -o "$work/standin" ./bench/standin
go build -o "$work/relay" ./bench/relay


"${pin_load[@]}" "$work/standin" -provider openai -files "$nfiles" >"$work/standin.url" 2>"$work/standin.log" &
standin_pid=$!
pids+=("$standin_pid")
for _ in $(seq 100); do [ -s "$work/standin.url" ] && break; sleep 0.1; done
standin_url=$(head -n 1 "$work/standin.url")
[ -n "$standin_url" ] || { echo "bench: the stand-in did not start" >&2; exit 1; }

# config PORT: a gateway's configuration on the run's SQLite file.
config() {
  standin_config "$1" "$standin_url"
  cat <<YAML
limits:
  rate:
    default: {requests: 100000000, per: 1s, burst: 100000000}
YAML
}

# start NAME BIN: runs a gateway, sets its port and pid in NAME_port and
# NAME_pid.
start() {
  local port
  port=$(free_port)
  config "$port" >"$work/$1.yaml"
  "${pin_server[@]}" "$2" serve --config "$work/$1.yaml" 2>"$work/$1.log" &
  pids+=($!)
  printf -v "$1_pid" '%s' $!
  printf -v "$1_port" '%s' "$port"
  wait_http "http://127.0.0.1:$port/healthz"
}

mgmt=$("$work/gateway" keys create --config <(config 0) --name bench --user bench --management 2>/dev/null | tail -n 1)
start gw "$work/gateway"
if [ -n "${BASE_BIN:-}" ]; then
  cp "$BASE_BIN" "$work/gateway-base"
  start base "$work/gateway-base"
fi

relay_port=$(free_port)
"${pin_server[@]}" "$work/relay" -addr "127.0.0.1:$relay_port" -upstream "$standin_url" \
  -key sk-test-openai-4f0c9a7e2b1d 2>"$work/relay.log" &
relay_pid=$!
pids+=("$relay_pid")
wait_http "http://127.0.0.1:$relay_port/"

auth="Authorization: Bearer $mgmt"
api="http://127.0.0.1:$gw_port/api/v1"
ws=$(byok_workspace "$api" "$mgmt" Passthrough sk-test-openai-4f0c9a7e2b1d)
path="/api/v1/files?provider=openai&workspace_id=$ws"
got=$(curl -fsS -H "$auth" "http://127.0.0.1:$gw_port$path" | { grep -o '"id":"file-' || true; } | wc -l)
if [ "$got" != "$nfiles" ]; then
  echo "bench: the gateway listed $got files, the stand-in holds $nfiles" >&2; exit 1
fi

# run PID URL: "rps gateway_us standin_us" of one wrk run: requests per
# second, and the CPU time (user + system, from /proc/PID/stat) per request
# of the gateway PID and of the stand-in, in microseconds.
ticks=$(getconf CLK_TCK)
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
run() {
  local g0 g1 s0 s1 out
  g0=$(cpu "$1") s0=$(cpu "$standin_pid")
  out=$("${pin_load[@]}" wrk -t1 -c64 -d"${secs}s" -H "$auth" "$2")
  g1=$(cpu "$1") s1=$(cpu "$standin_pid")
  echo "$out" | awk -v g=$((g1 - g0)) -v s=$((s1 - s0)) -v t="$ticks" '
    /requests in/ {n = $1} /^Requests\/sec/ {r = $2}
    END {printf "%s %.1f %.1f\n", r, (n > 0 ? g / t * 1e6 / n : 0), (n > 0 ? s / t * 1e6 / n : 0)}'
}

contenders=(gw)
[ -n "${BASE_BIN:-}" ] && contenders+=(base)
contenders+=(relay)
declare -A url rps gcpu scpu ratios
for c in "${contenders[@]}"; do
  port_var=${c}_port
  url[$c]="http://127.0.0.1:${!port_var}$path"
  pid_var=${c}_pid
  run "${!pid_var}" "${url[$c]}" >/dev/null # warm-up: connections, caches
done
for i in $(seq "$rounds"); do
  order=("${contenders[@]}")
  ((i % 2)) || order=($(printf '%s\n' "${contenders[@]}" | tac))
  line="round $i:"
  for c in "${order[@]}"; do
    pid_var=${c}_pid
    read -r r g s < <(run "${!pid_var}" "${url[$c]}")
    rps[$c]+="$r " gcpu[$c]+="$g " scpu[$c]+="$s " ratios[$c]+="$(ratio "$g" "$s") "
    line+=$(printf '  %-5s %5.0f rps, %6.1f us/req, stand-in %5.1f' "$c" "$r" "$g" "$s")
  done
  echo "$line"
done
med() { tr ' ' '\n' | grep . | median; }
for c in "${contenders[@]}"; do
  name=gateway
  [ "$c" = base ] && name="base ($BASE_BIN)"
  [ "$c" = relay ] && name="relay (the floor)"
  printf '%s: median %.0f rps; CPU per passthrough %.1f us, the stand-in'"'"'s %.1f us; / stand-in %s (median of round ratios)\n' \
    "$name" "$(med <<<"${rps[$c]}")" "$(med <<<"${gcpu[$c]}")" "$(med <<<"${scpu[$c]}")" "$(med <<<"${ratios[$c]}")"
done
printf 'gateway / relay: %s (medians)\n' "$(ratio "$(med <<<"${gcpu[gw]}")" "$(med <<<"${gcpu[relay]}")")"
echo "goal: gateway <= 80 us per passthrough call at 64 connections"
# Every measured request must have been answered 200: a refusal is cheaper.
for c in "${contenders[@]}"; do
  [ "$c" = relay ] && continue
  port_var=${c}_port
  curl -fsS "127.0.0.1:${!port_var}/metrics" | awk -v c="$c" '/^gateway_http_requests_total/ && !/status="20[01]"/ && !/status="499"/ && !/route="\/healthz"/ && !/route="\/metrics"/ {bad += $2} END {print c ": answers other than 200: " bad + 0; exit (bad > 0)}'
done
