#!/usr/bin/env bash
# run.sh CMD [ARG...]: start every server the integration tests need —
# Redis (a single server, a Cluster of 3 masters with replicas, a Sentinel
# group), PostgreSQL, an S3-compatible server (versitygw) and a GCS emulator
# (fake-gcs-server) — each ephemeral, on a free loopback port, in a temp dir;
# build the OpenTelemetry Collector that the tracing tests start one of each;
# find Chromium and axe-core for the console's browser tests (installed if
# missing);
# export their addresses (GATEWAY_TEST_*); run CMD; stop them all and remove
# their data on exit, whatever CMD did. Nothing already running on the
# machine is used. Servers missing from the machine are installed from
# Debian's packages (as root) or built from the pinned tools module here.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
# Runs live under .testenv/; the test servers' binaries are kept in
# .testenv/bin (see link_tool_cache).
source "$here/lib.sh"
link_tool_cache "$root"
state=$(mktemp -d "$root/.testenv/run.XXXXXX")
# No port is handed out twice in this run (see free_port).
export TESTENV_PORT_CLAIMS=$state/ports
mkdir "$TESTENV_PORT_CLAIMS"

stop_all() {
  local code=$?
  if [ -f "$state/pids" ]; then
    # SIGTERM, a bounded wait, then SIGKILL: nothing outlives the run.
    while read -r pid; do kill -TERM "$pid" 2>/dev/null || true; done <"$state/pids"
    for _ in $(seq 50); do
      alive=0
      while read -r pid; do kill -0 "$pid" 2>/dev/null && alive=1; done <"$state/pids"
      ((alive)) || break
      sleep 0.1
    done
    while read -r pid; do kill -KILL "$pid" 2>/dev/null || true; done <"$state/pids"
  fi
  if [ -f "$state/dirs" ]; then
    while read -r dir; do rm -rf "$dir"; done <"$state/dirs"
  fi
  rm -rf "$state"
  exit "$code"
}
trap stop_all EXIT
trap 'exit 130' INT TERM

source "$here/redis.sh"
source "$here/postgres.sh"
source "$here/s3.sh"
source "$here/gcs.sh"
source "$here/otelcol.sh"
source "$here/chromium.sh"
source "$here/axe.sh"

# run.sh --prepare installs and builds what the servers need and starts
# nothing: make test runs it beside go vet, so that a cold machine's minutes
# of compiling the test servers and installing packages overlap vet's.
if [ "${1:-}" = "--prepare" ]; then
  command -v redis-server >/dev/null || apt_install redis-server
  bindir=$(pg_bindir)
  [ -n "$bindir" ] && [ -x "$bindir/initdb" ] || apt_install postgresql
  find_chromium
  find_axe "$root"
  build_tools "$root/.testenv/bin"
  exit 0
fi

start_redis "$state"
start_redis_topologies "$state" # ready in the background, waited for below
start_postgres "$state"
start_s3 "$state"
start_gcs "$state"
find_otelcol "$state"
find_chromium
find_axe "$root"
wait_redis_topologies

if [ $# -eq 0 ]; then
  set -- go test -race -count=1 ./...
fi
"$@"
