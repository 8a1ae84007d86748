package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/aigateway/gateway/backends/sqlstore"
	"github.com/aigateway/gateway/config"
	"github.com/aigateway/gateway/configs"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// newFlags makes a flag set whose errors are returned, not printed.
func newFlags(name string) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	path := fs.String("config", configs.DefaultConfigPath, "configuration file")
	return fs, path
}

// loadConfig reads the configuration at path. The default path falls back
// to the embedded copy of configs/gateway.yaml, so the binary runs anywhere;
// an explicitly named file must exist.
func loadConfig(path string, getenv func(string) string) (config.Config, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && path == configs.DefaultConfigPath {
		data, err = configs.Files.ReadFile("gateway.yaml")
	}
	if err != nil {
		return config.Config{}, fmt.Errorf("read config: %w", err)
	}
	cfg, err := config.Parse(data, getenv)
	if err != nil {
		return cfg, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// newLogger builds the process logger. Lines are buffered (flushed every
// second and on exit) so a log line per request does not cost a write
// syscall per request.
func newLogger(c config.Log, w io.Writer) (*zap.Logger, func()) {
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

// openStore opens the metadata store and runs its migrations.
func openStore(ctx context.Context, cfg config.Config, log *zap.Logger) (*sqlstore.Store, error) {
	st, err := sqlstore.Open(ctx, cfg.Metadata.Driver, cfg.Metadata.DSN, log)
	if err != nil {
		return nil, fmt.Errorf("open %s metadata store: %w", cfg.Metadata.Driver, err)
	}
	return st, nil
}

func migrate(ctx context.Context, args []string, e env) error {
	fs, path := newFlags("migrate")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := loadConfig(*path, e.getenv)
	if err != nil {
		return err
	}
	log, flush := newLogger(cfg.Log, e.stderr)
	defer flush()
	st, err := openStore(ctx, cfg, log)
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, "migrations applied")
	return st.Close()
}
