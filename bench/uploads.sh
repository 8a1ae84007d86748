#!/usr/bin/env bash
# Upload throughput and memory of the gateway (POST /api/v1/files), on the
# fs backend and on S3 (a local versitygw), against baselines run in the
# same script, round by round, medians compared — these machines are shared
# and their disk speed drifts within a run.
#
# Every upload is one file of SIZE bytes ("%PDF-1.7\n" and pseudo-random
# bytes, generated on the fly by bench/uploader and sent as multipart with an
# exact Content-Length). The default SIZE is the gateway's max_file_bytes.
#
# 1. Throughput (MB = 10^6 bytes/s, one upload at a time, `sync` before each
#    timed write, the order of the contenders rotated every round):
#    - gateway: the full gateway, answering once the file is fsynced, renamed
#      into place and recorded in SQLite;
#    - sink: bench/sink, net/http + MultipartReader -> file + fsync, nothing
#      else, fed by the same client: the fair baseline (DESIGN.md §9);
#    - dd: "buffered dd" means dd writing SIZE bytes through the page cache
#      (no O_DIRECT) with conv=fsync, so the bytes are on disk when it ends,
#      as they are when the gateway answers: `dd if=/dev/zero bs=1M
#      iflag=count_bytes count=SIZE conv=fsync`. Zeros, since ext4 neither
#      compresses nor deduplicates; dd's own timing (fsync included). The
#      issue's target is gateway >= 0.7x of it;
#    - dd-cache: the same dd without conv=fsync, for information only: it
#      measures the page cache (GB/s), not the disk.
#    The gateway's CPU (user + system, from /proc/PID/stat) per GB uploaded
#    is printed for one upload at a time and for PARALLEL at once: a cost
#    paid per read rather than per byte shows as a higher figure for the
#    single stream.
# 2. Peak RSS (VmHWM) of the gateway, a fresh process: idle once it is
#    ready (before a small warm-up upload, which may leave an S3 part buffer
#    pooled), then with 1, 8 and 32 concurrent uploads (VmHWM reset
#    with `echo 5 > /proc/PID/clear_refs` before each phase, or the gateway
#    restarted when that is not permitted), printed as MiB per concurrent
#    upload above idle (target <= 16 on fs, <= 20 on S3, where a lone
#    upload holds three 5 MiB part buffers; idle is the lowest RSS seen at rest,
#    the conservative choice: start-up garbage is returned and pages of the
#    binary dropped over time). The sink's is printed beside it.
#    To see where memory goes, GODEBUG=gctrace=1 KEEP=1 bench/uploads.sh
#    leaves the heap size of every GC in the gateway's log.
# 3. The same on the S3 backend against versitygw, built from
#    deploy/testenv/go.mod (cached in .testenv/bin): gateway vs the sink, and
#    vs s3put — bench/uploader sending the same file straight to versitygw
#    the way the gateway's S3 backend does (5 MiB multipart parts, CRC32,
#    two parts in flight) —
#    so the gateway's own share of the S3 path shows apart from the S3
#    server's; then the gateway's RSS.
#
# Limits in the bench config are raised so nothing is refused. Uploaded
# files are deleted after every measurement. All data lives under
# .testenv/bench-uploads.* in the repository (the disk the gateway would
# use, never a tmpfs /tmp) and is removed on exit, as is every process
# started here.
#
#   bench/uploads.sh
#   ROUNDS=7 SIZE=104857600 CONCURRENCY="1 8 32" PARALLEL=8 BACKENDS="fs s3" bench/uploads.sh
#   PIN=1 bench/uploads.sh    # servers on CPU 0, client (and versitygw) on CPU 1
#   KEEP=1 bench/uploads.sh   # keep the run's directory (configs, logs, SQLite)
#   S3_TLS=1 bench/uploads.sh # versitygw over https, with a certificate made for the run
#
# Defaults: ROUNDS=7, SIZE=104857600, CONCURRENCY="1 8 32", BACKENDS="fs s3", S3_TLS=0,
# PIN=0 (unpinned: an upload keeps one core busy in the server and another
# in the kernel; pinned runs measured lower and noisier here). About 2.5
# minutes here, plus a first build (~1.5 minutes cold, versitygw once).
set -euo pipefail
shopt -s inherit_errexit
rounds=${ROUNDS:-7}
size=${SIZE:-104857600}
concurrency=${CONCURRENCY:-1 8 32}
parallel=${PARALLEL:-8}
backends=${BACKENDS:-fs s3}
s3_tls=${S3_TLS:-0}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

