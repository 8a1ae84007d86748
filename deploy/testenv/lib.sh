# Shared helpers for the test-server scripts; sourced by run.sh.

# free_port prints a loopback TCP port nobody listens on. Ports are drawn at
# random below the ephemeral range (which the machine's outgoing connections
# take, so a bind there can collide with one of them), so parallel runs
# rarely collide, and checked by trying to connect.
#
# A port found free stays free only until a server binds it, and the
# servers of a run start in the background: two picks made before either
# binds could name the same port (a Cluster node's port and another's bus
# port, say), and the loser's readiness check would then talk to the
# winner. So when TESTENV_PORT_CLAIMS names a directory (run.sh makes one
# per run), each port handed out is claimed there with a mkdir, which
# succeeds once: no port is handed out twice in a run.
free_port() {
  local p tries=0 lo=10000 span
  span=$(($(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768) - lo))
  if ((span < 1000)); then # an ephemeral range starting low: take a high range then
    lo=20000 span=30000
  fi
  while ((tries++ < 200)); do
    p=$((lo + RANDOM % span))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null &&
      { [ -z "${TESTENV_PORT_CLAIMS:-}" ] || mkdir "$TESTENV_PORT_CLAIMS/$p" 2>/dev/null; }; then
      echo "$p"
      return 0
    fi
  done
  echo "no free port found" >&2
  return 1
}

# redis_pings PORT succeeds when a Redis (or a Sentinel) on PORT answers
# PING within two seconds. Whatever else listens there fails it, even a
# server that accepts and never answers (a Cluster node's bus port does
# that): a read without a time-out would wait for ever.
redis_pings() {
  local reply
  (exec 3<>"/dev/tcp/127.0.0.1/$1" && printf 'PING\r\n' >&3 && read -r -t 2 reply <&3 && [[ $reply == +PONG* ]]) 2>/dev/null
}

# wait_for DESCRIPTION SECONDS LOG COMMAND... retries COMMAND every 0.1 s
# until it succeeds; on time-out prints the log's tail and fails.
wait_for() {
  local what=$1 secs=$2 log=$3
  shift 3
  local deadline=$((SECONDS + secs))
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS >= deadline)); then
      echo "testenv: $what did not become ready within ${secs}s; last log lines:" >&2
      tail -n 30 "$log" >&2 || true
      return 1
    fi
    sleep 0.1
  done
}

# apt_install PACKAGE... installs Debian packages when running as root (a
# fresh CI machine); elsewhere it tells the developer what is missing. It
# waits up to five minutes for a package manager already running (a second
# test run installing the same packages, unattended upgrades) rather than
# fail at once on its lock.
apt_install() {
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "testenv: missing $*; install it (Debian: apt-get install $*)" >&2
    return 1
  fi
  if [ -z "${TESTENV_APT_UPDATED:-}" ]; then
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 update -qq >/dev/null
    TESTENV_APT_UPDATED=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "$@" >/dev/null
}

# Test servers built from the tools module beside this file, whose go.mod
# pins their versions: name, module, package of the binary. The collector's
# main package is the module's own (./otelcol: the collector's components
# are chosen in Go, not by a flag), built from the collector release pinned
# there.
testenv_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
testenv_tools=(
  "versitygw github.com/versity/versitygw github.com/versity/versitygw/cmd/versitygw"
  "fake-gcs-server github.com/fsouza/fake-gcs-server github.com/fsouza/fake-gcs-server"
  "otelcol go.opentelemetry.io/collector/otelcol ./otelcol"
)

# The test servers are built without the compiler's optimizations: that
# takes a quarter less CPU (on a cold machine, about a minute of a test
# run), and the tests run no slower, the servers doing little work in them.
# The load benchmarks, which must not be held back by a server, set
# TESTENV_OPTIMIZED=1 (bench/lib.sh) and get binaries of their own.

