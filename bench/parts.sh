#!/usr/bin/env bash
# Resumable uploads (POST /api/v1/uploads, then parts, then complete)
# through one gateway, on the fs backend and on S3 (a local versitygw),
# against baselines run in the same script, round by round, medians
# compared — these machines are shared and their disk speed drifts within
# a run.
#
# One file of SIZE bytes ("%PDF-1.7\n" and pseudo-random bytes, generated on
# the fly by bench/uploader, never held whole) in parts of PART bytes,
# CONCURRENCY parts in flight; MB = 10^6 bytes/s of the whole file, from
# the creation of the upload to the answer of its completion.
#
# 1. fs, every round (`sync` before each, the order rotated round by round):
#    - gateway: `uploader parts`, each part stored as a file of its own as
#      it arrives, the completion joining them (parts of 32 MiB or more
#      linked into the file, smaller ones copied);
#    - gateway-md5: the same, the completion carrying the file's md5, which
#      makes the gateway read the assembled file back;
#    - sink: bench/sink fed the same bytes as SIZE/PART single uploads of
#      PART bytes, CONCURRENCY at a time (`uploader upload -n`), each
#      streamed to a file and fsynced: the same bytes over the same
#      connections with nothing of the gateway's. The target is gateway
#      >= 0.90x sink (ratio of the medians).
# 2. s3, the same rounds with the baseline s3parts: bench/uploader storing
#    the same parts straight to versitygw with the AWS SDK as the gateway's
#    S3 backend stores them (an object per part, a multipart upload of 5 MiB
#    CRC32 parts each, two in flight), CONCURRENCY at once, then the same
#    assembly (HEADs, one multipart upload of UploadPartCopy, the part
#    objects deleted): the gateway's work without the gateway. Target
#    gateway >= 0.90x s3parts.
# 3. The completion alone (seconds, medians): of gateway and of s3parts
#    (fs: links, and copies of parts under 32 MiB; s3: server-side copies,
#    no byte through the gateway), and what md5 adds to it (gateway-md5 - gateway).
# 4. The gateway's memory: its peak RSS (VmHWM, reset with clear_refs
#    before every gateway round, or, where that is not permitted, the peak
#    since start) above idle — the lowest RSS seen at rest, read once the
#    gateway is ready, before a small warm-up upload — for every round;
#    the worst is printed (target < 64 MiB). Its CPU (user + system) per GB
#    of the file is printed beside it.
#
# Limits in the bench config are raised so nothing is refused. What the
# uploads stored is deleted after every measurement. All data lives under
# .testenv/bench-parts.* in the repository (the disk the gateway would
# use, never a tmpfs /tmp) and is removed on exit, as is every process
# started here.
#
#   bench/parts.sh
#   SIZE=536870912 ROUNDS=3 bench/parts.sh   # 512 MiB, three rounds
#   BACKENDS=s3 MD5=0 bench/parts.sh         # S3 only, without gateway-md5
#   KEEP=1 bench/parts.sh                    # keep configs, logs and SQLite
#
# Defaults: SIZE=2147483648 (2 GiB), PART=67108864 (64 MiB, the largest
# part the gateway takes), CONCURRENCY=4, ROUNDS=5, BACKENDS="fs s3", MD5=1.
# The disk holds about 2 x SIZE at once (the parts and the file). Five to
# ten minutes here at the defaults, depending on the machine's other load,
# plus a first build (versitygw once).
set -euo pipefail
shopt -s inherit_errexit
rounds=${ROUNDS:-5}
size=${SIZE:-2147483648}
part=${PART:-67108864}
conc=${CONCURRENCY:-4}
backends=${BACKENDS:-fs s3}
with_md5=${MD5:-1}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if ((size % part)); then
  echo "bench: SIZE must be a multiple of PART, for the sink's uploads to carry the same bytes" >&2
  exit 1
fi
nparts=$((size / part))

# shellcheck source=lib.sh
source "$root/bench/lib.sh"
bench_dir parts
state=$work
bench_bulky=(files sink s3)

echo "building..." >&2
go build -o "$state/exe/gateway" ./cmd/gateway
go build -o "$state/exe/sink" ./bench/sink
go build -o "$state/exe/uploader" ./bench/uploader

mkdir -p "$state/sink"
sink_port=$(free_port)
"$state/exe/sink" -addr "127.0.0.1:$sink_port" -dir "$state/sink" >"$state/sink.log" 2>&1 </dev/null &
pids+=("$!")
sink_url="http://127.0.0.1:$sink_port/"
wait_http "$sink_url"

