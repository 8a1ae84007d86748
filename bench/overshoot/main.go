// Command overshoot measures how far past its limit a key's spend runs when
// many clients use it at once through several replicas: it creates a
// standard key with a limit (management key, first replica), then runs
// clients that each, in a loop, look up GET /api/v1/models/count with that
// key and, when served, report one request's cost for it with a service key
// (POST /api/v1/usage) to the same replica, alternating replicas from one
// request to the next. The clients start once the replicas have read the
// key's limit (-settle). A client stops once it has been refused (402) by
// every replica. The overshoot is the key's final usage (GET /keys/{hash})
// minus its limit: what was served and reported after the limit was
// reached, which a replica that refuses the crossing key at once, and the
// others within their refresh, keeps small.
//
//	overshoot -replicas http://127.0.0.1:8081,http://127.0.0.1:8082 \
//	          -management sk-gw-… -service sk-gw-… -clients 50 -cost 0.10 -limit 1
//
// It prints one line of key=value pairs (dollars to the millionth):
//
//	usage=3.200000 overshoot=2.200000 served=32 refused=100 seconds=1.21
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

type options struct {
	replicas   []string
	management string
	service    string
	clients    int
	cost       float64
	limit      float64
	settle     time.Duration
	timeout    time.Duration
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "overshoot:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	o, err := parse(args)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * o.clients}}
	api := gateway{hc: hc}
	hash, secret, err := api.createKey(ctx, o.replicas[0], o.management, o.limit)
	if err != nil {
		return err
	}
	// A limit takes effect on each replica at its next refresh (about a
	// second): a key limited longer ago than that is what the run measures,
	// not one whose limit no replica has read yet.
	time.Sleep(o.settle)
	start := time.Now()
	tally, err := load(ctx, api, o, hash, secret)
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	usage, err := api.keyUsage(ctx, o.replicas[0], o.management, hash)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "usage=%.6f overshoot=%.6f served=%d refused=%d seconds=%.2f\n",
		usage, usage-o.limit, tally.served.Load(), tally.refused.Load(), elapsed.Seconds())
	return err
}

func parse(args []string) (options, error) {
	fs := flag.NewFlagSet("overshoot", flag.ContinueOnError)
	replicas := fs.String("replicas", "", "comma-separated base URLs of the replicas (at least one)")
	o := options{}
	fs.StringVar(&o.management, "management", "", "a management key (creates the limited key, reads its usage)")
	fs.StringVar(&o.service, "service", "", "a service key of the same user (reports the usage)")
	fs.IntVar(&o.clients, "clients", 50, "concurrent clients")
	fs.Float64Var(&o.cost, "cost", 0.10, "dollars reported per request served")
	fs.Float64Var(&o.limit, "limit", 1, "the key's limit in dollars")
	fs.DurationVar(&o.settle, "settle", 3*time.Second, "wait this long between creating the key and using it (over the replicas' refresh interval)")
	fs.DurationVar(&o.timeout, "timeout", 2*time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	for r := range strings.SplitSeq(*replicas, ",") {
		if r = strings.TrimSuffix(strings.TrimSpace(r), "/"); r != "" {
			o.replicas = append(o.replicas, r)
		}
	}
	switch {
	case len(o.replicas) == 0:
		return o, errors.New("-replicas is required")
	case o.management == "" || o.service == "":
		return o, errors.New("-management and -service are required")
	case o.clients < 1 || o.cost <= 0 || o.limit <= 0:
		return o, errors.New("-clients, -cost and -limit must be positive")
	}
	return o, nil
}

type tally struct{ served, refused atomic.Int64 }

// load runs the clients until each has been refused by every replica, and
// fails on any answer other than 200 or a lookup's 402: a 429 or 5xx
// would mean the run measured something else.
func load(ctx context.Context, api gateway, o options, hash, secret string) (*tally, error) {
	t := &tally{}
	errs := make([]error, o.clients)
	var wg sync.WaitGroup
	for c := range o.clients {
		wg.Go(func() { errs[c] = client(ctx, api, o, c, hash, secret, t) })
	}
	wg.Wait()
	return t, errors.Join(errs...)
}

func client(ctx context.Context, api gateway, o options, c int, hash, secret string, t *tally) error {
	refusedBy := make([]bool, len(o.replicas))
	left := len(o.replicas)
	// Clients start on different replicas, so every replica carries load
	// from the first request.
	for i := c; left > 0; i++ {
		r := i % len(o.replicas)
		status, err := api.lookup(ctx, o.replicas[r], secret)
		if err != nil {
			return err
		}
		if status == http.StatusPaymentRequired {
			t.refused.Add(1)
			if !refusedBy[r] {
				refusedBy[r] = true
				left--
			}
			continue
		}
		if err := api.report(ctx, o.replicas[r], o.service, hash, o.cost); err != nil {
			return err
		}
		t.served.Add(1)
	}
	return nil
}

type gateway struct{ hc *http.Client }

func (g gateway) createKey(ctx context.Context, base, mgmt string, limit float64) (hash, secret string, err error) {
	var out struct {
		Data struct {
			Hash string `json:"hash"`
		} `json:"data"`
		Key string `json:"key"`
	}
	body := map[string]any{"name": "overshoot " + randomID()[:8], "limit": limit}
	if err := g.call(ctx, http.MethodPost, base+"/api/v1/keys", mgmt, body, http.StatusCreated, &out); err != nil {
		return "", "", fmt.Errorf("creating the key: %w", err)
	}
	return out.Data.Hash, out.Key, nil
}

func (g gateway) keyUsage(ctx context.Context, base, mgmt, hash string) (float64, error) {
	var out struct {
		Data struct {
			Usage float64 `json:"usage"`
		} `json:"data"`
	}
	if err := g.call(ctx, http.MethodGet, base+"/api/v1/keys/"+hash, mgmt, nil, http.StatusOK, &out); err != nil {
		return 0, fmt.Errorf("reading the key's usage: %w", err)
	}
	return out.Data.Usage, nil
}

// lookup answers the status of one GET /models/count: 200 or 402.
func (g gateway) lookup(ctx context.Context, base, secret string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/models/count", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	res, err := g.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	if _, err := io.Copy(io.Discard, res.Body); err != nil {
		return 0, err
	}
	if res.StatusCode != http.StatusOK && res.StatusCode != http.StatusPaymentRequired {
		return 0, fmt.Errorf("lookup on %s: status %d", base, res.StatusCode)
	}
	return res.StatusCode, nil
}

func (g gateway) report(ctx context.Context, base, service, hash string, cost float64) error {
	body := map[string]any{"reports": []map[string]any{{"id": randomID(), "key": hash, "cost": cost}}}
	if err := g.call(ctx, http.MethodPost, base+"/api/v1/usage", service, body, http.StatusOK, nil); err != nil {
		return fmt.Errorf("reporting usage: %w", err)
	}
	return nil
}

// call sends body as JSON (none when nil), expects the status want and
// decodes the answer into out (unless nil).
func (g gateway) call(ctx context.Context, method, url, key string, body any, want int, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := g.hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return err
	}
	if res.StatusCode != want {
		return fmt.Errorf("%s %s: status %d: %.200s", method, url, res.StatusCode, raw)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(raw, out)
}

func randomID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