# link_tool_cache ROOT makes ROOT/.testenv/bin, where the test servers'
# binaries are built once and reused by later runs. A fresh clone links it
# to a directory under the user's cache, named after the tools module's
# go.sum, so clones share one build of the test servers
# (minutes of compiling on a cold machine) and a change to the pins builds
# afresh. An existing .testenv/bin (a directory or a link) is left as it
# is, but for a link whose cache was since removed, which is made again.
link_tool_cache() {
  local root=${1:?usage: link_tool_cache ROOT} cache shared
  mkdir -p "$root/.testenv" || return 1
  if [ -L "$root/.testenv/bin" ] && [ ! -e "$root/.testenv/bin" ]; then
    rm -f "$root/.testenv/bin"
  fi
  if [ ! -e "$root/.testenv/bin" ] && [ ! -L "$root/.testenv/bin" ]; then
    cache=${XDG_CACHE_HOME:-}
    if [ -z "$cache" ]; then
      cache=$(dirname "$(go env GOCACHE)")
    fi
    shared=$cache/aigateway-testenv/$(sha256sum "$testenv_here/go.sum" | cut -c1-16)
    if mkdir -p "$shared"; then
      ln -s "$shared" "$root/.testenv/bin" 2>/dev/null || true
    fi
  fi
  mkdir -p "$root/.testenv/bin"
}

# tool_exe BIN NAME prints the path of test server NAME's binary in BIN,
# named after its pinned version so that bumping go.mod builds it afresh,
# and for a main package of this module also after its source, so that
# changing that builds it afresh too.
tool_exe() {
  local bin=$1 name=$2 t n module pkg version
  for t in "${testenv_tools[@]}"; do
    read -r n module pkg <<<"$t"
    if [[ $n == "$name" ]]; then
      version=$(awk -v m="$module" '$1 == m && $2 ~ /^v/ { print $2; exit }' "$testenv_here/go.mod")
      if [[ -z $version ]]; then
        echo "testenv: $module is not pinned in $testenv_here/go.mod" >&2
        return 1
      fi
      if [[ $pkg == ./* ]]; then
        version+=-$(cat "$testenv_here/$pkg"/*.go | sha256sum | cut -c1-8)
      fi
      if [[ -n ${TESTENV_OPTIMIZED:-} ]]; then
        echo "$bin/$name@$version"
      else
        echo "$bin/$name@$version-noopt"
      fi
      return 0
    fi
  done
  echo "testenv: no test server named $name" >&2
  return 1
}

# build_tools BIN builds the test servers missing from BIN in one go build:
# they share many dependencies (gRPC, protobuf, OpenTelemetry), and one build keeps both cores busy where
# two in a row would each leave one idle at times (about 40 s of a cold
# build here). No symbol tables or DWARF: nobody debugs them here, and it
# shortens the link. The binaries are written to a temporary directory and
# renamed into place, so a concurrent run never executes a half-written one.
build_tools() {
  local bin=${1:?usage: build_tools BIN} t name module pkg exe tmp i
  local -a pkgs=() names=() flags=(-trimpath -ldflags='-s -w')
  if [[ -z ${TESTENV_OPTIMIZED:-} ]]; then
    flags+=(-gcflags='all=-N -l')
  fi
  mkdir -p "$bin" || return 1
  for t in "${testenv_tools[@]}"; do
    read -r name module pkg <<<"$t"
    exe=$(tool_exe "$bin" "$name") || return 1
    if [[ ! -x $exe ]]; then
      pkgs+=("$pkg")
      names+=("$name")
    fi
  done
  if ((${#pkgs[@]} == 0)); then
    return 0
  fi
  echo "testenv: building ${names[*]} (once; cached in $bin)" >&2
  tmp=$(mktemp -d "$bin/.build.XXXXXX") || return 1
  if ! go -C "$testenv_here" build "${flags[@]}" -o "$tmp/" "${pkgs[@]}"; then
    rm -rf "$tmp"
    echo "testenv: building ${names[*]} failed" >&2
    return 1
  fi
  for i in "${!pkgs[@]}"; do
    mv -f "$tmp/$(basename "${pkgs[$i]}")" "$(tool_exe "$bin" "${names[$i]}")" || { rm -rf "$tmp"; return 1; }
  done
  rm -rf "$tmp"
}