pin_server=() pin_load=()
if [ "${PIN:-0}" = 1 ] && [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
  pin_server=(taskset -c 0) pin_load=(taskset -c 1)
fi

# shellcheck source=lib.sh
source "$root/bench/lib.sh"
bench_dir uploads
state=$work
bench_bulky=(files sink dd s3) # KEEP=1 keeps configs, logs and SQLite, not the data
# stop PID: end one process started here and forget it, so cleanup never
# signals a PID the system has since given to someone else.
stop() {
  local p rest=()
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
  for p in "${pids[@]}"; do [ "$p" = "$1" ] || rest+=("$p"); done
  pids=("${rest[@]}")
}

echo "building..." >&2
go build -o "$state/exe/gateway" ./cmd/gateway
go build -o "$state/exe/sink" ./bench/sink
go build -o "$state/exe/uploader" ./bench/uploader

# upload URL CONCURRENCY [KEY [SIZE]]: the uploader's key=value line.
upload() {
  local args=(upload -url "$1" -c "$2" -size "${4:-$size}")
  [ -n "${3:-}" ] && args+=(-key "$3")
  "${pin_load[@]}" "$state/exe/uploader" "${args[@]}"
}

# dd_mbps FILE [conv=fsync]: MB/s of dd writing SIZE bytes to FILE.
dd_mbps() {
  local out secs
  out=$(LC_ALL=C dd if=/dev/zero of="$1" bs=1M iflag=count_bytes count="$size" ${2:+"$2"} 2>&1)
  secs=$(printf '%s\n' "$out" | awk '/copied/ {for (i = 1; i <= NF; i++) if ($i ~ /^s,?$/) print $(i-1)}' | tr -d ,)
  rm -f "$1"
  awk -v b="$size" -v s="$secs" 'BEGIN {printf "%.1f", b / 1e6 / s}'
}

# ---- baselines: the sink, and a null sink to check the client
mkdir -p "$state/sink" "$state/dd"
sink_port=$(free_port)
"${pin_server[@]}" "$state/exe/sink" -addr "127.0.0.1:$sink_port" -dir "$state/sink" >"$state/sink.log" 2>&1 </dev/null &
sink_pid=$!
pids+=("$sink_pid")
null_port=$(free_port)
"${pin_server[@]}" "$state/exe/sink" -addr "127.0.0.1:$null_port" -mode null >"$state/null.log" 2>&1 </dev/null &
null_pid=$!
pids+=("$null_pid")
sink_url="http://127.0.0.1:$sink_port/"
wait_http "$sink_url"
wait_http "http://127.0.0.1:$null_port/"

echo "== client check: bench/uploader -> null sink (raw body discarded, no parsing)"
nulls=()
for _ in $(seq 5); do nulls+=("$(upload "http://127.0.0.1:$null_port/" 1 | field mbps)"); done
null_med=$(printf '%s\n' "${nulls[@]}" | median)
printf 'client -> null sink: %s MB/s (runs: %s)\n' "$null_med" "${nulls[*]}"
stop "$null_pid"

# ---- the gateway
gw_port=$(free_port)
# write_config BACKEND: the bench config, limits raised so nothing is refused.
write_config() {
  local storage
  case $1 in
    fs) storage="{backend: fs, fs: {dir: $state/files}}" ;;
    s3) storage="{backend: s3, s3: {bucket: bench, endpoint: \"$s3_endpoint\", path_style: true}}" ;;
  esac
  cat >"$state/gateway-$1.yaml" <<YAML
server: {listen: "127.0.0.1:$gw_port"}
log: {level: info, format: json}
metadata: {driver: sqlite, dsn: $state/gateway.db}
storage: $storage
catalog: {path: $root/configs/models.yaml}
limits:
  workspace_storage_bytes: 1TiB
  upload_bytes: {bytes: 1TiB, per: 1h}
  uploads_in_flight_per_key: 1024
  rate:
    default: {requests: 1000000, per: 1s, burst: 1000000}
    files: {requests: 1000000, per: 1s, burst: 1000000}
YAML
}
gw_pid=
start_gateway() {
  "${pin_server[@]}" "$state/exe/gateway" serve --config "$state/gateway-$1.yaml" >>"$state/gateway-$1.log" 2>&1 </dev/null &
  gw_pid=$!
  pids+=("$gw_pid")
  wait_http "http://127.0.0.1:$gw_port/healthz"
  # Idle is read before any upload: the warm-up below leaves an S3 part
  # buffer (5 MiB) in the pool until the GC takes it, or not, and counting
  # it as idle would flatter the first phase.
  gw_idle=$(kib "$gw_pid" VmRSS)
  # Warm-up: auth, the default workspace, SQLite, the storage client.
  upload "$gw_url" 1 "$key" 1048576 >/dev/null
  clean "$1"
}
stop_gateway() { stop "$gw_pid"; }
# clean BACKEND: delete what the uploads stored.
clean() {
  case $1 in
    fs) rm -rf "$state/files/ws" ;;
    s3) rm -rf "$state/s3/bench/ws" "$state/s3/bench/direct" ;;
    sink) rm -f "$state/sink/"upload-* ;;
  esac
}
gw_url="http://127.0.0.1:$gw_port/api/v1/files"
write_config fs
key=$("$state/exe/gateway" keys create --config "$state/gateway-fs.yaml" --name bench --user bench 2>>"$state/gateway-fs.log" | tail -n 1)

