package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/aigateway/gateway/backends"
	"github.com/aigateway/gateway/backends/byok"
	"github.com/aigateway/gateway/backends/open"
	"github.com/aigateway/gateway/catalog"
	"github.com/aigateway/gateway/config"
	"github.com/aigateway/gateway/configs"
	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/gateway"
	"github.com/aigateway/gateway/policy"
	"github.com/aigateway/gateway/workspace"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"
)

// authCacheTTL is how long a verified key is trusted without asking the
// store again; disabling a key takes at most this long to reach every
// replica.
const authCacheTTL = 10 * time.Second

// app is the gateway wired from its configuration.
type app struct {
	api     *gateway.API
	catalog *catalog.Source
	files   *files.Service
	closers []func() error // run in reverse order
}

// buildApp connects everything the configuration names. It fails, naming
// the dependency, when one cannot be reached or is misconfigured.
func buildApp(ctx context.Context, cfg config.Config, getenv func(string) string, log *zap.Logger) (a *app, err error) {
	a = &app{}
	defer func() {
		if err != nil {
			a.close()
		}
	}()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	st, err := openStore(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	a.closers = append(a.closers, st.Close)

	if a.catalog, err = openCatalog(cfg.Catalog.Path, log, reg); err != nil {
		return nil, err
	}
	watchCtx, stopWatch := context.WithCancel(context.Background())
	a.closers = append(a.closers, func() error { stopWatch(); return nil })
	go func() {
		if err := a.catalog.Watch(watchCtx); err != nil {
			log.Error("catalog file is not watched; reload with SIGHUP", zap.Error(err))
		}
	}()

	bucket, err := open.Bucket(ctx, cfg.Storage, log)
	if err != nil {
		return nil, err
	}
	a.closers = append(a.closers, bucket.Close)

	sealer, err := openSealer(cfg, getenv, log)
	if err != nil {
		return nil, err
	}
	providers := map[string]byok.Provider{}
	for name, pc := range map[string]config.Provider{byok.ProviderOpenAI: cfg.Providers.OpenAI, byok.ProviderAnthropic: cfg.Providers.Anthropic} {
		p, err := byok.New(name, byok.Options{BaseURL: pc.BaseURL, Timeout: pc.Timeout}, log)
		if err != nil {
			return nil, fmt.Errorf("providers.%s: %w", name, err)
		}
		providers[name] = p
	}

	limits, ready, err := openLimits(cfg, log, reg, &a.closers)
	if err != nil {
		return nil, err
	}
	ready["metadata"] = st.Ping
	if c, ok := bucket.(backends.Checker); ok {
		// Without storage only uploads fail (503); lookups and workspaces
		// still work, so the replica stays in rotation and says so.
		ready["storage"] = func(ctx context.Context) error {
			if err := c.Check(ctx); err != nil {
				log.Warn("storage check failed", zap.Error(err))
				return gateway.Degraded{Reason: "file storage unreachable; uploads fail"}
			}
			return nil
		}
	}

	workspaces := workspace.NewService(st, catalogModels{a.catalog})
	a.files = files.NewService(files.Config{
		MaxFileBytes:   int64(cfg.Limits.MaxFileBytes),
		WorkspaceQuota: int64(cfg.Limits.WorkspaceStorageBytes),
		Backend:        cfg.Storage.Backend,
	}, files.Deps{
		Store: st, Keys: st, Bucket: bucket, Providers: providers, Sealer: sealer,
		Workspaces: workspaces, Admission: limits.admission, Log: log,
	})

	a.api = gateway.New(gateway.Options{
		Log:            log,
		Auth:           policy.NewAuthenticator(st, authCacheTTL),
		Catalog:        a.catalog,
		Workspaces:     workspaces,
		Files:          a.files,
		Limits:         limits.requests,
		Registry:       reg,
		TrustedProxies: cfg.Server.TrustedPrefixes(),
		ReadyChecks:    ready,
	})
	return a, nil
}

func (a *app) close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		_ = a.closers[i]()
	}
	a.closers = nil
}

// openCatalog loads the catalog file. The default path falls back to the
// catalog embedded in the binary when the file is not on disk.
func openCatalog(path string, log *zap.Logger, reg prometheus.Registerer) (*catalog.Source, error) {
	reloads := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gateway_catalog_reloads_total",
		Help: "Catalog reload attempts by result (ok, refused).",
	}, []string{"result"})
	reg.MustRegister(reloads)
	onReload := catalog.WithOnReload(func(err error) {
		if err != nil {
			reloads.WithLabelValues("refused").Inc()
			return
		}
		reloads.WithLabelValues("ok").Inc()
	})
	src, err := catalog.Open(path, log, onReload)
	if errors.Is(err, fs.ErrNotExist) && path == config.Default().Catalog.Path {
		data, rerr := configs.Files.ReadFile("models.yaml")
		if rerr != nil {
			return nil, rerr
		}
		c, berr := catalog.FromBytes(data)
		if berr != nil {
			return nil, fmt.Errorf("embedded catalog: %w", berr)
		}
		log.Warn("catalog file not found; serving the catalog embedded in the binary", zap.String("path", path))
		return catalog.NewStatic(c, log, onReload), nil
	}
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", path, err)
	}
	log.Info("catalog loaded", zap.String("path", path), zap.Int("models", src.Current().Len()))
	return src, nil
}

// openSealer loads the key that seals BYOK provider keys at rest. On the
// embedded default a key is generated once beside the SQLite database;
// replicas sharing PostgreSQL must all be given the same key.
func openSealer(cfg config.Config, getenv func(string) string, log *zap.Logger) (*byok.Sealer, error) {
	dataDir := ""
	if cfg.Metadata.Driver == "sqlite" {
		dataDir = filepath.Dir(cfg.Metadata.DSN)
		if err := os.MkdirAll(dataDir, 0o750); err != nil {
			return nil, fmt.Errorf("data directory: %w", err)
		}
	}
	key, err := byok.LoadKey(getenv, dataDir, log)
	if err != nil {
		return nil, err
	}
	return byok.NewSealer(key)
}

// catalogModels answers the workspace service's question "is this a model
// the catalog serves?" against the current catalog.
type catalogModels struct{ src *catalog.Source }

func (c catalogModels) ModelExists(id string) bool {
	_, ok := c.src.Current().LookupID(id)
	return ok
}
