#!/usr/bin/env bash
# Upload forwarding to a provider: POST /api/v1/files?provider=openai through
# the real gateway binary on the embedded default, with the workspace's own
# OpenAI key stored over /byok, to the OpenAI Files API stand-in of
# backends/providers/providertest run as a process of its own (bench/standin, which
# streams each upload to a temporary file, or with UPSTREAM=discard parses
# each as it arrives and keeps none of its bytes: an upstream as fast as the
# loopback, which shows the gateway's own cost per byte).
#
# Every upload is one file of SIZE bytes with a purpose field, sent by
# bench/uploader with an exact Content-Length. The contenders, rotated every
# round, each one upload at a time and then PARALLEL at once:
#   - direct: the uploader straight to the stand-in, the baseline of the
#     same run (what the stand-in and the loopback can take);
#   - gateway: the same upload through the gateway, which checks it and
#     streams it on to the stand-in as it arrives;
#   - other: any other forwarding proxy to compare, when OTHER_URL is set:
#     the uploader posts there with the OTHER_HEADERS given (separated by
#     ';'), where {standin} stands for the stand-in's base URL, so that the
#     proxy can be told where to forward.
# It prints MB/s (10^6 bytes) per round and the medians, each as a ratio to
# direct, and the gateway's CPU per GB forwarded, read from /proc.
#
#   bench/forward.sh
#   ROUNDS=7 SIZE=104857600 PARALLEL=8 bench/forward.sh
#   OTHER_URL=http://127.0.0.1:8787/v1/files \
#     OTHER_HEADERS='x-provider: openai;x-upstream: {standin}' bench/forward.sh
#   UPSTREAM=discard bench/forward.sh
#   KEEP=1 bench/forward.sh   (keep configs and logs)
set -euo pipefail
rounds=${ROUNDS:-5}
size=${SIZE:-104857600}
parallel=${PARALLEL:-8}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# shellcheck source=lib.sh
source "$root/bench/lib.sh"

bench_dir forward

go build -o "$work/gateway" ./cmd/gateway
go build -o "$work/standin" ./bench/standin
go build -o "$work/uploader" ./bench/uploader

# The stand-in keeps what it receives in temporary files: on this disk,
# not a tmpfs, and deleted after each measurement; or, with
# UPSTREAM=discard, nothing.
standin_args=(-provider openai -files 0)
case ${UPSTREAM:-file} in
  file) ;;
  discard) standin_args+=(-discard) ;;
  *) echo "bench: UPSTREAM is file or discard, not ${UPSTREAM}" >&2; exit 2 ;;
esac
TMPDIR=$work "$work/standin" "${standin_args[@]}" >"$work/standin.url" 2>"$work/standin.log" &
pids+=($!)
for _ in $(seq 100); do [ -s "$work/standin.url" ] && break; sleep 0.1; done
standin_url=$(head -n 1 "$work/standin.url")
[ -n "$standin_url" ] || { echo "bench: the stand-in did not start" >&2; exit 1; }
upstream_key=sk-test-openai-4f0c9a7e2b1d

port=$(free_port)
config() {
  standin_config "$port" "$standin_url"
  cat <<YAML
limits:
  workspace_storage_bytes: 1099511627776
  rate:
    default: {requests: 100000000, per: 1s, burst: 100000000}
    files: {requests: 100000000, per: 1s, burst: 100000000}
YAML
}
config >"$work/gateway.yaml"
mgmt=$("$work/gateway" keys create --config "$work/gateway.yaml" --name bench --user bench --management 2>/dev/null | tail -n 1)
"$work/gateway" serve --config "$work/gateway.yaml" 2>"$work/gateway.log" &
gw_pid=$!
pids+=("$gw_pid")
wait_http "http://127.0.0.1:$port/healthz"

auth="Authorization: Bearer $mgmt"
api="http://127.0.0.1:$port/api/v1"
ws=$(byok_workspace "$api" "$mgmt" Forward "$upstream_key")