# one_mbps NAME BACKEND: MB/s of one timed write by NAME, cleaned after.
one_mbps() {
  local v t
  sync
  case $1 in
    dd) v=$(dd_mbps "$state/dd/file" conv=fsync) ;;
    dd-cache) v=$(dd_mbps "$state/dd/file") ;;
    sink) v=$(upload "$sink_url" 1 | field mbps); clean sink ;;
    s3put)
      v=$("${pin_load[@]}" "$state/exe/uploader" s3put -endpoint "$s3_endpoint" -bucket bench -size "$size" | field mbps)
      clean s3
      ;;
    gateway)
      t=$(cpu_ticks "$gw_pid")
      v=$(upload "$gw_url" 1 "$key" | field mbps)
      cpu_per_gb $(($(cpu_ticks "$gw_pid") - t)) "$size" >>"$state/cpu-single-$2" # one_mbps runs in a subshell
      clean "$2"
      ;;
  esac
  echo "$v"
}
# The gateway's CPU seconds per GB uploaded, one a round: one upload at a
# time (one_mbps, into $state/cpu-single-BACKEND), PARALLEL at once (together).
cpu_together=()

# throughput BACKEND CONTENDER...: ROUNDS rounds, each timing every
# contender once, in an order rotated round by round; prints each round with
# the ratios gateway/X for every baseline X (dd-cache is information only),
# then the medians. Sets med[NAME] and per_round[X] (the round ratios).
throughput() {
  local backend=$1
  shift
  local names=("$@") n=$# r i name v line
  declare -A vals=() this=()
  echo "== $backend: throughput of one $size-byte upload at a time, $rounds rounds (MB/s, MB = 10^6 bytes)"
  upload "$sink_url" 1 >/dev/null
  clean sink
  for r in $(seq "$rounds"); do
    line="round $r:"
    for i in $(seq 0 $((n - 1))); do
      name=${names[$(((i + r - 1) % n))]}
      v=$(one_mbps "$name" "$backend")
      this[$name]=$v
      vals[$name]+="$v "
      line+=$(printf '  %s %.1f' "$name" "$v")
    done
    line+="  "
    for name in "${names[@]}"; do
      case $name in gateway | dd-cache) continue ;; esac
      v=$(ratio "${this[gateway]}" "${this[$name]}")
      per_round[$name]+="$v "
      line+="  gateway/$name $v"
    done
    echo "$line"
  done
  line="median:"
  for name in "${names[@]}"; do
    med[$name]=$(echo "${vals[$name]}" | tr ' ' '\n' | grep . | median)
    line+=$(printf '  %s %.1f' "$name" "${med[$name]}")
  done
  echo "$line MB/s"
}

