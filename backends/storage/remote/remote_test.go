package remote_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aigateway/gateway/backends/storage/remote"
	"github.com/aigateway/gateway/files/blob"
)

func TestSetDefaults(t *testing.T) {
	prefix, timeout, attempts := "gateway", time.Duration(0), 0
	remote.SetDefaults(&prefix, &timeout, &attempts)
	if prefix != "gateway/" || timeout != remote.DefaultRequestTimeout || attempts != remote.DefaultMaxAttempts {
		t.Errorf("zero settings became %q, %v, %d; want gateway/ and the defaults", prefix, timeout, attempts)
	}
	prefix, timeout, attempts = "", time.Second, 1
	remote.SetDefaults(&prefix, &timeout, &attempts)
	if prefix != "" || timeout != time.Second || attempts != 1 {
		t.Errorf("set settings became %q, %v, %d; want them kept", prefix, timeout, attempts)
	}
}

func TestProblems(t *testing.T) {
	if errs := remote.Problems("s3", "b", "http://127.0.0.1:9000", "gw/", 1, 0, time.Second); len(errs) != 0 {
		t.Errorf("valid settings: %v", errs)
	}
	errs := remote.Problems("gcs", "", "ftp://x", "../up", 0, time.Second, -1, -2)
	var fields []string
	for _, err := range errs {
		var ce *blob.ConfigError
		if !errors.As(err, &ce) || !errors.Is(err, blob.ErrInvalidConfig) {
			t.Fatalf("problem %v is not a *blob.ConfigError", err)
		}
		fields = append(fields, ce.Field)
	}
	want := "gcs.bucket gcs.endpoint gcs.prefix gcs.timeouts gcs.max_attempts"
	if got := strings.Join(fields, " "); got != want {
		t.Errorf("problems name %s; want %s (the timeouts once)", got, want)
	}
}

func TestStatusError(t *testing.T) {
	for status, want := range map[int]error{
		401: blob.ErrAccessDenied, 403: blob.ErrAccessDenied, 404: blob.ErrNotFound,
		408: blob.ErrUnavailable, 429: blob.ErrUnavailable, 500: blob.ErrUnavailable, 503: blob.ErrUnavailable,
		400: nil, 409: nil, 412: nil, 416: nil,
	} {
		if got := remote.StatusError(status); got != want {
			t.Errorf("StatusError(%d) = %v, want %v", status, got, want)
		}
	}
}

func TestUnreachable(t *testing.T) {
	yes := []error{
		context.DeadlineExceeded,
		fmt.Errorf("get: %w", &net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}),
		fmt.Errorf("read: %w", syscall.ECONNRESET),
		syscall.EPIPE,
		io.ErrUnexpectedEOF,
		io.EOF,
	}
	for _, err := range yes {
		if !remote.Unreachable(err) {
			t.Errorf("Unreachable(%v) = false", err)
		}
	}
	for _, err := range []error{context.Canceled, errors.New("bad request"), blob.ErrNotFound} {
		if remote.Unreachable(err) {
			t.Errorf("Unreachable(%v) = true", err)
		}
	}
}
