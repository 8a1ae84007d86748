# Helpers shared by the bench scripts; sourced, not run.

# free_port (a port nothing listens on), as the test servers' scripts pick
# theirs. The test servers a bench starts are built with the compiler's
# optimizations (see build_tools), so that they never hold the gateway back.
# shellcheck source=../deploy/testenv/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../deploy/testenv/lib.sh"
export TESTENV_OPTIMIZED=1
# wait_http URL: until URL answers anything (the sink answers 400 to a GET).
wait_http() {
  for _ in $(seq 150); do curl -sS -o /dev/null "$1" 2>/dev/null && return; sleep 0.1; done
  echo "bench: $1 never answered" >&2
  exit 1
}
# median: of the numbers on stdin, one a line.
median() { sort -g | awk '{a[NR]=$1} END {if (NR) print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
# ratio A B: A / B to three places (0 when B is 0).
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", (b > 0 ? a / b : 0)}'; }
# kib PID FIELD: a VmRSS-like field of /proc/PID/status, in KiB.
kib() { awk -v f="$2" '$1 == f":" {print $2}' "/proc/$1/status"; }
# cpu_ticks PID: the user and system CPU PID has used so far, in clock ticks
# (getconf CLK_TCK a second).
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# cpu_per_gb TICKS BYTES: CPU seconds per 10^9 bytes, to two places.
cpu_per_gb() { awk -v t="$1" -v hz="$(getconf CLK_TCK)" -v b="$2" 'BEGIN {printf "%.2f\n", t / hz / (b / 1e9)}'; }
# mib KIB: KiB as MiB to one place.
mib() { awk -v k="$1" 'BEGIN {printf "%.1f", k / 1024}'; }
# field KEY: the value of KEY=value in a line of space-separated pairs.
field() { tr ' ' '\n' | awk -F= -v k="$1" '$1 == k {print $2}'; }
# stop PID: ends one process a script started and takes it out of $pids,
# so the clean-up on exit never signals a PID the system has since given
# to someone else.
stop() {
  local p rest=()
  kill "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
  for p in "${pids[@]}"; do [ "$p" = "$1" ] || rest+=("$p"); done
  pids=("${rest[@]}")
}
# reset_hwm PID: resets the peak RSS (VmHWM) of PID to its RSS now; fails
# where clear_refs is not permitted.
reset_hwm() { echo 5 2>/dev/null >"/proc/$1/clear_refs"; }
# upload_config PORT DIR BACKEND [S3_ENDPOINT]: a gateway's configuration
# for upload benchmarks, its data under DIR (SQLite; files in DIR/files on
# fs, bucket "bench" on S3), every limit raised so that nothing is refused.
upload_config() {
  local storage
  case $3 in
    fs) storage="{backend: fs, fs: {dir: $2/files}}" ;;
    s3) storage="{backend: s3, s3: {bucket: bench, endpoint: \"$4\", path_style: true}}" ;;
    *) echo "bench: unknown backend $3 (want fs or s3)" >&2; return 1 ;;
  esac
  cat <<YAML
server: {listen: "127.0.0.1:$1"}
log: {level: info, format: json}
metadata: {driver: sqlite, dsn: $2/gateway.db}
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
# need COMMAND: installs the Debian package of that name when COMMAND is
# missing (as root), else says what to install and stops.
need() { command -v "$1" >/dev/null || apt_install "$1" || exit 1; }
# bench_dir NAME: makes the run's directory, .testenv/bench-NAME.* in the
# repository ($root; the disk the gateway would use, never a tmpfs), as
# $work, with an empty $pids. On exit every process in $pids, and in the
# file $work/pids (where processes started in a subshell are recorded), is
# killed, the last lines of each log in $work are shown if the script
# failed, and $work is removed. KEEP=1 keeps it, but for the directories
# of $work named in $bench_bulky (uploaded data, say).
bench_dir() {
  mkdir -p "$root/.testenv"
  work=$(mktemp -d "$root/.testenv/bench-$1.XXXXXX")
  pids=() bench_bulky=()
  trap bench_cleanup EXIT
  trap 'exit 130' INT TERM
}
bench_cleanup() {
  local code=$? p log
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  if [ -f "$work/pids" ]; then
    while read -r p; do kill "$p" 2>/dev/null || true; done <"$work/pids"
  fi
  wait 2>/dev/null || true
  if [ "$code" != 0 ]; then
    for log in "$work"/*.log; do
      [ -f "$log" ] || continue
      echo "--- last lines of $(basename "$log")" >&2
      tail -n 15 "$log" >&2
    done
  fi
  if [ "${KEEP:-0}" = 1 ]; then
    for p in "${bench_bulky[@]}"; do rm -rf "${work:?}/$p"; done
    echo "kept $work" >&2
  else
    rm -rf "$work"
  fi
  exit "$code"
}
# byok_workspace API MGMT NAME KEY: creates workspace NAME through the
# gateway API at API with management key MGMT, stores KEY there as its
# OpenAI key over /byok, and prints the workspace's id.
byok_workspace() {
  local ws auth="Authorization: Bearer $2"
  ws=$(curl -fsS -H "$auth" -H 'Content-Type: application/json' -d "{\"name\":\"$3\",\"slug\":\"${3,,}\"}" \
    "$1/workspaces" | grep -o '"id":"[^"]*"' | head -n 1 | cut -d'"' -f4)
  [ -n "$ws" ] || { echo "bench: no workspace was created" >&2; return 1; }
  curl -fsS -o /dev/null -H "$auth" -H 'Content-Type: application/json' \
    -d "{\"provider\":\"openai\",\"key\":\"$4\",\"workspace_id\":\"$ws\"}" "$1/byok" || return 1
  echo "$ws"
}
# standin_config PORT URL: the head of a gateway's configuration on the
# embedded default in $work, listening on PORT, its OpenAI provider at URL,
# the sweeper off; the script adds its limits.
standin_config() {
  cat <<YAML
server: {listen: "127.0.0.1:$1"}
metadata: {driver: sqlite, dsn: $work/gateway.db}
storage: {backend: fs, fs: {dir: $work/files}}
catalog: {path: $root/configs/models.yaml}
providers:
  openai: {base_url: "$2"}
sweeper: {interval: 0s}
YAML
}
