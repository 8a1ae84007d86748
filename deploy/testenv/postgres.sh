# start_postgres STATE_DIR: an ephemeral PostgreSQL cluster on a free
# loopback port, trust auth for user "app", fsync off. initdb refuses to run
# as root, so as root the cluster belongs to the postgres user, and its data
# lives in a temp dir of its own (the checkout's parents may not be
# traversable by that user); run.sh removes the dirs listed in STATE_DIR/dirs.
# Exports GATEWAY_TEST_POSTGRES_URL, and for tests that start clusters of
# their own (a primary and a standby to fail over) GATEWAY_TEST_POSTGRES_BINDIR
# (initdb, postgres, pg_basebackup) and GATEWAY_TEST_POSTGRES_RUN_AS (the
# user to run them as: postgres when root, empty otherwise).
pg_bindir() {
  if command -v pg_config >/dev/null && [ -x "$(pg_config --bindir)/initdb" ]; then
    pg_config --bindir
    return
  fi
  ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1
}

start_postgres() {
  local state=$1 bindir
  bindir=$(pg_bindir)
  if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
    apt_install postgresql
    bindir=$(pg_bindir)
  fi
  local port dir as=() run_as=""
  port=$(free_port)
  dir=$(mktemp -d "${TMPDIR:-/tmp}/gateway-postgres.XXXXXX")
  echo "$dir" >>"$state/dirs"
  if [ "$(id -u)" = 0 ]; then
    chown -R postgres:postgres "$dir"
    as=(setpriv --reuid=postgres --regid=postgres --init-groups --)
    run_as=postgres
  fi
  "${as[@]}" "$bindir/initdb" -D "$dir/data" -U app --auth=trust -E UTF8 --locale=C.UTF-8 --no-sync \
    >"$dir/initdb.log" 2>&1 || { tail -n 30 "$dir/initdb.log" >&2; return 1; }
  "${as[@]}" "$bindir/postgres" -D "$dir/data" -p "$port" -c listen_addresses=127.0.0.1 \
    -c unix_socket_directories="$dir" -c fsync=off -c synchronous_commit=off -c full_page_writes=off \
    -c max_connections=200 >"$dir/postgres.log" 2>&1 </dev/null &
  echo $! >>"$state/pids"
  wait_for "postgres on port $port" 30 "$dir/postgres.log" \
    "$bindir/pg_isready" -h 127.0.0.1 -p "$port" -U app -d postgres
  export GATEWAY_TEST_POSTGRES_URL="postgres://app@127.0.0.1:$port/postgres?sslmode=disable"
  export GATEWAY_TEST_POSTGRES_BINDIR="$bindir"
  export GATEWAY_TEST_POSTGRES_RUN_AS="$run_as"
  echo "testenv: postgres on 127.0.0.1:$port" >&2
}
