package limits_test

import (
	"context"
	"testing"
	"time"

	"github.com/aigateway/gateway/policy/limits"
	"github.com/aigateway/gateway/policy/limits/limitertest"
)

func TestGCRALocal(t *testing.T) {
	limitertest.RunGCRA(t, time.Microsecond, func(t *testing.T, now func() time.Time) limits.Limiter {
		return limits.NewLocalLimiter(limits.LocalOptions{Now: now})
	})
}

func TestAllowAllLocal(t *testing.T) {
	limitertest.RunAllowAll(t, func(t *testing.T) limits.Limiter { return limits.NewLocalLimiter(limits.LocalOptions{}) })
}

// onlyAllow hides LocalLimiter's AllowAll, to test the generic fallback.
type onlyAllow struct{ l *limits.LocalLimiter }

func (o onlyAllow) Allow(ctx context.Context, key string, l limits.Limit, cost int64) (limits.Decision, error) {
	return o.l.Allow(ctx, key, l, cost)
}

func TestAllowAllGeneric(t *testing.T) {
	limitertest.RunAllowAll(t, func(t *testing.T) limits.Limiter { return onlyAllow{limits.NewLocalLimiter(limits.LocalOptions{})} })
}
