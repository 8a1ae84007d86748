// Command abuse is the attack client of bench/abuse.sh. It runs the
// slow-body and half-close attacks of issue 14 against one running gateway
// on the loopback interface while a normal client measures lookup latency,
// and reports what the gateway did, phase by phase:
//
//		abuse -addr 127.0.0.1:8080 -key sk-gw-… -mgmt sk-gw-… -pid 4242
//
//	 1. baseline: -workers keep-alive connections send GET
//	    /api/v1/model/{model} back to back for -baseline; latency p50, p99,
//	    max and the answers other than 200.
//	 2. slow body: -stall connections each send the head of a POST (to
//	    /api/v1/workspaces or /healthz) declaring a 1000-byte body and then
//	    part of it or none, and send nothing more; -trickle of them send one
//	    more byte a second. The lookups go on meanwhile. Every 500 ms it
//	    samples the gateway's descriptors and RSS (from /proc/PID) and how
//	    many attack connections the gateway still holds open (each attack
//	    socket has a reader that sees the gateway's answer, EOF or reset).
//	    After -duration it reports the peaks, the lookups, how each attack
//	    connection ended (refused with a 503, answered, closed without an
//	    answer, or still open) and when the last one was closed.
//	 3. half close: -halfclose complete workspace creates (management key,
//	    unique slugs) and as many complete small uploads (standard key), each
//	    followed at once by shutdown(SHUT_WR), then the answer is read. A 2xx
//	    is a success reported; whether the work was done is checked after:
//	    the workspace is looked up by slug, an upload counts as stored when
//	    its answer carries the file's id (and, with -files-dir, the objects
//	    the storage directory gained are counted). A few ordinary requests
//	    first prove the requests themselves are valid.
//
// The last line sums it up for the closing note:
//
//	abuse: fds_peak=2061 held_peak=2000 lookup_p99_ms=3.1 undone_successes=0 …
//
// Only loopback addresses are accepted, every loop is bounded in count and
// time, and the exit status is non-zero only when the tool itself fails
// (bad flags, the gateway unreachable, a control request refused), never
// for what it finds.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"
)

