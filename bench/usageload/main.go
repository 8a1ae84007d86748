// Command usageload fills a gateway with a day of usage, for measuring what
// the raw reports and the daily rollups take on disk: it creates -keys
// standard keys (management key), then posts -reports usage reports in
// batches of 1,000 (service key), spread round-robin over the keys and
// -models models (with a provider, an endpoint and token counts, as the
// components report what was served), all dated the same UTC day (-day,
// default yesterday, so that a run near midnight stays in one day), from
// -parallel clients at once.
//
//	usageload -url http://127.0.0.1:8080 -management sk-gw-… -service sk-gw-… \
//	          -keys 1000 -models 5 -reports 1000000
//
// It prints one line of key=value pairs:
//
//	keys=1000 models=5 reports=1000000 seconds=12.3 reports_per_s=81300
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
)

const batchSize = 1000

type options struct {
	url        string
	management string
	service    string
	keys       int
	models     int
	reports    int
	parallel   int
	plain      bool
	limit      float64
	day        time.Time
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "usageload:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	o, err := parse(args)
	if err != nil {
		return err
	}
	ctx := context.Background()
	g := gateway{hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * o.parallel}}, base: o.url}
	hashes, err := createKeys(ctx, g, o)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := postReports(ctx, g, o, hashes); err != nil {
		return err
	}
	secs := time.Since(start).Seconds()
	_, err = fmt.Fprintf(stdout, "keys=%d models=%d reports=%d seconds=%.1f reports_per_s=%.0f\n",
		o.keys, o.models, o.reports, secs, float64(o.reports)/secs)
	return err
}

func parse(args []string) (options, error) {
	fs := flag.NewFlagSet("usageload", flag.ContinueOnError)
	o := options{}
	day := fs.String("day", time.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly), "the UTC day of every report (at most 35 days ago)")
	fs.StringVar(&o.url, "url", "", "the gateway's base URL")
	fs.StringVar(&o.management, "management", "", "a management key (creates the keys)")
	fs.StringVar(&o.service, "service", "", "a service key of the same user (reports the usage)")
	fs.IntVar(&o.keys, "keys", 1000, "standard keys the reports are spread over")
	fs.IntVar(&o.models, "models", 5, "models the reports are spread over")
	fs.IntVar(&o.reports, "reports", 1_000_000, "reports, a multiple of 1,000")
	fs.IntVar(&o.parallel, "parallel", 2, "batches in flight at once")
	fs.Float64Var(&o.limit, "limit", 0, "a spending limit in USD on every key (0: none), so that each keeps running totals the 402 decision reads")
	fs.BoolVar(&o.plain, "plain", false, "reports say nothing of what was served (id, key, cost, byok, at only), as gateways before the richer reports take them")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	d, err := time.Parse(time.DateOnly, *day)
	if err != nil {
		return o, fmt.Errorf("-day: %w", err)
	}
	o.day = d
	o.url = strings.TrimSuffix(o.url, "/")
	switch {
	case o.url == "" || o.management == "" || o.service == "":
		return o, errors.New("-url, -management and -service are required")
	case o.limit < 0:
		return o, errors.New("-limit must not be negative")
	case o.keys < 1 || o.models < 1 || o.parallel < 1:
		return o, errors.New("-keys, -models and -parallel must be positive")
	case o.reports < batchSize || o.reports%batchSize != 0:
		return o, errors.New("-reports must be a positive multiple of 1,000")
	}
	return o, nil
}

func createKeys(ctx context.Context, g gateway, o options) ([]string, error) {
	hashes := make([]string, o.keys)
	eg, ctx := errgroup.WithContext(ctx)
	eg.SetLimit(o.parallel)
	for i := range hashes {
		eg.Go(func() error {
			var out struct {
				Data struct {
					Hash string `json:"hash"`
				} `json:"data"`
			}
			req := map[string]any{"name": "load " + strconv.Itoa(i)}
			if o.limit > 0 {
				req["limit"] = o.limit
			}
			body, _ := json.Marshal(req)
			if err := g.post(ctx, "/api/v1/keys", o.management, body, http.StatusCreated, &out); err != nil {
				return fmt.Errorf("creating key %d: %w", i, err)
			}
			hashes[i] = out.Data.Hash
			return nil
		})
	}
	return hashes, eg.Wait()
}

func postReports(ctx context.Context, g gateway, o options, hashes []string) error {
	eg, ctx := errgroup.WithContext(ctx)
	eg.SetLimit(o.parallel)
	bufs := sync.Pool{New: func() any { return new([]byte) }}
	for n := range o.reports / batchSize {
		eg.Go(func() error {
			buf := bufs.Get().(*[]byte)
			defer bufs.Put(buf)
			*buf = appendBatch((*buf)[:0], o, hashes, n)
			var out struct {
				Data struct {
					Accepted int `json:"accepted"`
				} `json:"data"`
			}
			if err := g.post(ctx, "/api/v1/usage", o.service, *buf, http.StatusOK, &out); err != nil {
				return fmt.Errorf("batch %d: %w", n, err)
			}
			if out.Data.Accepted != batchSize {
				return fmt.Errorf("batch %d: %d of %d accepted", n, out.Data.Accepted, batchSize)
			}
			return nil
		})
	}
	return eg.Wait()
}

// appendBatch writes batch n: report i of the run goes to key i mod keys
// and model (i / keys) mod models, so every (key, model) pair gets reports
// and the rollups hold keys × models rows (times two: a third of the
// reports are BYOK). Their times spread over the day.
func appendBatch(b []byte, o options, hashes []string, n int) []byte {
	b = append(b, `{"reports":[`...)
	for j := range batchSize {
		i := n*batchSize + j
		if j > 0 {
			b = append(b, ',')
		}
		model := (i / len(hashes)) % o.models
		at := o.day.Add(time.Duration(int64(i) * int64(24*time.Hour) / int64(o.reports)))
		b = append(b, `{"id":"r-`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `","key":"`...)
		b = append(b, hashes[i%len(hashes)]...)
		b = append(b, `","cost":0.000123,"byok":`...)
		b = strconv.AppendBool(b, i%3 == 0)
		b = append(b, `,"at":"`...)
		b = at.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z")
		if o.plain {
			b = append(b, `"}`...)
			continue
		}
		b = append(b, `","model":"bench/model-`...)
		b = strconv.AppendInt(b, int64(model), 10)
		b = append(b, `","provider_name":"Provider `...)
		b = strconv.AppendInt(b, int64(model%3), 10)
		b = append(b, `","endpoint_id":"endpoint-`...)
		b = strconv.AppendInt(b, int64(model), 10)
		b = append(b, `","prompt_tokens":812,"completion_tokens":64,"reasoning_tokens":0}`...)
	}
	return append(b, `]}`...)
}

type gateway struct {
	hc   *http.Client
	base string
}

func (g gateway) post(ctx context.Context, path, key string, body []byte, want int, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
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
		return fmt.Errorf("status %d: %.200s", res.StatusCode, raw)
	}
	return json.Unmarshal(raw, out)
}
