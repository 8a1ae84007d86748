package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// declaredBody is the Content-Length every stalled request declares; it is
// never sent whole.
const declaredBody = 1000

// stallRequests are the requests the stalled connections send in turn: a
// keyless workspace create (the route authenticates before it reads, and the
// body must still be bounded) and a POST to /healthz (a route that does not
// read bodies at all), with none or part of the declared body.
var stallRequests = []struct {
	path string
	sent int // body bytes sent after the head
}{
	{"/api/v1/workspaces", 0},
	{"/api/v1/workspaces", 10},
	{"/healthz", 0},
	{"/healthz", 500},
}

// stallBody is the body the stalled requests send a prefix of: JSON-looking,
// so a handler that reads it sees the start of an object.
var stallBody = []byte(`{"name":"` + strings.Repeat("a", declaredBody))

// endKind is how an attack connection ended.
type endKind int

const (
	endOpen  endKind = iota // still open when the phase ended (we closed it)
	endEOF                  // the gateway closed it (FIN)
	endReset                // the gateway reset it (RST)
	endError                // another read error
)

// attackConn is one stalled connection and what its reader saw.
type attackConn struct {
	nc      net.Conn
	trickle bool
	sent    int // body bytes sent; the trickler's after setup
	ended   chan struct{}
	// Written by the reader before it closes ended.
	status int // status of the gateway's answer, 0 for none
	how    endKind
	at     time.Duration // since the phase started
}

// watch reads whatever the gateway sends until the connection ends.
func (c *attackConn) watch(start time.Time, closedByGateway *atomic.Int64) {
	defer close(c.ended)
	var head []byte
	buf := make([]byte, 512)
	for {
		n, err := c.nc.Read(buf)
		if len(head) < 16 {
			head = append(head, buf[:n]...)
		}
		if err == nil {
			continue
		}
		c.status = statusOf(head)
		c.at = time.Since(start)
		switch {
		case errors.Is(err, net.ErrClosed):
			c.how = endOpen
			return
		case errors.Is(err, io.EOF):
			c.how = endEOF
		case errors.Is(err, syscall.ECONNRESET):
			c.how = endReset
		default:
			c.how = endError
		}
		closedByGateway.Add(1)
		return
	}
}

// statusOf is the status code of an HTTP/1.x status line at the start of
// head, or 0.
func statusOf(head []byte) int {
	rest, ok := bytes.CutPrefix(head, []byte("HTTP/1."))
	if !ok || len(rest) < 5 || rest[1] != ' ' {
		return 0
	}
	code, err := strconv.Atoi(string(rest[2:5]))
	if err != nil {
		return 0
	}
	return code
}

type sample struct {
	at           time.Duration
	opened, held int
	fds, rssKiB  int
}

// slowResult is what the slow-body phase measured.
type slowResult struct {
	attempted, opened, dialFailed int
	sources                       []string
	lookups                       lookupStats
	samples                       []sample
	fdsBefore, fdsAfter           int
	fdsPeak, rssPeak, heldPeak    int
	refused, eof, reset, other    int
	answered                      map[int]int // statuses other than 503, of connections the gateway closed
	stillOpen, trickleOpen        int
	lastClosed                    time.Duration
}