type options struct {
	addr        string
	key, mgmt   string
	pid         int
	model       string
	workers     int
	baseline    time.Duration
	duration    time.Duration
	stall       int
	trickle     int
	attackFrom  []netip.Addr
	halfClose   int
	filesDir    string
	ioTimeout   time.Duration
	sampleEvery time.Duration
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "abuse:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	limit, err := raiseFileLimit()
	if err != nil {
		return err
	}
	// Each stalled connection costs this process one descriptor; the
	// lookups, the half-close phase and the runtime need a few dozen more.
	if need := uint64(o.stall + o.workers + 64); need > limit {
		return fmt.Errorf("-stall %d needs about %d file descriptors, the limit is %d", o.stall, need, limit)
	}
	proc := procStats{pid: o.pid}
	if err := proc.check(); err != nil {
		return err
	}
	lookup, err := buildLookup(o.addr, o.key, o.model)
	if err != nil {
		return err
	}
	if status, err := lookup.once(o.ioTimeout); err != nil || status != 200 {
		return fmt.Errorf("GET /api/v1/model/%s: status %d, %v (is the gateway up and the key valid?)", o.model, status, err)
	}
	fmt.Fprintf(stdout, "abuse: %s, gateway pid %d, descriptor limit %d, %d lookup workers\n", o.addr, o.pid, limit, o.workers)

	base, err := lookup.run(o.workers, o.baseline, o.ioTimeout, nil)
	if err != nil {
		return err
	}
	fds0, rss0 := proc.fds(), proc.rssKiB()
	fmt.Fprintf(stdout, "\n== baseline (%s)\n", o.baseline)
	fmt.Fprintf(stdout, "  lookups     %s\n", base)
	fmt.Fprintf(stdout, "  gateway     fds %s, rss %s\n", fmtCount(fds0), fmtKiB(rss0))

	slow, err := slowBody(o, lookup, proc)
	if err != nil {
		return err
	}
	slow.print(stdout, o)

	half, err := halfCloseAttack(o)
	if err != nil {
		return err
	}
	half.print(stdout)

	fmt.Fprintf(stdout, "\nabuse: fds_peak=%s held_peak=%d lookup_p99_ms=%.1f undone_successes=%d"+
		" baseline_p99_ms=%.1f lookup_non200=%d lookup_errors=%d refused_503=%d still_open=%d honest_successes=%d\n",
		fmtCount(slow.fdsPeak), slow.heldPeak, ms(slow.lookups.quantile(0.99)), half.undone(),
		ms(base.quantile(0.99)), slow.lookups.non200, slow.lookups.errors, slow.refused, slow.stillOpen, half.honest())
	return nil
}

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("abuse", flag.ContinueOnError)
	var o options
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8080", "the gateway's host:port (loopback only)")
	fs.StringVar(&o.key, "key", "", "a standard API key (lookups, uploads)")
	fs.StringVar(&o.mgmt, "mgmt", "", "a management API key (workspace creates and lookups)")
	fs.IntVar(&o.pid, "pid", 0, "the gateway's process id, for /proc/PID/fd and VmRSS (0: not sampled)")
	fs.StringVar(&o.model, "model", "openai/gpt-4o", "the model the normal client looks up")
	fs.IntVar(&o.workers, "workers", 4, "keep-alive connections of the normal client")
	fs.DurationVar(&o.baseline, "baseline", 3*time.Second, "length of the baseline phase")
	fs.DurationVar(&o.duration, "duration", 20*time.Second, "length of the slow-body phase")
	fs.IntVar(&o.stall, "stall", 2000, "stalled-body connections")
	fs.IntVar(&o.trickle, "trickle", 200, "of the stalled connections, how many send one more body byte a second")
	from := fs.String("attack-from", "127.0.0.2", "comma-separated loopback source addresses of the attack connections, used in turn (empty: the kernel's choice); another address than the normal client's, so a per-client cap meets the attacker")
	fs.IntVar(&o.halfClose, "halfclose", 200, "half-closed workspace creates, and as many half-closed uploads")
	fs.StringVar(&o.filesDir, "files-dir", "", "the gateway's fs storage directory, to count the objects an upload phase stored (optional)")
	fs.DurationVar(&o.ioTimeout, "timeout", 5*time.Second, "how long one lookup or half-close exchange may take")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.sampleEvery = 500 * time.Millisecond
	var problems []string
	if err := loopbackHostPort(o.addr); err != nil {
		problems = append(problems, err.Error())
	}
	if o.key == "" || o.mgmt == "" {
		problems = append(problems, "-key and -mgmt are required")
	}
	if o.workers < 1 || o.stall < 0 || o.trickle < 0 || o.trickle > o.stall || o.halfClose < 0 {
		problems = append(problems, "-workers must be positive, -stall, -trickle and -halfclose not negative, -trickle at most -stall")
	}
	if o.baseline <= 0 || o.duration <= 0 || o.ioTimeout <= 0 {
		problems = append(problems, "-baseline, -duration and -timeout must be positive")
	}
	// Bounded, so a typo cannot run for hours or open the machine's every port.
	if o.duration > 10*time.Minute || o.stall > 60000 || o.halfClose > 10000 {
		problems = append(problems, "-duration is at most 10m, -stall at most 60000, -halfclose at most 10000")
	}
	for _, s := range strings.Split(*from, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil || !a.IsLoopback() {
			problems = append(problems, fmt.Sprintf("-attack-from %q: not a loopback address", s))
			continue
		}
		o.attackFrom = append(o.attackFrom, a)
	}
	if len(problems) > 0 {
		return o, errors.New(strings.Join(problems, "; "))
	}
	return o, nil
}

// loopbackHostPort refuses any target but a loopback address: this tool
// opens thousands of connections and must never aim them elsewhere.
func loopbackHostPort(hostport string) error {
	ap, err := netip.ParseAddrPort(hostport)
	if err != nil || !ap.Addr().IsLoopback() || ap.Port() == 0 {
		return fmt.Errorf("-addr %q: want a loopback ip:port such as 127.0.0.1:8080", hostport)
	}
	return nil
}

// dialer returns a dialer whose connections leave from the i-th attack
// source address, or from the kernel's choice when there are none.
func dialer(from []netip.Addr, i int, timeout time.Duration) *net.Dialer {
	d := &net.Dialer{Timeout: timeout}
	if len(from) > 0 {
		d.LocalAddr = &net.TCPAddr{IP: from[i%len(from)].AsSlice()}
	}
	return d
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func fmtCount(n int) string {
	if n < 0 {
		return "n/a"
	}
	return fmt.Sprint(n)
}

func fmtKiB(kib int) string {
	if kib < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f MiB", float64(kib)/1024)
}
