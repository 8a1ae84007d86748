# shellcheck shell=bash
# Sourced by run.sh after lib.sh. Defines find_otelcol STATE_DIR, which
# builds the OpenTelemetry Collector of the tracing tests (./otelcol beside
# this file: the OTLP receiver and the file exporter, at the collector
# release pinned in go.mod here) and exports what internal/testenv reads:
#   GATEWAY_TEST_OTELCOL  the collector binary
# It starts nothing: each test starts a collector of its own
# (testenv.StartCollector), on its own ports and writing its own file, so
# that no test reads another's spans.
# The binary is built once into STATE_DIR/../bin (build_tools, lib.sh;
# named after its version and source).

find_otelcol() {
	local state=${1:?usage: find_otelcol STATE_DIR}
	local bin exe
	mkdir -p "$state" || return 1
	state=$(cd "$state" && pwd) || return 1

	bin=$(dirname "$state")/bin
	build_tools "$bin" || return 1 # from lib.sh, sourced first
	exe=$(tool_exe "$bin" otelcol) || return 1
	if ! "$exe" --version >/dev/null 2>&1; then
		echo "find_otelcol: $exe does not run" >&2
		return 1
	fi
	export GATEWAY_TEST_OTELCOL=$exe
}
