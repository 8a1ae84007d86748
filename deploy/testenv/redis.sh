# start_redis STATE_DIR: an ephemeral redis-server on a free loopback port,
# keeping nothing on disk. Exports GATEWAY_TEST_REDIS_URL and
# GATEWAY_TEST_REDIS_SERVER (the binary, for tests that kill and restart
# their own instance).
start_redis() {
  local state=$1
  command -v redis-server >/dev/null || apt_install redis-server
  local bin port dir
  bin=$(command -v redis-server)
  port=$(free_port)
  dir="$state/redis"
  mkdir -p "$dir"
  "$bin" --bind 127.0.0.1 --port "$port" --save '' --appendonly no --dir "$dir" \
    --daemonize no --logfile "$dir/redis.log" >/dev/null 2>&1 </dev/null &
  echo $! >>"$state/pids"
  wait_for "redis on port $port" 20 "$dir/redis.log" \
    bash -c "exec 3<>/dev/tcp/127.0.0.1/$port && printf 'PING\r\n' >&3 && head -c 5 <&3 | grep -q PONG"
  export GATEWAY_TEST_REDIS_URL="redis://127.0.0.1:$port/0"
  export GATEWAY_TEST_REDIS_SERVER="$bin"
  echo "testenv: redis on 127.0.0.1:$port" >&2
}
