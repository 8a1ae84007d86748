package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/aigateway/gateway/gateway"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"go.uber.org/zap"
)

// Serve listens on the configured address and serves until ctx ends
// (SIGINT/SIGTERM), then drains: /readyz fails, the drain delay passes so
// load balancers notice, the listener closes and in-flight requests get the
// grace period to finish. Requests still running after it are cancelled;
// their uploads clean up before Serve returns. listening, when not nil, is
// told the address once the socket is open.
func (a *App) Serve(ctx context.Context, listening func(addr string)) error {
	cfg, log := a.rt.Config, a.rt.Log
	ln, err := net.Listen("tcp", cfg.Server.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Server.Listen, err)
	}
	refused := promauto.With(a.registry).NewCounterVec(prometheus.CounterOpts{
		Name: "gateway_connections_refused_total",
		Help: "Connections answered 503 and closed for being over a connection cap, by cap (max, per_client).",
	}, []string{"cap"})
	ln = gateway.LimitListener(ln, gateway.ConnLimits{
		Max: cfg.Server.MaxConnections, PerClient: cfg.Server.MaxConnectionsPerClient,
		Exempt: cfg.Server.TrustedPrefixes(), OnRefuse: func(c string) { refused.WithLabelValues(c).Inc() },
	})
	baseCtx, cancelRequests := context.WithCancel(context.Background())
	defer cancelRequests()
	srv := &http.Server{
		Handler:           a.Handler(),
		ReadHeaderTimeout: cfg.Server.ReadHeaderTimeout,
		IdleTimeout:       cfg.Server.IdleTimeout,
		MaxHeaderBytes:    int(cfg.Server.MaxHeaderBytes),
		BaseContext:       func(net.Listener) context.Context { return baseCtx },
		ErrorLog:          zap.NewStdLog(log.Named("http")),
	}
	if listening != nil {
		listening(ln.Addr().String())
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	log.Info("gateway listening", zap.String("addr", ln.Addr().String()),
		zap.String("metadata", cfg.Metadata.Driver), zap.String("storage", cfg.Storage.Backend),
		zap.Bool("redis", cfg.Redis.Enabled()))

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for running := true; running; {
		select {
		case <-hup:
			if err := a.catalog.Reload(); err != nil {
				log.Error("catalog reload on SIGHUP refused; the last good catalog keeps serving", zap.Error(err))
			}
		case err := <-serveErr:
			return fmt.Errorf("serve: %w", err)
		case <-ctx.Done():
			running = false
		}
	}

	log.Info("shutting down: draining", zap.Duration("drain_delay", cfg.Server.DrainDelay), zap.Duration("grace", cfg.Server.ShutdownGrace))
	a.api.StartDraining()
	if cfg.Server.DrainDelay > 0 {
		time.Sleep(cfg.Server.DrainDelay)
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.Server.ShutdownGrace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		log.Warn("grace period over; cancelling the requests still running", zap.Error(err))
		cancelRequests()
		_ = srv.Close()
	}
	// Cancelled uploads remove what they wrote; wait for that, bounded.
	done := make(chan struct{})
	go func() { a.WaitUploads(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		log.Error("uploads still cleaning up after 30s; exiting anyway")
	}
	if err := <-serveErr; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("gateway stopped")
	return nil
}
