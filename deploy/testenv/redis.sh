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
  wait_for "redis on port $port" 20 "$dir/redis.log" redis_pings "$port"
  export GATEWAY_TEST_REDIS_URL="redis://127.0.0.1:$port/0"
  export GATEWAY_TEST_REDIS_SERVER="$bin"
  echo "testenv: redis on 127.0.0.1:$port" >&2
}

# start_redis_topologies STATE_DIR launches a Redis Cluster (3 masters, each
# with a replica) and a Sentinel group (a master, its replica, three
# Sentinels with a quorum of two, the master named "gateway"), ephemeral
# like start_redis, and exports GATEWAY_TEST_REDIS_CLUSTER_ADDRS,
# GATEWAY_TEST_REDIS_SENTINEL_ADDRS (comma-separated host:port lists) and
# GATEWAY_TEST_REDIS_SENTINEL_MASTER. It returns once the processes are
# launched: creating the Cluster and waiting for the replicas to sync (a
# few seconds) happen in the background, beside the other servers' start;
# wait_redis_topologies waits for them.
start_redis_topologies() {
  local state=$1
  command -v redis-server >/dev/null || apt_install redis-server
  local bin cli dir i port
  bin=$(command -v redis-server)
  cli=$(command -v redis-cli) || { apt_install redis-tools && cli=$(command -v redis-cli); }
  dir="$state/redis-topologies"
  mkdir -p "$dir"
  local -a cluster=() sentinels=() group=()
  # --repl-diskless-sync-delay 0: a master waits 5 s by default for more
  # replicas before it sends the first a copy of its data.
  for i in 0 1 2 3 4 5; do
    port=$(free_port)
    mkdir -p "$dir/cluster-$port"
    # The bus port is picked too: port+10000, the default, may be taken
    # (or lie in the ephemeral range).
    "$bin" --bind 127.0.0.1 --port "$port" --save '' --appendonly no --dir "$dir/cluster-$port" \
      --cluster-enabled yes --cluster-port "$(free_port)" --cluster-config-file nodes.conf \
      --cluster-node-timeout 1000 --repl-diskless-sync-delay 0 \
      --daemonize no --logfile "$dir/cluster-$port/redis.log" >/dev/null 2>&1 </dev/null &
    echo $! >>"$state/pids"
    cluster+=("127.0.0.1:$port")
  done
  # The Sentinels' master and its replica.
  for i in 0 1; do
    port=$(free_port)
    mkdir -p "$dir/group-$port"
    local -a of=()
    if ((i > 0)); then
      of=(--replicaof 127.0.0.1 "${group[0]##*:}")
    fi
    "$bin" --bind 127.0.0.1 --port "$port" --save '' --appendonly no --dir "$dir/group-$port" "${of[@]}" \
      --repl-diskless-sync-delay 0 \
      --daemonize no --logfile "$dir/group-$port/redis.log" >/dev/null 2>&1 </dev/null &
    echo $! >>"$state/pids"
    group+=("127.0.0.1:$port")
  done
  for i in 0 1 2; do
    port=$(free_port)
    mkdir -p "$dir/sentinel-$port"
    # A Sentinel rewrites its configuration as it learns: a file of its own.
    printf 'port %s\nbind 127.0.0.1\ndir %s\nlogfile %s\nsentinel monitor gateway 127.0.0.1 %s 2\nsentinel down-after-milliseconds gateway 1000\nsentinel failover-timeout gateway 5000\n' \
      "$port" "$dir/sentinel-$port" "$dir/sentinel-$port/sentinel.log" "${group[0]##*:}" >"$dir/sentinel-$port/sentinel.conf"
    "$bin" "$dir/sentinel-$port/sentinel.conf" --sentinel >/dev/null 2>&1 </dev/null &
    echo $! >>"$state/pids"
    sentinels+=("127.0.0.1:$port")
  done

  (redis_topologies_ready "$cli" "$dir" "${group[0]##*:}" "${cluster[@]}" -- "${sentinels[@]}") >"$dir/ready.log" 2>&1 &
  redis_topologies_pid=$!
  redis_topologies_log="$dir/ready.log"
  echo "$redis_topologies_pid" >>"$state/pids"
  local IFS=,
  export GATEWAY_TEST_REDIS_CLUSTER_ADDRS="${cluster[*]}"
  export GATEWAY_TEST_REDIS_SENTINEL_ADDRS="${sentinels[*]}"
  export GATEWAY_TEST_REDIS_SENTINEL_MASTER=gateway
}