contenders=(direct gateway)
[ -n "${OTHER_URL:-}" ] && contenders+=(other)
# upload NAME C: the uploader's line for C uploads at once to contender NAME.
upload() {
  local -a args=(upload -size "$size" -c "$2" -purpose assistants)
  case $1 in
    direct) args+=(-url "$standin_url/files" -key "$upstream_key") ;;
    gateway) args+=(-url "$api/files?provider=openai&workspace_id=$ws" -key "$mgmt") ;;
    other)
      args+=(-url "$OTHER_URL" -key "$upstream_key")
      local h
      IFS=';' read -ra hs <<<"${OTHER_HEADERS:-}"
      for h in "${hs[@]}"; do [ -n "$h" ] && args+=(-header "${h//\{standin\}/$standin_url}"); done
      ;;
  esac
  "$work/uploader" "${args[@]}"
}

# clear: deletes every file the stand-in holds.
clear() {
  local id
  for id in $(curl -fsS -H "Authorization: Bearer $upstream_key" "$standin_url/files?limit=10000" |
    { grep -o '"id":"file-[^"]*"' || true; } | cut -d'"' -f4); do
    curl -fsS -o /dev/null -X DELETE -H "Authorization: Bearer $upstream_key" "$standin_url/files/$id"
  done
}

for c in "${contenders[@]}"; do upload "$c" 1 >/dev/null; done # warm-up: connections, page cache
clear
declare -A single multi
gw_ticks1=0 gw_ticks8=0 gw_bytes1=0 gw_bytes8=0
for i in $(seq "$rounds"); do
  order=("${contenders[@]}")
  ((i % 2)) || order=($(printf '%s\n' "${contenders[@]}" | tac))
  line="round $i:"
  for c in "${order[@]}"; do
    for n in 1 "$parallel"; do
      t0=$(cpu_ticks "$gw_pid")
      out=$(upload "$c" "$n")
      t1=$(cpu_ticks "$gw_pid")
      clear
      mbps=$(field mbps <<<"$out")
      if [ "$c" = gateway ]; then
        if [ "$n" = 1 ]; then
          gw_ticks1=$((gw_ticks1 + t1 - t0)) gw_bytes1=$((gw_bytes1 + size))
        else
          gw_ticks8=$((gw_ticks8 + t1 - t0)) gw_bytes8=$((gw_bytes8 + size * n))
        fi
      fi
      if [ "$n" = 1 ]; then single[$c]+="$mbps "; else multi[$c]+="$mbps "; fi
      line+=$(printf '  %s x%s %6.1f MB/s' "$c" "$n" "$mbps")
    done
  done
  echo "$line"
done
med() { tr ' ' '\n' | grep . | median; }
for c in "${contenders[@]}"; do
  s=$(med <<<"${single[$c]}") m=$(med <<<"${multi[$c]}")
  printf '%-8s one at a time %6.1f MB/s (%s x direct), %s at once %6.1f MB/s (%s x direct)\n' "$c" \
    "$s" "$(ratio "$s" "$(med <<<"${single[direct]}")")" "$parallel" "$m" "$(ratio "$m" "$(med <<<"${multi[direct]}")")"
done
if [ -n "${OTHER_URL:-}" ]; then
  printf 'gateway / other: one at a time %s, %s at once %s (medians)\n' \
    "$(ratio "$(med <<<"${single[gateway]}")" "$(med <<<"${single[other]}")")" "$parallel" \
    "$(ratio "$(med <<<"${multi[gateway]}")" "$(med <<<"${multi[other]}")")"
fi
printf 'gateway CPU per GB forwarded: one at a time %s s, %s at once %s s\n' \
  "$(cpu_per_gb "$gw_ticks1" "$gw_bytes1")" "$parallel" "$(cpu_per_gb "$gw_ticks8" "$gw_bytes8")"
