// Package app wires the gateway: configuration -> stores -> services ->
// router. Every command of cmd/gateway opens a Runtime (configuration,
// logger, metadata store); serve then builds the App on it. The black-box
// suites build the gateway through the same functions, so what they test is
// what runs.
package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/aigateway/gateway/backends/sqlstore"
	"github.com/aigateway/gateway/configs"
	"github.com/aigateway/gateway/internal/telemetry"
	"go.uber.org/zap"
	"go.uber.org/zap/exp/zapslog"
	"go.uber.org/zap/zapcore"
)

// Env is what the gateway may touch of the process: its environment
// (for ${VAR} in the configuration and the BYOK sealing key) and where its
// logs go.
type Env struct {
	Getenv func(string) string
	Logs   io.Writer
	// Traces turns on the traces the configuration asks for (serve does;
	// a CLI command's few statements are not worth a collector's wait at
	// exit).
	Traces bool
}

// LoadConfig reads the configuration at path. The default path falls back
// to the embedded copy of configs/gateway.yaml, so the binary runs anywhere;
// an explicitly named file must exist.
func LoadConfig(path string, getenv func(string) string) (configs.Config, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && path == configs.DefaultConfigPath {
		data, err = configs.Shipped.ReadFile("gateway.yaml")
	}
	if err != nil {
		return configs.Config{}, fmt.Errorf("read config: %w", err)
	}
	cfg, err := configs.Parse(data, getenv)
	if err != nil {
		return cfg, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// Runtime is what every command needs: the validated configuration, the
// process logger and the migrated metadata store.
type Runtime struct {
	Config configs.Config
	Log    *zap.Logger
	// store is reached through the services only (Keys, the App), never
	// by the commands themselves.
	store  *sqlstore.Store
	getenv func(string) string
	flush  func()
	// tracing is on while traces are exported; nil when off.
	tracing *telemetry.Tracing
	// logs is where the logs go (Env.Logs), for the access log's writer.
	logs io.Writer
}

// Open starts a Runtime: the logger, then the metadata store with its
// migrations applied. It fails, naming the dependency, when the store cannot
// be reached; nothing is left open then.
func Open(ctx context.Context, cfg configs.Config, env Env) (*Runtime, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log, flush := NewLogger(cfg.Log, env.Logs)
	rt := &Runtime{Config: cfg, Log: log, getenv: env.Getenv, flush: flush, logs: env.Logs}
	if env.Traces {
		// Before anything that makes spans is built: each asks, once,
		// whether traces are on.
		tracing, err := startTraces(ctx, cfg.Telemetry.Traces, env.Getenv, log)
		if err != nil {
			flush()
			return nil, err
		}
		rt.tracing = tracing
	}
	st, err := sqlstore.Open(ctx, cfg.Metadata.Driver, cfg.Metadata.DSN, log)
	if err != nil {
		_ = rt.stopTraces()
		flush()
		return nil, fmt.Errorf("open %s metadata store: %w", cfg.Metadata.Driver, err)
	}
	rt.store = st
	return rt, nil
}

// Close closes the store, exports the last spans and flushes the logs.
func (rt *Runtime) Close() error {
	err := rt.store.Close()
	if terr := rt.stopTraces(); terr != nil {
		rt.Log.Warn("last spans not exported", zap.Error(terr))
	}
	rt.flush()
	return err
}

// startTraces turns the configured traces on, logging where they go; off
// (no endpoint anywhere) it returns nil.
func startTraces(ctx context.Context, c configs.Traces, getenv func(string) string, log *zap.Logger) (*telemetry.Tracing, error) {
	var failures atomic.Int64
	tracing, err := telemetry.Start(ctx, telemetry.Options{
		Endpoint: c.Endpoint, Protocol: c.Protocol, SampleRatio: c.SampleRatio,
		Headers: c.Headers, Insecure: c.Insecure, Getenv: getenv,
		OnError: func(err error) {
			// An unreachable collector fails every batch: the first
			// failures say so, then one in a hundred.
			if n := failures.Add(1); n <= 3 || n%100 == 0 {
				log.Warn("traces not exported", zap.Int64("failures", n), zap.Error(err))
			}
		},
	})
	if err != nil {
		return nil, fmt.Errorf("telemetry.traces: %w", err)
	}
	if tracing != nil {
		// The endpoint alone: headers hold tokens.
		log.Info("traces on", zap.String("endpoint", cmp.Or(c.Endpoint, "from OTEL_EXPORTER_OTLP_*")),
			zap.Float64("sample_ratio", c.SampleRatio))
	}
	return tracing, nil
}

func (rt *Runtime) stopTraces() error {
	if rt.tracing == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), telemetry.ShutdownTimeout)
	defer cancel()
	return rt.tracing.Shutdown(ctx)
}

// NewLogger builds the process logger. Lines are buffered (flushed every
// second and by the returned function) so a log line per request does not
// cost a write syscall per request.
func NewLogger(c configs.Log, w io.Writer) (*zap.Logger, func()) {
	level, err := zapcore.ParseLevel(c.Level)
	if err != nil {
		level = zapcore.InfoLevel
	}
	encCfg := zap.NewProductionEncoderConfig()
	encCfg.TimeKey = "ts"
	encCfg.EncodeTime = zapcore.ISO8601TimeEncoder
	var enc zapcore.Encoder
	if c.Format == "console" {
		encCfg = zap.NewDevelopmentEncoderConfig()
		enc = zapcore.NewConsoleEncoder(encCfg)
	} else {
		enc = zapcore.NewJSONEncoder(encCfg)
	}
	ws := &zapcore.BufferedWriteSyncer{WS: zapcore.AddSync(w), Size: 256 << 10, FlushInterval: time.Second}
	core := zapcore.NewCore(enc, ws, level)
	log := zap.New(core, zap.ErrorOutput(zapcore.AddSync(w)))
	return log, func() { _ = ws.Stop() }
}

// slogOf is log for the domain packages, which log through the standard
// library's log/slog: zap itself imports net/http, which they must not.
// Lines keep zap's encoding, level and buffering.
func slogOf(log *zap.Logger) *slog.Logger {
	return slog.New(zapslog.NewHandler(log.Core()))
}
