package app

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"net/http"
	"time"

	"github.com/aigateway/gateway/backends"
	"github.com/aigateway/gateway/backends/byok"
	"github.com/aigateway/gateway/backends/fs"
	"github.com/aigateway/gateway/backends/gcs"
	"github.com/aigateway/gateway/backends/open"
	"github.com/aigateway/gateway/backends/s3"
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

// App is the gateway wired from its configuration: the HTTP surface and
// the services behind it, on a Runtime it does not own.
type App struct {
	rt       *Runtime
	api      *gateway.API
	catalog  *catalog.Source
	files    *files.Service
	registry *prometheus.Registry
	closers  []func() error // run in reverse order
}

// Build connects everything the configuration names on top of rt. It fails,
// naming the dependency, when one cannot be reached or is misconfigured, and
// then closes whatever it had opened.
func Build(ctx context.Context, rt *Runtime) (*App, error) {
	a := &App{rt: rt}
	if err := a.build(ctx); err != nil {
		_ = a.Close()
		return nil, err
	}
	return a, nil
}

func (a *App) build(ctx context.Context) error {
	cfg, log, st := a.rt.Config, a.rt.Log, a.rt.Store
	reg := prometheus.NewRegistry()
	a.registry = reg
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	var err error
	if a.catalog, err = openCatalog(cfg.Catalog.Path, log, reg); err != nil {
		return err
	}
	watchCtx, stopWatch := context.WithCancel(context.Background())
	a.closers = append(a.closers, func() error { stopWatch(); return nil })
	go func() {
		if err := a.catalog.Watch(watchCtx); err != nil {
			log.Error("catalog file is not watched; reload with SIGHUP", zap.Error(err))
		}
	}()

	bucket, err := open.Bucket(ctx, StorageOptions(cfg.Storage), log)
	if err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	a.closers = append(a.closers, bucket.Close)

	sealingKey, err := a.rt.sealingKey()
	if err != nil {
		return err
	}
	sealer, err := byok.NewSealer(sealingKey)
	if err != nil {
		return err
	}
	cursorKey, err := fileCursorKey(sealingKey)
	if err != nil {
		return err
	}
	var providers []byok.Provider
	for name, pc := range map[string]config.Provider{byok.ProviderOpenAI: cfg.Providers.OpenAI, byok.ProviderAnthropic: cfg.Providers.Anthropic} {
		p, err := byok.New(name, byok.Options{BaseURL: pc.BaseURL, Timeout: pc.Timeout}, log)
		if err != nil {
			return fmt.Errorf("providers.%s: %w", name, err)
		}
		providers = append(providers, p)
	}

	limits, ready, err := openLimits(cfg, log, reg, &a.closers)
	if err != nil {
		return err
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
		Store: st, Keys: st, Bucket: bucket, Opener: byok.NewKeyring(sealer, providers...),
		Workspaces: workspaces, Admission: limits.admission, Log: slogOf(log),
	})
	reader, err := files.NewReadService(files.ReadConfig{Downloadable: cfg.Files.Downloadable, CursorKey: cursorKey}, files.ReadDeps{
		Catalog: st, Keys: st, Bucket: bucket, Opener: byok.NewKeyring(sealer, providers...),
		Workspaces: workspaces, Log: slogOf(log),
	})
	if err != nil {
		return err
	}

	a.api = gateway.New(gateway.Options{
		Log:             log,
		Auth:            policy.NewAuthenticator(st, authCacheTTL),
		Catalog:         a.catalog,
		Workspaces:      workspaces,
		Files:           a.files,
		FileReader:      reader,
		Limits:          limits.requests,
		Registry:        reg,
		TrustedProxies:  cfg.Server.TrustedPrefixes(),
		ReadyChecks:     ready,
		BodyReadTimeout: cfg.Server.BodyReadTimeout,
		MinUploadRate:   int64(cfg.Server.MinUploadRate),
		LingeringClose: gateway.Lingering{
			MaxBytes: int64(cfg.Server.LingeringClose.MaxBytes), Timeout: cfg.Server.LingeringClose.Timeout,
		},
	})
	return nil
}

// Handler is the whole HTTP surface.
func (a *App) Handler() http.Handler { return a.api.Handler() }

// Catalog is the live model catalog (reloaded on change and by Reload).
func (a *App) Catalog() *catalog.Source { return a.catalog }

// WaitUploads blocks until every upload begun has been committed or
// aborted, so a stopping process cleans up before it exits.
func (a *App) WaitUploads() {
	if a.files != nil {
		a.files.Wait()
	}
}

// Close releases what Build opened (storage, Redis, the catalog watch), in
// reverse order. The Runtime stays open: its owner closes it.
func (a *App) Close() error {
	var errs []error
	for i := len(a.closers) - 1; i >= 0; i-- {
		errs = append(errs, a.closers[i]())
	}
	a.closers = nil
	return errors.Join(errs...)
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
	src, err := catalog.Open(path, slogOf(log), onReload)
	if errors.Is(err, iofs.ErrNotExist) && path == config.Default().Catalog.Path {
		data, rerr := configs.Files.ReadFile("models.yaml")
		if rerr != nil {
			return nil, rerr
		}
		c, berr := catalog.FromBytes(data)
		if berr != nil {
			return nil, fmt.Errorf("embedded catalog: %w", berr)
		}
		log.Warn("catalog file not found; serving the catalog embedded in the binary", zap.String("path", path))
		return catalog.NewStatic(c, slogOf(log), onReload), nil
	}
	if err != nil {
		return nil, err // it names the file
	}
	log.Info("catalog loaded", zap.String("path", path), zap.Int("models", src.Current().Len()))
	return src, nil
}

// catalogModels answers the workspace service's question "is this a model
// the catalog serves?" against the current catalog.
type catalogModels struct{ src *catalog.Source }

func (c catalogModels) ModelExists(id string) bool {
	_, ok := c.src.Current().LookupID(id)
	return ok
}

// StorageOptions turns the storage section of the configuration into the
// backends' own options.
func StorageOptions(c config.Storage) open.Storage {
	return open.Storage{
		Backend: c.Backend,
		FS:      fs.Config{Dir: c.FS.Dir},
		S3: s3.Config{
			Bucket: c.S3.Bucket, Region: c.S3.Region, Endpoint: c.S3.Endpoint,
			PathStyle: c.S3.PathStyle, Prefix: c.S3.Prefix,
		},
		GCS: gcs.Config{Bucket: c.GCS.Bucket, Endpoint: c.GCS.Endpoint, Prefix: c.GCS.Prefix},
	}
}