# together BACKEND: aggregate MB/s of PARALLEL uploads at once (all bytes
# over the batch's wall time), the gateway against the sink fed the same
# batch, alternating which goes first, ROUNDS rounds; the ratio of the
# medians is added to the summary (target >= 0.90 on fs).
together() {
  local backend=$1 r g k t ratios=() gs=() ks=()
  echo "== $backend: $parallel concurrent $size-byte uploads, aggregate MB/s, $rounds rounds"
  for r in $(seq "$rounds"); do
    sync
    t=$(cpu_ticks "$gw_pid")
    if ((r % 2)); then
      g=$(upload "$gw_url" "$parallel" "$key" | field mbps); clean "$backend"; sync
      cpu_together+=("$(cpu_per_gb $(($(cpu_ticks "$gw_pid") - t)) $((size * parallel)))")
      k=$(upload "$sink_url" "$parallel" | field mbps); clean sink
    else
      k=$(upload "$sink_url" "$parallel" | field mbps); clean sink; sync
      t=$(cpu_ticks "$gw_pid")
      g=$(upload "$gw_url" "$parallel" "$key" | field mbps); clean "$backend"
      cpu_together+=("$(cpu_per_gb $(($(cpu_ticks "$gw_pid") - t)) $((size * parallel)))")
    fi
    gs+=("$g") ks+=("$k") ratios+=("$(ratio "$g" "$k")")
    printf 'round %d:  gateway %.1f  sink %.1f  gateway/sink %s\n' "$r" "$g" "$k" "${ratios[-1]}"
  done
  g=$(printf '%s\n' "${gs[@]}" | median) k=$(printf '%s\n' "${ks[@]}" | median)
  summary+=("$(printf '%s: %d concurrent uploads: gateway %.1f MB/s aggregate = %sx sink (%.1f MB/s; median of round ratios %s) [target >= 0.90]' \
    "$backend" "$parallel" "$g" "$(ratio "$g" "$k")" "$k" "$(printf '%s\n' "${ratios[@]}" | median)")")
  echo "${summary[-1]}"
  if [ "$backend" = fs ]; then
    summary+=("$(printf '%s: gateway CPU per GB uploaded: %s s one at a time, %s s with %d at once (medians; rounds: %s / %s)' \
      "$backend" "$(median <"$state/cpu-single-fs")" "$(printf '%s\n' "${cpu_together[@]}" | median)" "$parallel" \
      "$(tr '\n' ' ' <"$state/cpu-single-fs")" "${cpu_together[*]}")")
    echo "${summary[-1]}"
  fi
}

# report_ratios BACKEND BASELINE...: gateway / BASELINE of the medians (and
# the median of the round ratios), printed and added to the summary.
report_ratios() {
  local backend=$1 name r
  shift
  local line
  line=$(printf '%s: gateway %.1f MB/s =' "$backend" "${med[gateway]}")
  for name in "$@"; do
    r=$(ratio "${med[gateway]}" "${med[$name]}")
    line+=$(printf ' %sx %s (%.1f MB/s; median of round ratios %.3f)' "$r" "$name" "${med[$name]}" \
      "$(echo "${per_round[$name]}" | tr ' ' '\n' | grep . | median)")
    [ "$name" = dd ] && line+=" [target >= 0.70]"
    line+=","
  done
  echo "${line%,}"
  summary+=("${line%,}")
}

# rss_report gateway|sink BACKEND URL [KEY]: idle RSS, then peak RSS per
# concurrency; MiB per upload above idle are added to per_upload (gateway).
rss_report() {
  local who=$1 backend=$2 url=$3 key=${4:-} c idle start peak per run restart=0
  idle=$(kib "$(pid_of "$who")" VmRSS)
  printf '%s RSS %s MiB (anonymous %s, file-backed %s)' "$who" "$(mib "$idle")" \
    "$(mib "$(kib "$(pid_of "$who")" RssAnon)")" "$(mib "$(kib "$(pid_of "$who")" RssFile)")"
  if [ "$who" = gateway ]; then
    printf ' after a 1 MiB warm-up upload; idle (ready, before it) %s MiB\n' "$(mib "$gw_idle")"
    idle=$gw_idle
  else
    printf ' idle\n'
  fi
  for c in $concurrency; do
    clean "$backend"
    sync
    if ! echo 5 >"/proc/$(pid_of "$who")/clear_refs" 2>/dev/null; then
      # Peak RSS cannot be reset: a fresh process per phase instead.
      restart=1
      restart_proc "$who" "$backend"
      idle=$(kib "$(pid_of "$who")" VmRSS)
      [ "$who" = gateway ] && idle=$gw_idle
    fi
    start=$(kib "$(pid_of "$who")" VmHWM)
    # Idle is the lowest RSS seen at rest: the runtime returns start-up
    # garbage and the kernel drops pages of the binary over time, so a
    # phase may start below the first reading.
    ((start < idle)) && idle=$start
    run=$(upload "$url" "$c" "$key")
    peak=$(kib "$(pid_of "$who")" VmHWM)
    per=$(awk -v p="$peak" -v i="$idle" -v c="$c" 'BEGIN {printf "%.1f", (p - i) / 1024 / c}')
    printf '%s %2d concurrent: peak %s MiB (phase start %s, idle %s)  %s MiB per upload above idle   %s MB/s aggregate\n' \
      "$who" "$c" "$(mib "$peak")" "$(mib "$start")" "$(mib "$idle")" "$per" "$(echo "$run" | field mbps)"
    [ "$who" = gateway ] && per_upload+=("$per")
  done
  clean "$backend"
  [ "$restart" = 1 ] && echo "($who: clear_refs not permitted; restarted per phase)"
  return 0
}
pid_of() { if [ "$1" = gateway ]; then echo "$gw_pid"; else echo "$sink_pid"; fi; }
restart_proc() {
  if [ "$1" = gateway ]; then
    stop_gateway
    start_gateway "$2"
  else
    stop "$sink_pid"
    "${pin_server[@]}" "$state/exe/sink" -addr "127.0.0.1:$sink_port" -dir "$state/sink" >>"$state/sink.log" 2>&1 </dev/null &
    sink_pid=$!
    pids+=("$sink_pid")
    wait_http "$sink_url"
  fi
}

