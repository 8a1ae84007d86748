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
# need COMMAND: installs the Debian package of that name when COMMAND is
# missing (as root), else says what to install and stops.
need() { command -v "$1" >/dev/null || apt_install "$1" || exit 1; }
