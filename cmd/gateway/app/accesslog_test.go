package app

import (
	"bytes"
	"testing"
	"time"

	"github.com/aigateway/gateway/configs"
	"github.com/aigateway/gateway/gateway/accesslog"
	"go.uber.org/zap"
)

type fixedClock time.Time

func (c fixedClock) Now() time.Time                         { return time.Time(c) }
func (c fixedClock) NewTicker(d time.Duration) *time.Ticker { return time.NewTicker(d) }

// TestAccessLineIsTheLoggersLine: the access log writer's line is the line
// the process logger (NewLogger, JSON) wrote for the same request when
// zap wrote the access log, byte for byte.
func TestAccessLineIsTheLoggersLine(t *testing.T) {
	at := time.Now().Add(-1234567 * time.Microsecond)
	e := accesslog.Entry{
		Time: at, Method: "GET", Route: "/api/v1/model/{author}/{slug}", Status: 200, Bytes: 2048,
		Duration: 845 * time.Microsecond, RequestID: "mzxw6ytboi-2a", KeyID: "k_0123456789", Client: "10.1.2.3",
	}
	var out bytes.Buffer
	log, flush := NewLogger(configs.Log{Level: "info", Format: "json"}, &out)
	log.WithOptions(zap.WithClock(fixedClock(at))).Info("request", e.Fields()...)
	flush()
	if got, want := string(e.AppendJSON(nil)), out.String(); got != want {
		t.Errorf("access line\n got %s\nwant %s", got, want)
	}
}