// slowBody runs the slow-body attack for o.duration with the normal client
// measuring lookups throughout.
func slowBody(o options, l *lookupClient, p procStats) (*slowResult, error) {
	res := &slowResult{attempted: o.stall, answered: map[int]int{}, fdsBefore: p.fds(), fdsPeak: -1, rssPeak: -1}
	for _, a := range o.attackFrom {
		res.sources = append(res.sources, a.String())
	}

	ready := make(chan struct{})
	type lookupOutcome struct {
		s   lookupStats
		err error
	}
	lookupDone := make(chan lookupOutcome, 1)
	go func() {
		s, err := l.run(o.workers, o.duration, o.ioTimeout, ready)
		lookupDone <- lookupOutcome{s, err}
	}()
	select {
	case <-ready:
	case r := <-lookupDone:
		return nil, r.err
	}

	start := time.Now()
	end := start.Add(o.duration)
	var opened, dialFailed, closedByGateway atomic.Int64
	conns := make([]*attackConn, o.stall)
	stop := make(chan struct{})

	var trickleMu sync.Mutex
	var trickling []*attackConn

	// Dial from a few goroutines at once, as an attacker would; stop when
	// the phase is over even if not all are open.
	var next atomic.Int64
	var dialers sync.WaitGroup
	for range min(32, max(1, o.stall)) {
		dialers.Add(1)
		go func() {
			defer dialers.Done()
			for {
				i := int(next.Add(1) - 1)
				left := time.Until(end)
				if i >= o.stall || left <= 0 {
					return
				}
				nc, err := dialer(o.attackFrom, i, min(o.ioTimeout, left)).Dial("tcp", o.addr)
				if err != nil {
					dialFailed.Add(1)
					continue
				}
				rq := stallRequests[i%len(stallRequests)]
				c := &attackConn{nc: nc, trickle: i < o.trickle, sent: rq.sent, ended: make(chan struct{})}
				conns[i] = c
				opened.Add(1)
				go c.watch(start, &closedByGateway)
				head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: abuse-stall\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", rq.path, o.addr, declaredBody)
				_ = nc.SetWriteDeadline(time.Now().Add(2 * time.Second))
				// A failed write is the gateway's doing (a refusal); the
				// reader records it.
				_, _ = nc.Write(append([]byte(head), stallBody[:rq.sent]...))
				if c.trickle {
					trickleMu.Lock()
					trickling = append(trickling, c)
					trickleMu.Unlock()
				}
			}
		}()
	}

	// The trickle: one more body byte a second on each trickling
	// connection, never reaching the declared length.
	var background sync.WaitGroup
	background.Add(2)
	go every(time.Second, stop, &background, func() {
		trickleMu.Lock()
		list := slices.Clone(trickling)
		trickleMu.Unlock()
		for _, c := range list {
			select {
			case <-c.ended:
				continue
			default:
			}
			if c.sent >= declaredBody-1 {
				continue
			}
			_ = c.nc.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
			if n, _ := c.nc.Write(stallBody[c.sent : c.sent+1]); n == 1 {
				c.sent++
			}
		}
	})

	var samples []sample
	go every(o.sampleEvery, stop, &background, func() {
		op := int(opened.Load())
		samples = append(samples, sample{
			at:     time.Since(start),
			opened: op,
			held:   op - int(closedByGateway.Load()),
			fds:    p.fds(),
			rssKiB: p.rssKiB(),
		})
	})

	lr := <-lookupDone
	if lr.err != nil {
		close(stop)
		background.Wait()
		dialers.Wait()
		closeAll(conns)
		return nil, lr.err
	}
	res.lookups = lr.s
	time.Sleep(time.Until(end))
	close(stop)
	background.Wait()
	dialers.Wait()
	closeAll(conns)
	res.samples = samples
	res.dialFailed = int(dialFailed.Load())

	for _, c := range conns {
		if c == nil {
			continue
		}
		res.opened++
		switch {
		case c.how == endOpen:
			res.stillOpen++
			if c.trickle {
				res.trickleOpen++
			}
			continue
		case c.status == 503:
			res.refused++
		case c.status != 0:
			res.answered[c.status]++
		case c.how == endEOF:
			res.eof++
		case c.how == endReset:
			res.reset++
		default:
			res.other++
		}
		res.lastClosed = max(res.lastClosed, c.at)
	}
	for _, s := range samples {
		res.heldPeak = max(res.heldPeak, s.held)
		res.fdsPeak = max(res.fdsPeak, s.fds)
		res.rssPeak = max(res.rssPeak, s.rssKiB)
	}
	// Give the gateway a moment to notice the closed connections.
	time.Sleep(time.Second)
	res.fdsAfter = p.fds()
	return res, nil
}

// every calls f each period until stop is closed, then marks wg done.
func every(period time.Duration, stop <-chan struct{}, wg *sync.WaitGroup, f func()) {
	defer wg.Done()
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			f()
		}
	}
}

// closeAll closes every attack connection and waits for its reader.
func closeAll(conns []*attackConn) {
	for _, c := range conns {
		if c != nil {
			_ = c.nc.Close()
		}
	}
	for _, c := range conns {
		if c != nil {
			<-c.ended
		}
	}
}

func (r *slowResult) print(w io.Writer, o options) {
	from := "the kernel's choice of source address"
	if len(r.sources) > 0 {
		from = "from " + strings.Join(r.sources, ", ")
	}
	fmt.Fprintf(w, "\n== slow body (%s): %d connections %s, each declaring a %d-byte body and sending 0, 10 or 500 bytes of it; %d of them trickle 1 byte/s\n",
		o.duration, r.attempted, from, declaredBody, o.trickle)
	fmt.Fprintf(w, "  opened      %d (dial failures %d, not tried before the end %d)\n", r.opened, r.dialFailed, r.attempted-r.opened-r.dialFailed)
	fmt.Fprintf(w, "  lookups     %s\n", r.lookups)
	fmt.Fprintf(w, "  gateway     fds peak %s (before %s, 1 s after the attack %s), rss peak %s\n",
		fmtCount(r.fdsPeak), fmtCount(r.fdsBefore), fmtCount(r.fdsAfter), fmtKiB(r.rssPeak))
	fmt.Fprintf(w, "  held open   peak %d, at the end %d (of them trickling %d)\n", r.heldPeak, r.stillOpen, r.trickleOpen)
	var answered []string
	for _, code := range slices.Sorted(maps.Keys(r.answered)) {
		answered = append(answered, fmt.Sprintf("%d: %d", code, r.answered[code]))
	}
	fmt.Fprintf(w, "  ended       refused with 503: %d; answered otherwise: {%s}; closed without an answer: %d (FIN %d, RST %d, other %d)\n",
		r.refused, strings.Join(answered, ", "), r.eof+r.reset+r.other, r.eof, r.reset, r.other)
	if r.stillOpen == 0 && r.opened > 0 {
		fmt.Fprintf(w, "  all closed  by the gateway after %.1f s\n", r.lastClosed.Seconds())
	} else {
		fmt.Fprintf(w, "  all closed  no: %d still open after %s (the last closed by the gateway at %.1f s)\n", r.stillOpen, o.duration, r.lastClosed.Seconds())
	}
	fmt.Fprintf(w, "  timeline    %6s %7s %6s %6s %10s\n", "t", "opened", "held", "fds", "rss")
	for i, s := range r.samples {
		// Every 2 s, and the last sample.
		if (i+1)%4 != 0 && i != len(r.samples)-1 {
			continue
		}
		fmt.Fprintf(w, "              %5.1fs %7d %6d %6s %10s\n", s.at.Seconds(), s.opened, s.held, fmtCount(s.fds), fmtKiB(s.rssKiB))
	}
}
