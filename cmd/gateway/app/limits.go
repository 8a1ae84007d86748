package app

import (
	"context"
	"fmt"
	"strings"

	"github.com/aigateway/gateway/configs"
	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/gateway"
	"github.com/aigateway/gateway/policy/limits"
	redislimit "github.com/aigateway/gateway/policy/limits/redis"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// limitSet is the wired rate limiting: per-request limits for the HTTP
// layer and the upload admission for the file service.
type limitSet struct {
	requests  *gateway.RateLimits
	admission files.Admission
}

// openLimits builds the limiter the configuration asks for: in-process on
// the embedded default, Redis-backed with a local fallback when redis is
// configured. A Redis that is down at start is not an error: the limiter
// starts degraded and moves to Redis when it answers.
func openLimits(cfg configs.Config, log *zap.Logger, reg prometheus.Registerer, closers *[]func() error) (limitSet, map[string]gateway.ReadyCheck, error) {
	ready := map[string]gateway.ReadyCheck{}
	var (
		limiter  limits.Limiter
		inflight limits.InFlight
	)
	if cfg.Redis.Enabled() {
		redislimit.LogToDebug(log.Named("redis"))
		client, err := redislimit.NewClient(redisClientOptions(cfg.Redis))
		if err != nil {
			return limitSet{}, nil, fmt.Errorf("redis: %w", err)
		}
		*closers = append(*closers, client.Close)
		fl, err := redislimit.NewFailover(client, redislimit.FailoverOptions{
			Logger: log, Registerer: reg, ReplicasHint: cfg.Redis.ReplicasHint,
			KeyPrefix: cfg.Redis.KeyPrefix, Timeout: cfg.Redis.Timeout,
		})
		if err != nil {
			return limitSet{}, nil, fmt.Errorf("redis limiter: %w", err)
		}
		*closers = append(*closers, fl.Close)
		// Busy keys are admitted from blocks charged to Redis in advance:
		// one round trip per block instead of per request, never more than
		// the shared limit (see limits.CachedLimiter for the bound).
		cached := limits.NewCachedLimiter(fl, limits.CacheOptions{ReplicasHint: cfg.Redis.ReplicasHint})
		*closers = append(*closers, cached.Close)
		limiter, inflight = cached, fl.InFlight()
		// Losing Redis degrades limits to per-replica shares; the replica
		// still serves, so readiness reports it without failing.
		ready["redis"] = func(context.Context) error {
			if fl.Degraded() {
				return gateway.Degraded{Reason: "redis unreachable; enforcing local limits"}
			}
			return nil
		}
	} else {
		limiter = limits.NewLocalLimiter(limits.LocalOptions{})
		inflight = limits.NewLocalInFlight()
	}

	var set limitSet
	admission := &limits.UploadAdmission{
		Limiter:     limiter,
		InFlight:    inflight,
		Bytes:       byteBudget(cfg.Limits.UploadBytes),
		MaxInFlight: cfg.Limits.UploadsInFlightPerKey,
		LeaseTTL:    cfg.Limits.UploadLease,
	}
	if cfg.Limits.Rate.On() {
		set.requests = &gateway.RateLimits{
			Limiter:      limiter,
			Default:      limitOf(cfg.Limits.Rate.Default),
			Files:        limitOf(cfg.Limits.Rate.Files),
			Usage:        limitOf(cfg.Limits.Rate.Usage),
			AuthFailures: limitOf(cfg.Limits.Rate.AuthFailures),
		}
		admission.Files = limitOf(cfg.Limits.Rate.Files)
	}
	set.admission = admission
	return set, ready, nil
}

func limitOf(r configs.Rate) limits.Limit {
	return limits.Limit{Rate: r.Requests, Per: r.Per, Burst: r.Burst}
}

// byteBudget is a GCRA limit whose unit is a byte: the whole budget may be
// spent at once and refills over the period.
func byteBudget(b configs.ByteBudget) limits.Limit {
	return limits.Limit{Rate: int(b.Bytes), Per: b.Per, Burst: int(b.Bytes)}
}

// redisClientOptions says how to reach the configured Redis: one server by
// URL, a Cluster by its seed nodes, or a master through its Sentinels.
func redisClientOptions(r configs.Redis) redislimit.ClientOptions {
	o := redislimit.ClientOptions{
		URL: r.URL, Addrs: r.Addrs, MasterName: r.MasterName,
		Username: r.Username, Password: r.Password,
		SentinelUsername: r.SentinelUsername, SentinelPassword: r.SentinelPassword,
		Timeout: r.Timeout,
	}
	if r.TLS.Enabled || strings.HasPrefix(r.URL, "rediss://") {
		o.TLS = &redislimit.TLSOptions{CAFile: r.TLS.CAFile, ServerName: r.TLS.ServerName, CertFile: r.TLS.CertFile, KeyFile: r.TLS.KeyFile}
	}
	return o
}