gw_port=$(free_port)
api="http://127.0.0.1:$gw_port/api/v1"
gw_pid= gw_idle=
# start_gateway BACKEND: a fresh gateway; gw_idle is its RSS once ready,
# before a warm-up upload in parts (auth, the workspace, SQLite, the
# storage client) whose traces are then removed.
start_gateway() {
  "$state/exe/gateway" serve --config "$state/gateway-$1.yaml" >>"$state/gateway-$1.log" 2>&1 </dev/null &
  gw_pid=$!
  pids+=("$gw_pid")
  wait_http "http://127.0.0.1:$gw_port/healthz"
  gw_idle=$(kib "$gw_pid" VmRSS)
  "$state/exe/uploader" parts -url "$api" -key "$key" -size $((6 << 20)) -part $((6 << 20)) -c 1 >/dev/null
  clean "$1"
}
# clean fs|s3|sink: delete what the uploads stored.
clean() {
  case $1 in
    fs) rm -rf "$state/files/ws" "$state/files/up" "$state/files/.composed/"* ;;
    s3) rm -rf "$state/s3/bench/ws" "$state/s3/bench/up" "$state/s3/bench/direct" ;;
    sink) rm -f "$state/sink/"upload-* ;;
  esac
}

# one NAME BACKEND: one timed upload by NAME, its result line on stdout;
# cleaned after. The gateway's peak RSS above idle and CPU per GB go to
# $state/hwm-BACKEND and $state/cpu-BACKEND (one runs in a subshell).
one() {
  local out t idle now args
  sync
  case $1 in
    sink) out=$("$state/exe/uploader" upload -url "$sink_url" -c "$conc" -n "$nparts" -size "$part") ;;
    s3parts) out=$("$state/exe/uploader" s3parts -endpoint "$s3_endpoint" -bucket bench -size "$size" -part "$part" -c "$conc") ;;
    gateway | gateway-md5)
      # Idle is the lowest RSS seen at rest: the runtime returns start-up
      # garbage and the kernel drops pages of the binary over time.
      now=$(kib "$gw_pid" VmRSS)
      idle=$(cat "$state/idle")
      ((now < idle)) && idle=$now && echo "$idle" >"$state/idle"
      reset_hwm "$gw_pid" || echo "(clear_refs not permitted: peak since start)" >"$state/hwm-note"
      args=(parts -url "$api" -key "$key" -size "$size" -part "$part" -c "$conc")
      [ "$1" = gateway-md5 ] && args+=(-md5)
      t=$(cpu_ticks "$gw_pid")
      out=$("$state/exe/uploader" "${args[@]}")
      cpu_per_gb $(($(cpu_ticks "$gw_pid") - t)) "$size" >>"$state/cpu-$2"
      awk -v p="$(kib "$gw_pid" VmHWM)" -v i="$idle" 'BEGIN {printf "%.1f\n", (p - i) / 1024}' >>"$state/hwm-$2"
      ;;
  esac
  case $1 in sink) clean sink ;; *) clean "$2" ;; esac
  echo "$out"
}

