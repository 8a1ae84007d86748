package configs_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aigateway/gateway/configs"
	"github.com/aigateway/gateway/policy/limits"
)

// TestDefaultsLetAFolderImportThrough: with the limits every shipped
// configuration sets, one key imports 1,000 small files with 4 parallel
// clients without a 429, however fast it goes (the clock stands still, so
// nothing refills during the import), and the limits still bite: the
// 1,001st upload of that instant is refused, and a minute later the key has
// earned no more than the class's rate.
//
// Each upload is charged as the API charges it (gateway/routes.go and
// cmd/gateway/app/limits.go): the default class and the files class per
// key, then the upload admission per workspace (the files class again,
// the byte budget) and the key's in-flight slots.
func TestDefaultsLetAFolderImportThrough(t *testing.T) {
	shipped := map[string]func() (configs.Config, error){
		"defaults": func() (configs.Config, error) { return configs.Default(), nil },
	}
	for _, name := range []string{"gateway.yaml", "production.example.yaml"} {
		shipped[name] = func() (configs.Config, error) {
			data, err := configs.Shipped.ReadFile(name)
			if err != nil {
				return configs.Config{}, err
			}
			return configs.Parse(data, exampleEnv)
		}
	}
	for name, load := range shipped {
		t.Run(name, func(t *testing.T) {
			cfg, err := load()
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			clock := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
			now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
			up := newUploads(cfg, limits.NewLocalLimiter(limits.LocalOptions{Now: now}))

			const files, clients = 1000, 4
			var refused atomic.Int64
			var wg sync.WaitGroup
			for c := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range files / clients {
						if err := up.upload(t, 2<<10); err != nil {
							if refused.Add(1) == 1 {
								t.Errorf("client %d: %v", c, err)
							}
						}
					}
				}()
			}
			wg.Wait()
			if n := refused.Load(); n > 0 {
				t.Fatalf("%d of %d uploads of a folder import refused", n, files)
			}

			if err := up.upload(t, 2<<10); err == nil {
				t.Error("the upload past the burst, in the same instant, was admitted: the limit does not bite")
			}
			mu.Lock()
			clock = clock.Add(time.Minute)
			mu.Unlock()
			more := 0
			for up.upload(t, 2<<10) == nil {
				more++
			}
			if want := cfg.Limits.Rate.Files.Requests; more > want {
				t.Errorf("%d uploads a minute after the burst, want at most the files class's %d", more, want)
			}
		})
	}
}

// uploads charges uploads of one key to one workspace as the API does.
type uploads struct {
	limiter   limits.Limiter
	classes   []limits.Limit // default, files: per key
	admission *limits.UploadAdmission
}

func newUploads(cfg configs.Config, l limits.Limiter) *uploads {
	limitOf := func(r configs.Rate) limits.Limit { return limits.Limit{Rate: r.Requests, Per: r.Per, Burst: r.Burst} }
	b := cfg.Limits.UploadBytes
	return &uploads{
		limiter: l,
		classes: []limits.Limit{limitOf(cfg.Limits.Rate.Default), limitOf(cfg.Limits.Rate.Files)},
		admission: &limits.UploadAdmission{
			Limiter: l, InFlight: limits.NewLocalInFlight(),
			Files:       limitOf(cfg.Limits.Rate.Files),
			Bytes:       limits.Limit{Rate: int(b.Bytes), Per: b.Per, Burst: int(b.Bytes)},
			MaxInFlight: cfg.Limits.UploadsInFlightPerKey, LeaseTTL: cfg.Limits.UploadLease,
		},
	}
}

// upload charges one upload of size bytes, or returns the refusal.
func (u *uploads) upload(t *testing.T, size int64) error {
	ctx := context.Background()
	for i, class := range []limits.Class{limits.ClassDefault, limits.ClassFiles} {
		d, err := u.limiter.Allow(ctx, limits.RequestsKey(class, "key-1"), u.classes[i], 1)
		if err != nil {
			t.Fatal(err)
		}
		if !d.Allowed {
			return limits.Denied(d, limits.LimitRequests)
		}
	}
	release, err := u.admission.Admit(ctx, "key-1", "workspace-1", size)
	if err != nil {
		return err
	}
	release(size)
	return nil
}
