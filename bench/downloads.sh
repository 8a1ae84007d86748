#!/usr/bin/env bash
# Download throughput and memory of the gateway (GET /api/v1/files/{id}/content)
# on the fs backend, against bench/servefile — net/http's http.ServeContent
# of the very same stored file, nothing else — in interleaved rounds, medians
# compared (these machines are shared; their speed drifts within a run).
#
# 1. Throughput: each round downloads the file once from each contender, in
#    an order rotated every round, with curl to /dev/null (MB = 10^6 bytes/s,
#    curl's own measure). The target: gateway >= 0.8x servefile.
# 2. Peak RSS (VmHWM) of the gateway with CONCURRENCY downloads at once,
#    printed as MiB per concurrent download above idle (target <= 2), on fs
#    and, with BACKENDS="fs s3", on S3 (a local versitygw built from
#    deploy/testenv/go.mod, as bench/uploads.sh does).
#
#   bench/downloads.sh
#   ROUNDS=9 SIZE=104857600 CONCURRENCY=8 BACKENDS="fs s3" bench/downloads.sh
#   KEEP=1 bench/downloads.sh   # keep the run's directory
#
# All data lives under .testenv/bench-downloads.* (the disk the gateway
# would use) and is removed on exit, as is every process started here.
set -euo pipefail
shopt -s inherit_errexit
rounds=${ROUNDS:-9}
size=${SIZE:-104857600}
concurrency=${CONCURRENCY:-8}
backends=${BACKENDS:-fs}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# shellcheck source=lib.sh
source "$root/bench/lib.sh"
bench_dir downloads
state=$work

echo "building..." >&2
go build -o "$state/exe/gateway" ./cmd/gateway
go build -o "$state/exe/servefile" ./bench/servefile

# ---- the gateway, with one file of SIZE bytes uploaded
gw_port=$(free_port)
cat >"$state/gateway.yaml" <<YAML
server: {listen: "127.0.0.1:$gw_port"}
log: {level: warn, format: json}
metadata: {driver: sqlite, dsn: $state/gateway.db}
storage: {backend: fs, fs: {dir: $state/files}}
catalog: {path: $root/configs/models.yaml}
files: {downloadable: true}
limits:
  rate:
    default: {requests: 1000000, per: 1s, burst: 1000000}
    files: {requests: 1000000, per: 1s, burst: 1000000}
YAML
export GATEWAY_BYOK_ENCRYPTION_KEY=${GATEWAY_BYOK_ENCRYPTION_KEY:-$(head -c 32 /dev/urandom | base64)}
key=$("$state/exe/gateway" keys create --config "$state/gateway.yaml" --name bench --user bench | tail -n 1)
"$state/exe/gateway" serve --config "$state/gateway.yaml" >"$state/gateway.log" 2>&1 </dev/null &
gw_pid=$!
pids+=("$gw_pid")
wait_http "http://127.0.0.1:$gw_port/healthz"