# rounds BACKEND CONTENDER...: ROUNDS rounds, each timing every contender
# once in an order rotated round by round; prints every round, then the
# medians, and adds the ratios to the summary.
rounds() {
  local backend=$1
  shift
  local names=("$@") n=$# r i name out line base
  declare -A mbps=() parts_mbps=() done_s=() this=()
  : >"$state/hwm-$backend"
  : >"$state/cpu-$backend"
  echo "$gw_idle" >"$state/idle"
  echo "== $backend: one $size-byte file in $nparts parts of $part bytes, $conc at a time, $rounds rounds (MB/s of the whole, MB = 10^6 bytes; complete: seconds)"
  for r in $(seq "$rounds"); do
    line="round $r:"
    for i in $(seq 0 $((n - 1))); do
      name=${names[$(((i + r - 1) % n))]}
      out=$(one "$name" "$backend")
      this[$name]=$(echo "$out" | field mbps)
      mbps[$name]+="${this[$name]} "
      line+=$(printf '  %s %.1f' "$name" "${this[$name]}")
      if [ "$name" != sink ]; then
        parts_mbps[$name]+="$(echo "$out" | field parts_mbps) "
        done_s[$name]+="$(echo "$out" | field complete_seconds) "
        line+=$(printf ' (complete %.3f s)' "$(echo "$out" | field complete_seconds)")
      fi
    done
    base=${names[-1]}
    line+="  gateway/$base $(ratio "${this[gateway]}" "${this[$base]}")"
    per_round+=("$(ratio "${this[gateway]}" "${this[$base]}")")
    echo "$line"
  done
  declare -gA med=() med_done=()
  line="median:"
  for name in "${names[@]}"; do
    med[$name]=$(echo "${mbps[$name]}" | tr ' ' '\n' | grep . | median)
    line+=$(printf '  %s %.1f MB/s' "$name" "${med[$name]}")
    if [ -n "${done_s[$name]:-}" ]; then
      med_done[$name]=$(echo "${done_s[$name]}" | tr ' ' '\n' | grep . | median)
      line+=$(printf ' (complete %.3f s)' "${med_done[$name]}")
    fi
  done
  echo "$line"

  summary+=("$(printf '%s: gateway %.1f MB/s = %sx %s (%.1f MB/s; median of round ratios %s) [target >= 0.90]' \
    "$backend" "${med[gateway]}" "$(ratio "${med[gateway]}" "${med[$base]}")" "$base" "${med[$base]}" \
    "$(printf '%s\n' "${per_round[@]}" | median)")")
  # The parts alone (the first sent to the last answered) against the
  # baseline's parts alone (s3parts), or its whole (the sink, which has no
  # completion): what the gateway costs before its completion.
  local gp bp
  gp=$(echo "${parts_mbps[gateway]}" | tr ' ' '\n' | grep . | median)
  bp=${med[$base]}
  [ -n "${parts_mbps[$base]:-}" ] && bp=$(echo "${parts_mbps[$base]}" | tr ' ' '\n' | grep . | median)
  summary+=("$(printf '%s: parts alone (no create, no complete): gateway %.1f MB/s = %sx %s %.1f MB/s (medians)' \
    "$backend" "$gp" "$(ratio "$gp" "$bp")" "$base" "$bp")")
  line=$(printf '%s: completion alone: gateway %.3f s' "$backend" "${med_done[gateway]}")
  [ -n "${med_done[s3parts]:-}" ] && line+=$(printf ', s3parts %.3f s' "${med_done[s3parts]}")
  if [ -n "${med_done[gateway-md5]:-}" ]; then
    line+=$(printf '; with md5 %.3f s: +%.3f s (%.0f MB/s of md5 read-back); gateway-md5 whole %.1f MB/s = %sx %s' \
      "${med_done[gateway-md5]}" "$(awk -v a="${med_done[gateway-md5]}" -v b="${med_done[gateway]}" 'BEGIN {print a - b}')" \
      "$(awk -v a="${med_done[gateway-md5]}" -v b="${med_done[gateway]}" -v s="$size" 'BEGIN {print (a > b ? s / 1e6 / (a - b) : 0)}')" \
      "${med[gateway-md5]}" "$(ratio "${med[gateway-md5]}" "${med[$base]}")" "$base")
  fi
  summary+=("$line (medians)")
  summary+=("$(printf '%s: gateway peak RSS above idle during each upload: worst %s MiB (uploads: %s) [target < 64]%s; CPU per GB %s s (median; uploads: %s)' \
    "$backend" "$(sort -g "$state/hwm-$backend" | tail -n 1)" "$(tr '\n' ' ' <"$state/hwm-$backend" | sed 's/ $//')" \
    "$([ -f "$state/hwm-note" ] && echo " $(cat "$state/hwm-note")")" \
    "$(median <"$state/cpu-$backend")" "$(tr '\n' ' ' <"$state/cpu-$backend" | sed 's/ $//')")")
  printf '%s\n' "${summary[@]: -4}"
}

contenders=(gateway)
[ "$with_md5" = 1 ] && contenders+=(gateway-md5)
s3_endpoint=
summary=()
for backend in $backends; do
  per_round=()
  case $backend in
    fs) ;;
    s3)
      # shellcheck source=../deploy/testenv/s3.sh
      source "$root/deploy/testenv/s3.sh"
      start_s3 "$state" >/dev/null
      s3_endpoint=$GATEWAY_TEST_S3_ENDPOINT
      export AWS_ACCESS_KEY_ID=$GATEWAY_TEST_S3_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$GATEWAY_TEST_S3_SECRET_KEY
      export AWS_EC2_METADATA_DISABLED=true
      "$state/exe/uploader" bucket -endpoint "$s3_endpoint" -bucket bench
      ;;
    *)
      echo "bench: unknown backend $backend (want fs or s3)" >&2
      exit 1
      ;;
  esac
  upload_config "$gw_port" "$state" "$backend" "$s3_endpoint" >"$state/gateway-$backend.yaml"
  key=$("$state/exe/gateway" keys create --config "$state/gateway-$backend.yaml" --name "bench-$backend" --user bench \
    2>>"$state/gateway-$backend.log" | tail -n 1)
  start_gateway "$backend"
  case $backend in
    fs) rounds fs "${contenders[@]}" sink ;;
    s3) rounds s3 "${contenders[@]}" s3parts ;;
  esac
  stop "$gw_pid"
done

echo "== summary ($(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the end)"
printf '%s\n' "${summary[@]}"
