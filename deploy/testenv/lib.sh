# Shared helpers for the test-server scripts; sourced by run.sh.

# free_port prints a loopback TCP port nobody listens on. Ports are drawn at
# random below the ephemeral range (which the machine's outgoing connections
# take, so a bind there can collide with one of them), so parallel runs
# rarely collide, and checked by trying to connect.
free_port() {
  local p tries=0 lo=10000 span
  span=$(($(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768) - lo))
  if ((span < 1000)); then # an ephemeral range starting low: take a high range then
    lo=20000 span=30000
  fi
  while ((tries++ < 200)); do
    p=$((lo + RANDOM % span))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return 0
    fi
  done
  echo "no free port found" >&2
  return 1
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
