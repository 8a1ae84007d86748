package policy_test

import (
	"context"
	"testing"
	"time"

	"github.com/aigateway/gateway/policy"
	"github.com/aigateway/gateway/policy/limitertest"
)

func TestGCRALocal(t *testing.T) {
	limitertest.RunGCRA(t, time.Microsecond, func(t *testing.T, now func() time.Time) policy.Limiter {
		return policy.NewLocalLimiter(policy.LocalOptions{Now: now})
	})
}

func TestAllowAllLocal(t *testing.T) {
	limitertest.RunAllowAll(t, func(t *testing.T) policy.Limiter { return policy.NewLocalLimiter(policy.LocalOptions{}) })
}

// onlyAllow hides LocalLimiter's AllowAll, to test the generic fallback.
type onlyAllow struct{ l *policy.LocalLimiter }

func (o onlyAllow) Allow(ctx context.Context, key string, l policy.Limit, cost int64) (policy.Decision, error) {
	return o.l.Allow(ctx, key, l, cost)
}

func TestAllowAllGeneric(t *testing.T) {
	limitertest.RunAllowAll(t, func(t *testing.T) policy.Limiter { return onlyAllow{policy.NewLocalLimiter(policy.LocalOptions{})} })
}
