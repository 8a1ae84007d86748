#!/usr/bin/env bash
# The slow-body and half-close attacks of issue 14 against a real gateway
# process (embedded default: SQLite and local disk in a temp dir, rate
# limits off so the normal client is never limited), with a normal client
# measuring lookup latency throughout. bench/abuse does the work; see its
# header for the phases and what each reports. Everything stays on the
# loopback interface: the gateway listens on 127.0.0.1, the attack
# connections come from 127.0.0.2 (another peer to the per-client cap than
# the normal client) and every loop is bounded, so the script ends by itself.
#
#   bench/abuse.sh [SECONDS]        (slow-body phase length, default 20)
#
# The server's defaults stay in place unless overridden (written into the
# config so their effect can be seen):
#   BODY_TIMEOUT=5s             server.body_read_timeout (default 30s)
#   MAX_CONNS=4096              server.max_connections (default 8192)
#   MAX_CONNS_PER_CLIENT=0      server.max_connections_per_client (default 256; 0: no cap)
# and the attack's size:
#   STALL=2000 TRICKLE=200 HALFCLOSE=200 ATTACK_FROM=127.0.0.2 MODEL=openai/gpt-4o
set -euo pipefail
secs=${1:-20}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

work=$(mktemp -d "${TMPDIR:-/tmp}/gateway-abuse.XXXXXX")
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

go build -o "$work/gateway" ./cmd/gateway
go build -o "$work/abuse" ./bench/abuse

port=$((20000 + RANDOM % 30000))
server="listen: \"127.0.0.1:$port\""
[ -n "${BODY_TIMEOUT:-}" ] && server+=", body_read_timeout: $BODY_TIMEOUT"
[ -n "${MAX_CONNS:-}" ] && server+=", max_connections: $MAX_CONNS"
[ -n "${MAX_CONNS_PER_CLIENT:-}" ] && server+=", max_connections_per_client: $MAX_CONNS_PER_CLIENT"
cat >"$work/gateway.yaml" <<YAML
server: {$server}
metadata: {driver: sqlite, dsn: $work/gateway.db}
storage: {backend: fs, fs: {dir: $work/files}}
catalog: {path: $root/configs/models.yaml}
limits: {rate: {enabled: false}}
YAML
key=$("$work/gateway" keys create --config "$work/gateway.yaml" --name abuse --user abuse 2>/dev/null | tail -n 1)
mgmt=$("$work/gateway" keys create --config "$work/gateway.yaml" --name abuse-mgmt --user abuse --management 2>/dev/null | tail -n 1)
"$work/gateway" serve --config "$work/gateway.yaml" 2>"$work/gateway.log" &
gw=$!
pids+=("$gw")
for _ in $(seq 100); do curl -fsS "127.0.0.1:$port/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
curl -fsS "127.0.0.1:$port/healthz" >/dev/null

echo "gateway: 127.0.0.1:$port, server config {$server}"
"$work/abuse" -addr "127.0.0.1:$port" -key "$key" -mgmt "$mgmt" -pid "$gw" -files-dir "$work/files" \
  -duration "${secs}s" -stall "${STALL:-2000}" -trickle "${TRICKLE:-200}" -halfclose "${HALFCLOSE:-200}" \
  -attack-from "${ATTACK_FROM:-127.0.0.2}" -model "${MODEL:-openai/gpt-4o}"
kill -0 "$gw" 2>/dev/null || { echo "abuse: the gateway exited during the run" >&2; tail -n 20 "$work/gateway.log" >&2; exit 1; }
echo "gateway log: $(grep -c '"level":"error"' "$work/gateway.log" || true) error lines, $(wc -l <"$work/gateway.log") lines"
