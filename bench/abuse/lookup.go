package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// lookupClient is the normal client: model lookups on keep-alive
// connections, one request at a time per connection.
type lookupClient struct {
	addr string
	req  []byte // the whole request, rendered once
}

func buildLookup(addr, key, model string) (*lookupClient, error) {
	if model == "" || strings.ContainsAny(model, " \t\r\n?#") {
		return nil, fmt.Errorf("-model %q: want a model id such as openai/gpt-4o", model)
	}
	if strings.ContainsAny(key, "\r\n") {
		return nil, errors.New("-key: contains a line break")
	}
	req := fmt.Sprintf("GET /api/v1/model/%s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nUser-Agent: abuse-lookup\r\n\r\n", model, addr, key)
	return &lookupClient{addr: addr, req: []byte(req)}, nil
}

// once sends one lookup on a connection of its own.
func (l *lookupClient) once(timeout time.Duration) (int, error) {
	c := &lookupConn{}
	defer c.close()
	if err := c.dial(l.addr, timeout); err != nil {
		return 0, err
	}
	return c.roundTrip(l.req, timeout)
}

// run sends lookups on workers connections for d and measures each from
// its send to the end of its answer; an attempt that fails (timeout, reset,
// refused connection) counts as an error and its time as its latency, so a
// stalled gateway shows in the figures. The connections are open before
// run closes ready (if not nil), so an attack started then does not stand
// between them and the gateway's accept loop.
func (l *lookupClient) run(workers int, d, timeout time.Duration, ready chan<- struct{}) (lookupStats, error) {
	conns := make([]*lookupConn, workers)
	for i := range conns {
		conns[i] = &lookupConn{}
		defer conns[i].close()
		if err := conns[i].dial(l.addr, timeout); err != nil {
			return lookupStats{}, fmt.Errorf("lookup client: %w", err)
		}
	}
	if ready != nil {
		close(ready)
	}
	start := time.Now()
	end := start.Add(d)
	parts := make([]lookupStats, workers)
	var wg sync.WaitGroup
	for w, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := &parts[w]
			for time.Now().Before(end) {
				t0 := time.Now()
				err := c.ensure(l.addr, timeout)
				status := 0
				if err == nil {
					status, err = c.roundTrip(l.req, timeout)
				}
				s.latencies = append(s.latencies, time.Since(t0))
				if status != 0 && status != http.StatusOK {
					s.non200++
				}
				if err != nil {
					c.close()
				}
				if status == 0 {
					s.errors++
					// A gateway refusing connections outright would
					// otherwise be dialled in a tight loop.
					time.Sleep(50 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	all := lookupStats{elapsed: time.Since(start)}
	for _, p := range parts {
		all.latencies = append(all.latencies, p.latencies...)
		all.errors += p.errors
		all.non200 += p.non200
	}
	slices.Sort(all.latencies)
	return all, nil
}

// lookupStats is what one run of the normal client measured.
type lookupStats struct {
	latencies []time.Duration // sorted once the run is over
	errors    int             // attempts with no answer (timeout, reset, refused)
	non200    int             // answers other than 200
	elapsed   time.Duration
}

// quantile is the nearest-rank quantile of the latencies (0 for none).
func (s lookupStats) quantile(q float64) time.Duration {
	if len(s.latencies) == 0 {
		return 0
	}
	i := int(q*float64(len(s.latencies))+0.5) - 1
	return s.latencies[max(0, min(i, len(s.latencies)-1))]
}

func (s lookupStats) String() string {
	rate := 0.0
	if s.elapsed > 0 {
		rate = float64(len(s.latencies)) / s.elapsed.Seconds()
	}
	return fmt.Sprintf("%d requests (%.0f/s), p50 %.2f ms, p99 %.2f ms, max %.2f ms, non-200 %d, no answer %d",
		len(s.latencies), rate, ms(s.quantile(0.5)), ms(s.quantile(0.99)), ms(s.quantile(1)), s.non200, s.errors)
}

// lookupConn is one keep-alive HTTP/1.1 connection of one worker.
type lookupConn struct {
	nc net.Conn
	br *bufio.Reader
}

func (c *lookupConn) dial(addr string, timeout time.Duration) error {
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	c.nc, c.br = nc, bufio.NewReader(nc)
	return nil
}

func (c *lookupConn) ensure(addr string, timeout time.Duration) error {
	if c.nc != nil {
		return nil
	}
	return c.dial(addr, timeout)
}

func (c *lookupConn) close() {
	if c.nc != nil {
		_ = c.nc.Close()
		c.nc = nil
	}
}

// roundTrip writes the request and reads the whole answer. An answer that
// closes the connection returns its status and an error, so the caller
// dials again.
func (c *lookupConn) roundTrip(req []byte, timeout time.Duration) (int, error) {
	if err := c.nc.SetDeadline(time.Now().Add(timeout)); err != nil {
		return 0, err
	}
	if _, err := c.nc.Write(req); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err == nil && resp.Close {
		err = errClosedAfterAnswer
	}
	return resp.StatusCode, err
}

var errClosedAfterAnswer = errors.New("the gateway closed the connection after answering")