# redis_topologies_ready CLI DIR MASTER_PORT CLUSTER_ADDR... -- SENTINEL_ADDR...
# waits for every node to answer, creates the Cluster, and waits until every
# node says the Cluster is ok with its replicas in sync, the Sentinels' master
# has its replica in sync, and every Sentinel names that master.
redis_topologies_ready() {
  local cli=$1 dir=$2 master=$3 a
  shift 3
  local -a cluster=() sentinels=()
  while (($#)) && [ "$1" != -- ]; do cluster+=("$1") && shift; done
  shift
  sentinels=("$@")
  for a in "${cluster[@]}" "127.0.0.1:$master" "${sentinels[@]}"; do
    wait_for "redis on ${a##*:}" 20 "$(echo "$dir"/*-"${a##*:}"/*.log)" redis_pings "${a##*:}" || return 1
  done
  timeout 60 "$cli" --cluster create "${cluster[@]}" --cluster-replicas 1 --cluster-yes >"$dir/cluster-create.log" 2>&1 ||
    { tail -n 30 "$dir/cluster-create.log"; return 1; }
  for a in "${cluster[@]}"; do
    wait_for "cluster node ${a##*:}" 30 "$dir/cluster-create.log" redis_cluster_node_ready "$cli" "${a##*:}" || return 1
  done
  wait_for "sentinels' master's replica" 20 "$dir/ready.log" redis_cluster_node_ready "$cli" "$master" || return 1
  for a in "${sentinels[@]}"; do
    wait_for "sentinel on ${a##*:}" 20 "$dir/ready.log" redis_sentinel_ready "$cli" "${a##*:}" "$master" || return 1
  done
}

# redis_cluster_node_ready CLI PORT: a Cluster node whose Cluster is ok (or
# a plain server), and, on a master, every replica it expects connected and
# in sync.
redis_cluster_node_ready() {
  local cli=$1 port=$2 info repl
  info=$(timeout 5 "$cli" -p "$port" cluster info 2>/dev/null || true)
  case $info in
    *cluster_state:ok*) ;;
    *"cluster support disabled"*) ;;
    *) return 1 ;;
  esac
  repl=$(timeout 5 "$cli" -p "$port" info replication) || return 1
  case $repl in
    *role:master*) grep -q 'connected_slaves:[1-9]' <<<"$repl" && ! grep -q 'state=wait_bgsave\|state=send_bulk' <<<"$repl" ;;
    *) grep -q 'master_link_status:up' <<<"$repl" ;;
  esac
}

# redis_sentinel_ready CLI PORT MASTER_PORT: a Sentinel that names the
# master. (The Sentinels find each other within seconds, through the
# master; until then they serve clients but could not fail over, which
# the tests that kill a master do on groups of their own.)
redis_sentinel_ready() {
  timeout 5 "$1" -p "$2" sentinel get-master-addr-by-name gateway 2>/dev/null | grep -qx "$3"
}

# wait_redis_topologies waits for what start_redis_topologies started in
# the background.
wait_redis_topologies() {
  if ! wait "$redis_topologies_pid"; then
    echo "testenv: the Redis Cluster or Sentinel group did not become ready:" >&2
    tail -n 30 "$redis_topologies_log" >&2 || true
    return 1
  fi
  echo "testenv: redis cluster on $GATEWAY_TEST_REDIS_CLUSTER_ADDRS; sentinels on $GATEWAY_TEST_REDIS_SENTINEL_ADDRS (master gateway)" >&2
}
