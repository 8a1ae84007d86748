# shellcheck shell=bash
# Sourced by run.sh after lib.sh. Defines start_gcs STATE_DIR, which starts an ephemeral
# GCS emulator (fake-gcs-server, pinned in go.mod beside this file) on a
# free loopback port with its data under STATE_DIR, and exports what the
# integration tests read (internal/testenv):
#   GATEWAY_TEST_GCS_ENDPOINT  http://127.0.0.1:PORT/storage/v1/
#   GATEWAY_TEST_GCS_SERVER    the fake-gcs-server binary, for tests that stop
#                              and restart their own emulator
# The emulator runs with -public-host set to its own address: without it,
# XML-API reads are routed to storage.googleapis.com and fail. It keeps whole
# uploads in memory, so tests keep their objects small.
# The binary is built once into STATE_DIR/../bin (build_tools, lib.sh;
# named after its version). The server's PID is appended to
# STATE_DIR/pids; stopping it is the caller's job. Returns non-zero, with the
# tail of the server log on stderr, when the server does not come up.

start_gcs() {
	local state=${1:?usage: start_gcs STATE_DIR}
	local bin exe port pid log attempt
	mkdir -p "$state" || return 1
	state=$(cd "$state" && pwd) || return 1

	bin=$(dirname "$state")/bin
	build_tools "$bin" || return 1 # from lib.sh, sourced first
	exe=$(tool_exe "$bin" fake-gcs-server) || return 1

	mkdir -p "$state/gcs" || return 1
	log=$state/gcs.log

	# A port found free can be taken before the server binds it; then the
	# server exits and another port is tried.
	for attempt in 1 2 3; do
		port=$(free_port) || return 1 # from lib.sh, sourced first

		# Output goes to a file and stdin is closed: a background server
		# holding the caller's pipe would hang a $(...) around run.sh.
		"$exe" -scheme http -host 127.0.0.1 -port "$port" -public-host "127.0.0.1:$port" \
			-backend filesystem -filesystem-root "$state/gcs" -log-level warn >>"$log" 2>&1 </dev/null &
		pid=$!
		echo "$pid" >>"$state/pids"

		for i in $(seq 1 150); do
			if ! kill -0 "$pid" 2>/dev/null; then
				break
			fi
			if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
				export GATEWAY_TEST_GCS_ENDPOINT=http://127.0.0.1:$port/storage/v1/
				export GATEWAY_TEST_GCS_SERVER=$exe
				return 0
			fi
			sleep 0.1
		done
		if kill -0 "$pid" 2>/dev/null; then
			kill "$pid" 2>/dev/null
			echo "start_gcs: fake-gcs-server did not listen on 127.0.0.1:$port within 15s; log tail:" >&2
			tail -n 20 "$log" >&2
			return 1
		fi
		echo "start_gcs: fake-gcs-server exited (attempt $attempt, port $port)" >&2
	done
	echo "start_gcs: fake-gcs-server did not start; log tail:" >&2
	tail -n 20 "$log" >&2
	return 1
}