{ printf '%%PDF-1.7\n'; head -c "$((size - 9))" /dev/urandom; } >"$state/upload.pdf"
id=$(curl -sS -H "Authorization: Bearer $key" -F "file=@$state/upload.pdf;filename=bench.pdf" \
  "http://127.0.0.1:$gw_port/api/v1/files" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
[ -n "$id" ] || { echo "bench: upload failed" >&2; exit 1; }
stored=$(find "$state/files" -type f -name "$id")
rm -f "$state/upload.pdf"
idle=$(kib "$gw_pid" VmRSS)

sf_port=$(free_port)
"$state/exe/servefile" -addr "127.0.0.1:$sf_port" -file "$stored" >"$state/servefile.log" 2>&1 </dev/null &
pids+=("$!")
wait_http "http://127.0.0.1:$sf_port/"

gw_url="http://127.0.0.1:$gw_port/api/v1/files/$id/content"
sf_url="http://127.0.0.1:$sf_port/"
get() { curl -sS -o /dev/null -w '%{speed_download} %{size_download}\n' "$@"; }
mbps() {
  local out
  out=$(get "$@")
  [ "${out#* }" = "$size" ] || { echo "bench: short download ($out)" >&2; exit 1; }
  awk -v b="${out% *}" 'BEGIN {printf "%.1f", b / 1e6}'
}

echo "== download throughput, $size bytes, $rounds rounds (MB/s)"
gw=() sf=()
get -H "Authorization: Bearer $key" "$gw_url" >/dev/null # warm the page cache
for r in $(seq "$rounds"); do
  if [ $((r % 2)) = 1 ]; then
    gw+=("$(mbps -H "Authorization: Bearer $key" "$gw_url")"); sf+=("$(mbps "$sf_url")")
  else
    sf+=("$(mbps "$sf_url")"); gw+=("$(mbps -H "Authorization: Bearer $key" "$gw_url")")
  fi
done
gw_med=$(printf '%s\n' "${gw[@]}" | median)
sf_med=$(printf '%s\n' "${sf[@]}" | median)
printf 'gateway:   %s MB/s (runs: %s)\n' "$gw_med" "${gw[*]}"
printf 'servefile: %s MB/s (runs: %s)\n' "$sf_med" "${sf[*]}"
printf 'ratio gateway/servefile: %s (target >= 0.8)\n' "$(ratio "$gw_med" "$sf_med")"

# rss_report NAME PID URL IDLE_KIB: peak RSS of PID while CONCURRENCY
# downloads of URL run at once.
rss_report() {
  local name=$1 pid=$2 url=$3 idle=$4 reset=0 peak=0 now p
  echo "== $name: gateway RSS with $concurrency concurrent downloads"
  # VmHWM counts only from here when it can be reset; else RSS is sampled.
  echo 5 >"/proc/$pid/clear_refs" 2>/dev/null && reset=1
  # Each download is held to 50 MB/s so all of them are in flight together.
  local dls=()
  for i in $(seq "$concurrency"); do
    curl -sS -o /dev/null -w '%{http_code} %{size_download}' --limit-rate 50M \
      -H "Authorization: Bearer $key" "$url" >"$state/dl-$name-$i" &
    dls+=("$!")
  done
  running() { local q; for q in "${dls[@]}"; do kill -0 "$q" 2>/dev/null && return 0; done; return 1; }
  while running; do
    now=$(kib "$pid" VmRSS)
    if [ "$now" -gt "$peak" ]; then peak=$now; fi
    sleep 0.1
  done
  for p in "${dls[@]}"; do wait "$p"; done
  for i in $(seq "$concurrency"); do
    [ "$(cat "$state/dl-$name-$i")" = "200 $size" ] || { echo "bench: download $i: $(cat "$state/dl-$name-$i")" >&2; exit 1; }
  done
  if [ "$reset" = 1 ]; then
    now=$(kib "$pid" VmHWM)
    if [ "$now" -gt "$peak" ]; then peak=$now; fi
  fi
  awk -v n="$name" -v i="$idle" -v p="$peak" -v c="$concurrency" 'BEGIN {
    printf "%s: idle %.1f MiB, peak %.1f MiB: %.2f MiB per concurrent download above idle (target <= 2)\n", n, i/1024, p/1024, (p-i)/1024/c }'
}
rss_report fs "$gw_pid" "$gw_url" "$idle"

case " $backends " in
  *" s3 "*)
    # shellcheck source=../deploy/testenv/lib.sh
    source "$root/deploy/testenv/lib.sh"
    # shellcheck source=../deploy/testenv/s3.sh
    source "$root/deploy/testenv/s3.sh"
    start_s3 "$state" >/dev/null
    while read -r p; do pids+=("$p"); done <"$state/pids"
    export AWS_ACCESS_KEY_ID=$GATEWAY_TEST_S3_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$GATEWAY_TEST_S3_SECRET_KEY
    export AWS_EC2_METADATA_DISABLED=true
    go build -o "$state/exe/uploader" ./bench/uploader
    "$state/exe/uploader" bucket -endpoint "$GATEWAY_TEST_S3_ENDPOINT" -bucket bench
    s3_port=$(free_port)
    sed -e "s|listen: \"127.0.0.1:$gw_port\"|listen: \"127.0.0.1:$s3_port\"|" \
      -e "s|dsn: $state/gateway.db|dsn: $state/gateway-s3.db|" \
      -e "s|storage: .*|storage: {backend: s3, s3: {bucket: bench, endpoint: \"$GATEWAY_TEST_S3_ENDPOINT\", path_style: true}}|" \
      "$state/gateway.yaml" >"$state/gateway-s3.yaml"
    key=$("$state/exe/gateway" keys create --config "$state/gateway-s3.yaml" --name bench --user bench | tail -n 1)
    "$state/exe/gateway" serve --config "$state/gateway-s3.yaml" >"$state/gateway-s3.log" 2>&1 </dev/null &
    s3_pid=$!
    pids+=("$s3_pid")
    wait_http "http://127.0.0.1:$s3_port/healthz"
    { printf '%%PDF-1.7\n'; head -c "$((size - 9))" /dev/urandom; } >"$state/upload.pdf"
    id=$(curl -sS -H "Authorization: Bearer $key" -F "file=@$state/upload.pdf;filename=bench.pdf" \
      "http://127.0.0.1:$s3_port/api/v1/files" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
    [ -n "$id" ] || { echo "bench: S3 upload failed" >&2; exit 1; }
    rm -f "$state/upload.pdf"
    s3_idle=$(kib "$s3_pid" VmRSS)
    rss_report s3 "$s3_pid" "http://127.0.0.1:$s3_port/api/v1/files/$id/content" "$s3_idle"
    ;;
esac
