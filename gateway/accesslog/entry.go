// Package accesslog writes the gateway's access log: one JSON line per
// request, byte for byte the line zap's production JSON encoder wrote for it
// (level, ISO 8601 time in milliseconds, msg, then the fields), encoded by
// appending into a reused buffer and written through a Writer that drops
// lines under pressure rather than make requests wait for the log's reader.
//
// The other logs of the process stay on zap; this is the one line written
// on every request, where zap's generic encoder was the largest cost of a
// model lookup.
package accesslog

import (
	"encoding/hex"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/aigateway/gateway/internal/jsonobj"
)

// Entry is one request as the access log records it.
type Entry struct {
	// Time is when the request ended (zap stamped the line when it was
	// written, which was then).
	Time      time.Time
	Method    string
	Route     string
	Status    int
	Bytes     int64
	Duration  time.Duration
	RequestID string
	KeyID     string
	Client    string
	// TraceID and SpanID are the request's server span, when traces are
	// on; zero, the line has neither field.
	TraceID trace.TraceID
	SpanID  trace.SpanID
}

// Fields are the entry's fields as zap logs them: the one definition of the
// line's content, for a process that logs it through zap (the console
// format) and for the tests that hold AppendJSON to zap's encoding.
func (e *Entry) Fields() []zap.Field {
	fields := []zap.Field{
		zap.String("method", e.Method),
		zap.String("route", e.Route),
		zap.Int("status", e.Status),
		zap.Int64("bytes", e.Bytes),
		zap.Duration("duration", e.Duration),
		zap.String("request_id", e.RequestID),
		zap.String("key_id", e.KeyID),
		zap.String("client", e.Client),
	}
	if e.TraceID.IsValid() {
		fields = append(fields, zap.String("trace_id", e.TraceID.String()), zap.String("span_id", e.SpanID.String()))
	}
	return fields
}

// AppendJSON appends the entry's line, newline included, to b:
//
//	{"level":"info","ts":"2006-01-02T15:04:05.000Z0700","msg":"request","method":...,"client":...}
//
// Strings are escaped as zap escapes them (control characters, quote and
// backslash; invalid UTF-8 becomes U+FFFD), the duration is in seconds as
// zap's SecondsDurationEncoder writes it.
func (e *Entry) AppendJSON(b []byte) []byte {
	b = append(b, `{"level":"info","ts":"`...)
	b = appendTime(b, e.Time)
	b = append(b, `","msg":"request","method":"`...)
	b = jsonobj.AppendEscaped(b, e.Method)
	b = append(b, `","route":"`...)
	b = jsonobj.AppendEscaped(b, e.Route)
	b = append(b, `","status":`...)
	b = strconv.AppendInt(b, int64(e.Status), 10)
	b = append(b, `,"bytes":`...)
	b = strconv.AppendInt(b, e.Bytes, 10)
	b = append(b, `,"duration":`...)
	b = appendSeconds(b, e.Duration)
	b = append(b, `,"request_id":"`...)
	b = jsonobj.AppendEscaped(b, e.RequestID)
	b = append(b, `","key_id":"`...)
	b = jsonobj.AppendEscaped(b, e.KeyID)
	b = append(b, `","client":"`...)
	b = jsonobj.AppendEscaped(b, e.Client)
	if e.TraceID.IsValid() {
		b = append(b, `","trace_id":"`...)
		b = hex.AppendEncode(b, e.TraceID[:])
		b = append(b, `","span_id":"`...)
		b = hex.AppendEncode(b, e.SpanID[:])
	}
	return append(b, "\"}\n"...)
}

// appendSeconds appends d in seconds as appendFloat writes
// float64(d)/1e9, without the float: under 10^6 s a duration has at most
// 15 significant digits, so the shortest decimal naming that float is the
// exact decimal of d's nanoseconds, trailing zeros dropped. Longer (and
// negative) durations take the float path.
func appendSeconds(b []byte, d time.Duration) []byte {
	if d < 0 || d >= 1e6*time.Second {
		return appendFloat(b, float64(d)/float64(time.Second))
	}
	b = strconv.AppendInt(b, int64(d/time.Second), 10)
	frac := int64(d % time.Second)
	if frac == 0 {
		return b
	}
	var digits [10]byte
	digits[0] = '.'
	for i := 9; i > 0; i-- {
		digits[i] = byte('0' + frac%10)
		frac /= 10
	}
	n := 10
	for digits[n-1] == '0' {
		n--
	}
	return append(b, digits[:n]...)
}

// appendFloat is zap's float encoding: NaN and infinities quoted, otherwise
// the shortest decimal form without an exponent.
func appendFloat(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(b, `"+Inf"`...)
	case math.IsInf(f, -1):
		return append(b, `"-Inf"`...)
	}
	return strconv.AppendFloat(b, f, 'f', -1, 64)
}

// isoLayout is zapcore.ISO8601TimeEncoder's layout.
const isoLayout = "2006-01-02T15:04:05.000Z0700"

// secondStamp is the formatted time of one wall-clock second, split around
// its milliseconds: "2006-01-02T15:04:05" and the zone ("Z" or "+0100").
type secondStamp struct {
	unix   int64
	loc    *time.Location
	prefix [19]byte
	zone   string
	// odd: a year outside 0-9999, whose formatting is not 19 bytes long;
	// such a time is formatted in full.
	odd bool
}

// stamp caches the current second's formatting: every line of that second
// shares it and only the milliseconds are written per line. Formatting a
// time in full was a visible share of the lookup path.
var stamp atomic.Pointer[secondStamp]

// appendTime appends t as isoLayout formats it.
func appendTime(b []byte, t time.Time) []byte {
	s := stamp.Load()
	if s == nil || s.unix != t.Unix() || s.loc != t.Location() {
		s = newStamp(t)
		stamp.Store(s)
	}
	if s.odd {
		return t.AppendFormat(b, isoLayout)
	}
	b = append(b, s.prefix[:]...)
	ms := t.Nanosecond() / int(time.Millisecond)
	b = append(b, '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10))
	return append(b, s.zone...)
}

func newStamp(t time.Time) *secondStamp {
	s := &secondStamp{unix: t.Unix(), loc: t.Location()}
	full := t.Format(isoLayout)
	if len(full) < 23 || full[19] != '.' {
		s.odd = true
		return s
	}
	copy(s.prefix[:], full)
	s.zone = full[23:]
	return s
}
