// Command probe is an open-loop latency probe: it sends GET requests on a
// fixed schedule (rate per second, spread over several keep-alive
// connections) whatever the server answers, and measures each latency from
// the request's scheduled send time, not from when it was actually sent. A
// server that stalls therefore shows the stall in every request that should
// have been sent meanwhile (no coordinated omission), as wrk2 does.
//
// Each connection owns every conns-th slot of the schedule, so one slow
// response delays that connection's later requests, and their latencies
// include the wait. Requests of the warm-up are sent but not measured.
//
//	probe -url http://127.0.0.1:8080/api/v1/model/openai/gpt-4o \
//	      -H 'Authorization: Bearer sk-…' -rate 2000 -duration 10s -conns 16
//
// It prints one line of key=value pairs (latencies in microseconds):
//
//	sent=20000 errors=0 non2xx=0 p50_us=142 p90_us=201 p99_us=380 p999_us=910 max_us=1520 lag_p50_us=58 lag_p99_us=95
//
// lag_* is how late the probe itself sent requests compared with their
// schedule (timer and scheduling overhead of the probe's own machine); it is
// part of every latency, equally for every server probed.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

type headers []string

func (h *headers) String() string     { return strings.Join(*h, ", ") }
func (h *headers) Set(v string) error { *h = append(*h, v); return nil }

type options struct {
	target   *url.URL
	header   http.Header
	rate     float64
	duration time.Duration
	warmup   time.Duration
	conns    int
	timeout  time.Duration
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("probe", flag.ContinueOnError)
	rawURL := fs.String("url", "", "URL to GET (http only)")
	var hs headers
	fs.Var(&hs, "H", "request header 'Name: value' (repeatable)")
	rate := fs.Float64("rate", 2000, "requests per second, on a fixed schedule")
	duration := fs.Duration("duration", 10*time.Second, "measured time")
	warmup := fs.Duration("warmup", time.Second, "time sent but not measured, before the measured time")
	conns := fs.Int("conns", 16, "keep-alive connections")
	timeout := fs.Duration("timeout", 5*time.Second, "per-request read/write timeout")
	if err := fs.Parse(args); err != nil {
		return err
	}
	u, err := url.Parse(*rawURL)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return fmt.Errorf("-url %q: want an http:// URL", *rawURL)
	}
	if *rate <= 0 || *duration <= 0 || *conns < 1 || *warmup < 0 {
		return errors.New("-rate, -duration and -conns must be positive")
	}
	h := http.Header{}
	for _, v := range hs {
		name, value, ok := strings.Cut(v, ":")
		if !ok {
			return fmt.Errorf("-H %q: want 'Name: value'", v)
		}
		h.Add(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	res, err := probe(options{target: u, header: h, rate: *rate, duration: *duration, warmup: *warmup, conns: *conns, timeout: *timeout})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, res)
	return err
}

// result is what one probe run measured.
type result struct {
	sent, errors, non2xx int
	latencies            []time.Duration // measured requests only, from their scheduled time
	lags                 []time.Duration // actual send time minus scheduled time
}

func (r result) String() string {
	slices.Sort(r.latencies)
	slices.Sort(r.lags)
	us := func(d time.Duration) int64 { return d.Microseconds() }
	return fmt.Sprintf("sent=%d errors=%d non2xx=%d p50_us=%d p90_us=%d p99_us=%d p999_us=%d max_us=%d lag_p50_us=%d lag_p99_us=%d",
		r.sent, r.errors, r.non2xx,
		us(quantile(r.latencies, 0.50)), us(quantile(r.latencies, 0.90)), us(quantile(r.latencies, 0.99)),
		us(quantile(r.latencies, 0.999)), us(quantile(r.latencies, 1)),
		us(quantile(r.lags, 0.50)), us(quantile(r.lags, 0.99)))
}

// quantile is the nearest-rank quantile of sorted values (0 for none).
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}

func probe(o options) (result, error) {
	req, err := buildRequest(o.target, o.header)
	if err != nil {
		return result{}, err
	}
	period := time.Duration(float64(time.Second) / o.rate)
	total := int((o.warmup + o.duration) / period)
	firstMeasured := int(o.warmup / period)

	// Connect everything before the clock starts, so dials are not
	// measured as latency.
	workers := make([]*conn, o.conns)
	for i := range workers {
		c, err := dial(o.target.Host, o.timeout)
		if err != nil {
			return result{}, err
		}
		defer c.close()
		workers[i] = c
	}

	start := time.Now().Add(10 * time.Millisecond)
	parts := make([]result, o.conns)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, r := workers[w], &parts[w]
			r.latencies = make([]time.Duration, 0, total/o.conns+1)
			for i := w; i < total; i += o.conns {
				scheduled := start.Add(time.Duration(i) * period)
				sleepUntil(scheduled)
				sentAt := time.Now()
				status, err := c.roundTrip(req, o.timeout)
				done := time.Now()
				r.sent++
				switch {
				case err != nil:
					r.errors++
					c.redial(o.target.Host, o.timeout)
				case status < 200 || status > 299:
					r.non2xx++
				}
				if i >= firstMeasured {
					r.latencies = append(r.latencies, done.Sub(scheduled))
					r.lags = append(r.lags, sentAt.Sub(scheduled))
				}
			}
		}()
	}
	wg.Wait()

	var all result
	for _, p := range parts {
		all.sent += p.sent
		all.errors += p.errors
		all.non2xx += p.non2xx
		all.latencies = append(all.latencies, p.latencies...)
		all.lags = append(all.lags, p.lags...)
	}
	return all, nil
}

// sleepUntil blocks the calling thread until t with nanosleep(2), whose
// wake-ups are tens of microseconds late; time.Sleep rounds sub-millisecond
// waits up to the runtime poller's millisecond, which would add about half
// a millisecond of the probe's own lag to every latency.
func sleepUntil(t time.Time) {
	for {
		d := time.Until(t)
		if d <= 0 {
			return
		}
		ts := syscall.NsecToTimespec(d.Nanoseconds())
		if err := syscall.Nanosleep(&ts, nil); err != nil && err != syscall.EINTR {
			time.Sleep(d)
			return
		}
	}
}

// buildRequest renders the request once; every send writes the same bytes.
func buildRequest(u *url.URL, h http.Header) ([]byte, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: probe\r\n", u.RequestURI(), u.Host)
	if err := h.Write(&b); err != nil {
		return nil, err
	}
	b.WriteString("\r\n")
	return []byte(b.String()), nil
}

// conn is one keep-alive HTTP/1.1 connection used by one goroutine.
type conn struct {
	nc net.Conn
	br *bufio.Reader
}

func dial(addr string, timeout time.Duration) (*conn, error) {
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	return &conn{nc: nc, br: bufio.NewReaderSize(nc, 64<<10)}, nil
}

func (c *conn) redial(addr string, timeout time.Duration) {
	c.close()
	if nc, err := net.DialTimeout("tcp", addr, timeout); err == nil {
		c.nc, c.br = nc, bufio.NewReaderSize(nc, 64<<10)
	}
}

func (c *conn) close() {
	if c.nc != nil {
		_ = c.nc.Close()
		c.nc = nil
	}
}

// roundTrip writes the request and reads the whole response.
func (c *conn) roundTrip(req []byte, timeout time.Duration) (int, error) {
	if c.nc == nil {
		return 0, errors.New("not connected")
	}
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
	if err != nil {
		return 0, err
	}
	if resp.Close {
		return resp.StatusCode, errors.New("server closed the connection")
	}
	return resp.StatusCode, nil
}