summary=()
for backend in $backends; do
  declare -A med=() per_round=()
  per_upload=()
  case $backend in
    fs)
      write_config fs
      start_gateway fs
      throughput fs dd sink gateway dd-cache
      report_ratios fs dd sink
      summary+=("fs: sink / dd $(ratio "${med[sink]}" "${med[dd]}") (what HTTP + multipart alone cost against dd)")
      echo "${summary[-1]}"
      together fs
      ;;
    s3)
      # shellcheck source=../deploy/testenv/lib.sh
      source "$root/deploy/testenv/lib.sh"
      # shellcheck source=../deploy/testenv/s3.sh
      source "$root/deploy/testenv/s3.sh"
      if [ "$s3_tls" = 1 ]; then
        # versitygw reads its certificate from VGW_CERT and VGW_KEY; the
        # SDK (gateway and uploader alike) trusts AWS_CA_BUNDLE's roots.
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
          -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
          -keyout "$state/s3-tls.key" -out "$state/s3-tls.crt" 2>/dev/null
        export VGW_CERT=$state/s3-tls.crt VGW_KEY=$state/s3-tls.key AWS_CA_BUNDLE=$state/s3-tls.crt
      fi
      start_s3 "$state" >/dev/null
      if [ ${#pin_load[@]} -gt 0 ]; then
        taskset -apc 1 "$(tail -n 1 "$state/pids")" >/dev/null
      fi
      s3_endpoint=$GATEWAY_TEST_S3_ENDPOINT
      [ "$s3_tls" = 1 ] && s3_endpoint=https://${s3_endpoint#http://}
      export AWS_ACCESS_KEY_ID=$GATEWAY_TEST_S3_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$GATEWAY_TEST_S3_SECRET_KEY
      export AWS_EC2_METADATA_DISABLED=true
      "$state/exe/uploader" bucket -endpoint "$s3_endpoint" -bucket bench
      write_config s3
      start_gateway s3
      throughput s3 sink s3put gateway
      report_ratios s3 sink s3put
      ;;
    *)
      echo "bench: unknown backend $backend (want fs or s3)" >&2
      exit 1
      ;;
  esac

  echo "== $backend: peak RSS (VmHWM) with $concurrency concurrent $size-byte uploads"
  # Fresh processes, so idle is idle and not what the rounds left behind.
  restart_proc gateway "$backend"
  rss_report gateway "$backend" "$gw_url" "$key"
  if [ "$backend" = fs ]; then
    restart_proc sink sink
    rss_report sink sink "$sink_url"
  fi
  worst=$(printf '%s\n' "${per_upload[@]}" | sort -g | tail -n 1)
  target=16
  [ "$backend" = s3 ] && target=20
  printf '%s: worst MiB per concurrent upload above idle: %s (target <= %s)\n' "$backend" "$worst" "$target"
  summary+=("$backend: gateway RSS per concurrent upload above idle <= $worst MiB (phases: ${per_upload[*]})")
  stop_gateway
done

echo "== summary"
printf 'client -> null sink: %s MB/s\n' "$null_med"
printf '%s\n' "${summary[@]}"
