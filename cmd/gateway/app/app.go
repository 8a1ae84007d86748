package app

import (
	"context"
	"errors"
	"fmt"
	"github.com/google/uuid"
	iofs "io/fs"
	"net/http"
	"runtime"
	"time"

	"github.com/aigateway/gateway/backends/providers"
	"github.com/aigateway/gateway/backends/storage"
	"github.com/aigateway/gateway/backends/storage/fs"
	"github.com/aigateway/gateway/backends/storage/gcs"
	"github.com/aigateway/gateway/backends/storage/s3"
	"github.com/aigateway/gateway/backends/sweeper"
	"github.com/aigateway/gateway/catalog"
	"github.com/aigateway/gateway/configs"
	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/files/blob"
	"github.com/aigateway/gateway/gateway"
	"github.com/aigateway/gateway/gateway/accesslog"
	"github.com/aigateway/gateway/gateway/console"
	"github.com/aigateway/gateway/internal/audit"
	"github.com/aigateway/gateway/internal/lowprio"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/policy/keys/seal"
	"github.com/aigateway/gateway/policy/spend"
	"github.com/aigateway/gateway/workspace"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// authCacheTTL is how long a verified key is trusted without asking the
// store again while the change log is read: revocations reach the cache
// through the log within a second, so the TTL only bounds what a lost
// entry of the log could leave behind.
const authCacheTTL = 10 * time.Second

// revocationBound is how long a cached key is trusted once this replica
// can no longer read the change log (its database is down): the spec
// promises that a revoked key is refused everywhere within 5 s, and a poll
// of the log takes up to a second.
const revocationBound = 4 * time.Second

// firstSpendRefresh bounds the start's wait for the first view of what is
// spent; past it the replica starts unready and keeps trying.
const firstSpendRefresh = 10 * time.Second

// App is the gateway wired from its configuration: the HTTP surface and
// the services behind it, on a Runtime it does not own.
type App struct {
	rt       *Runtime
	api      *gateway.API
	catalog  *catalog.Source
	files    *files.Service
	registry *prometheus.Registry
	closers  []func() error // run in reverse order
	// handler is the whole HTTP surface: the API, and the console when on.
	handler http.Handler
	// console is nil when the configuration turns it off.
	console  http.Handler
	firstRun *console.FirstRun
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

// build wires the gateway in stages, each of which needs only what the
// stages before it made: the catalog, the storage, the secrets, the
// limits, the file services, the background workers, then the HTTP
// surface. Whatever a stage opens is closed by Close, in reverse order,
// also when a later stage fails.
func (a *App) build(ctx context.Context) error {
	a.registry = prometheus.NewRegistry()
	a.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	var err error
	if a.catalog, err = openCatalog(a.rt.Config.Catalog.Path, a.rt.Log, a.registry); err != nil {
		return err
	}
	a.background("catalog watch", func(ctx context.Context) {
		if err := a.catalog.Watch(ctx); err != nil {
			a.rt.Log.Error("catalog file is not watched; reload with SIGHUP", zap.Error(err))
		}
	})
	bucket, err := a.openStorage(ctx)
	if err != nil {
		return err
	}
	secrets, err := a.openSecrets()
	if err != nil {
		return err
	}
	lims, ready, err := openLimits(a.rt.Config, a.rt.Log, a.registry, &a.closers)
	if err != nil {
		return err
	}
	ready["metadata"] = a.rt.store.Ping
	ready["storage"] = a.storageCheck(bucket)
	svc, err := a.buildServices(bucket, secrets, lims)
	if err != nil {
		return err
	}
	a.startWorkers(bucket, svc)
	ready["spend"] = svc.enforcer.Ready
	// The replica that records the report crossing a limit refuses its key
	// at once: the Enforcer learns the totals each recording left.
	spendService := spend.NewService(a.rt.store, uuid.NewString, svc.ingest.Do)
	spendService.TellTotals(svc.enforcer.Learn)
	// A limit or budget changed through this replica is decided here at
	// once; the others take it in at their next refresh.
	spendService.OnBudgetsChanged(svc.refreshSpend)
	keyManager := keys.NewManager(a.rt.store, keyWorkspaces{svc.workspaces}, secrets.sealer)
	keyManager.OnLimitsChanged(svc.refreshSpend)

	a.api, err = gateway.New(gateway.Options{
		Log:             a.rt.Log,
		AccessLog:       a.accessLog(a.registry),
		Auth:            svc.auth,
		Catalog:         a.catalog,
		Workspaces:      svc.workspaces,
		Keys:            keyManager,
		ProviderKeys:    svc.providerKeys,
		Spend:           spendService,
		SpendGuard:      svc.enforcer,
		Files:           a.files,
		FileReader:      svc.reader,
		Uploads:         svc.uploads,
		Audit:           a.rt.store,
		Limits:          lims.requests,
		Registry:        a.registry,
		TrustedProxies:  a.rt.Config.Server.TrustedPrefixes(),
		ReadyChecks:     ready,
		BodyReadTimeout: a.rt.Config.Server.BodyReadTimeout,
		MinUploadRate:   int64(a.rt.Config.Server.MinUploadRate),
		LingeringClose: gateway.Lingering{
			MaxBytes: int64(a.rt.Config.Server.LingeringClose.MaxBytes), Timeout: a.rt.Config.Server.LingeringClose.Timeout,
		},
	})
	if err != nil {
		return err
	}
	a.handler = a.api.Handler()
	if err := a.buildConsole(ctx, a.handler, secrets.sealingKey); err != nil {
		return err
	}
	if a.console != nil {
		a.handler = withConsole(a.handler, a.api.Guard(console.Prefix, a.console))
	}
	return nil
}

// background runs work in a goroutine until the App closes: Close cancels
// its context and waits for it to return.
func (a *App) background(name string, work func(ctx context.Context)) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		work(ctx)
	}()
	a.closers = append(a.closers, func() error {
		cancel()
		<-done
		a.rt.Log.Debug("stopped", zap.String("worker", name))
		return nil
	})
}

// healthLog logs a background worker's changes of health, which it
// reports once each: failing (with the error) at warn, recovered at info.
func healthLog(log *zap.Logger, failing, recovered string) func(error) {
	return func(err error) {
		if err != nil {
			log.Warn(failing, zap.Error(err))
			return
		}
		log.Info(recovered)
	}
}

// openStorage opens the bucket the configuration names.
func (a *App) openStorage(ctx context.Context) (blob.Bucket, error) {
	bucket, err := storage.Open(ctx, StorageOptions(a.rt.Config.Storage), a.rt.Log)
	if err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	a.closers = append(a.closers, bucket.Close)
	return bucket, nil
}

// secrets are the keys derived from the one secret a deployment keeps.
type secrets struct {
	sealingKey []byte
	sealer     *seal.Sealer
	cursorKey  []byte
}

func (a *App) openSecrets() (secrets, error) {
	var s secrets
	var err error
	if s.sealingKey, err = a.rt.sealingKey(); err != nil {
		return s, err
	}
	if s.sealer, err = seal.NewSealer(s.sealingKey); err != nil {
		return s, err
	}
	s.cursorKey, err = fileCursorKey(s.sealingKey)
	return s, err
}

// storageCheck is the readiness check of the storage. Without storage
// only uploads fail (503); lookups and workspaces still work, so the
// replica stays in rotation and says so.
func (a *App) storageCheck(bucket blob.Bucket) gateway.ReadyCheck {
	log := a.rt.Log
	return func(ctx context.Context) error {
		if err := bucket.Check(ctx); err != nil {
			log.Warn("storage check failed", zap.Error(err))
			return gateway.Degraded{Reason: "file storage unreachable; uploads fail"}
		}
		return nil
	}
}

// services are the domain services the HTTP surface fronts, beyond the
// catalog and the file upload service (a.files).
type services struct {
	workspaces   *workspace.Service
	reader       *files.ReadService
	providerKeys *keys.ProviderKeys
	auth         *keys.Authenticator
	enforcer     *spend.Enforcer
	ingest       *lowprio.Pool
	uploads      *files.Resumable
}

func (a *App) buildServices(bucket blob.Bucket, secrets secrets, lims limitSet) (services, error) {
	cfg, log, st := a.rt.Config, a.rt.Log, a.rt.store
	var svc services
	var clients []providers.Provider
	for name, pc := range map[string]configs.Provider{providers.ProviderOpenAI: cfg.Providers.OpenAI, providers.ProviderAnthropic: cfg.Providers.Anthropic} {
		p, err := providers.New(name, providers.Options{BaseURL: pc.BaseURL, Timeout: pc.Timeout}, log)
		if err != nil {
			return svc, fmt.Errorf("providers.%s: %w", name, err)
		}
		clients = append(clients, p)
	}
	keyring := providers.NewKeyring(secrets.sealer, clients...)
	models := catalogModels{a.catalog}

	// The file routes remember the workspaces and provider keys they found
	// (fileLookupTTL). They read workspaces through a service of their
	// own; this replica's changes to workspaces and provider keys go
	// through services that make the file routes forget at once.
	var err error
	svc.reader, err = files.NewReadService(files.ReadConfig{
		Downloadable: cfg.Files.Downloadable, CursorKey: secrets.cursorKey, LookupTTL: fileLookupTTL,
	}, files.ReadDeps{
		Records: st, Keys: st, Bucket: bucket, Opener: keyring,
		Workspaces: workspace.NewService(st, models), Log: slogOf(log),
	})
	if err != nil {
		return svc, err
	}
	svc.workspaces = workspace.NewService(workspaceDeletions{Store: st, forget: svc.reader.Forget}, models)
	svc.providerKeys = keys.NewProviderKeys(providerKeyChanges{ProviderKeyStore: st, forget: svc.reader.Forget},
		keyWorkspaces{svc.workspaces}, secrets.sealer, uuid.NewString)

	a.files = files.NewService(files.Config{
		MaxFileBytes:   int64(cfg.Limits.MaxFileBytes),
		WorkspaceQuota: int64(cfg.Limits.WorkspaceStorageBytes),
		ReservationTTL: cfg.Limits.UploadLease,
		Backend:        cfg.Storage.Backend,
	}, files.Deps{
		Store: st, Keys: st, Bucket: bucket, Opener: keyring,
		Workspaces: svc.workspaces, Admission: lims.admission, Log: slogOf(log),
	})

	svc.uploads = files.NewResumable(files.ResumableConfig{
		MaxBytes:            int64(cfg.Uploads.MaxBytes),
		TTL:                 cfg.Uploads.TTL,
		PendingPerWorkspace: cfg.Uploads.PendingPerWorkspace,
	}, a.files, st)

	// Revocations made through any replica (or the CLI) reach this one's
	// authentication cache through the store's change log.
	svc.auth = keys.NewAuthenticator(st, authCacheTTL)
	svc.auth.SetRevocationBound(revocationBound)

	// What is spent is decided from this replica's own view, refreshed in
	// the background from the metadata store: no round trip per request,
	// and the last view stays while the store is out of reach.
	svc.enforcer = &spend.Enforcer{Store: st, OnHealth: healthLog(log,
		"refreshing spend limits failed; enforcing the last known state",
		"refreshing spend limits works again")}

	// Recording usage costs milliseconds of CPU a batch, on a replica
	// that must answer lookups in a fraction of one: it runs on threads
	// of lowered priority, taking what the requests leave idle. Half the
	// Ps at most, since a worker holds its P while it runs.
	svc.ingest = lowprio.New(max(1, runtime.GOMAXPROCS(0)/2))
	if err := svc.ingest.Err(); err != nil {
		log.Warn("usage reports are recorded at normal priority, beside the requests", zap.Error(err))
	}
	a.closers = append(a.closers, func() error { svc.ingest.Close(); return nil })
	return svc, nil
}

// refreshSpend refreshes this replica's spend view now, after a change
// made through it, bounded so that the request that made the change does
// not wait long on a slow store (the background refresh follows anyway).
func (svc services) refreshSpend(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), spendRefreshBound)
	defer cancel()
	_ = svc.enforcer.Refresh(ctx)
}

// spendRefreshBound bounds refreshSpend.
const spendRefreshBound = 2 * time.Second

// startWorkers starts what each replica runs beside the requests: the
// renewal of its uploads' reservations, the sweeper, the revoker and the
// spend refresh. Each stops when the App closes.
func (a *App) startWorkers(bucket blob.Bucket, svc services) {
	cfg, log, st := a.rt.Config, a.rt.Log, a.rt.store
	// Stopped after the uploads have finished (Close runs after
	// WaitUploads), so the last of them keep their reservations.
	a.background("reservation renewal", a.files.KeepReservations)
	if sc := cfg.Sweeper; sc.Interval > 0 {
		sw := sweeper.New(sweeper.Config{Interval: sc.Interval, Grace: sc.Grace, Batch: sc.Batch, Backend: cfg.Storage.Backend},
			st, bucket, slogOf(log), a.registry)
		a.background("sweeper", sw.Run)
	}
	revoker := &keys.Revoker{Log: st, Auth: svc.auth, OnHealth: healthLog(log,
		"reading key changes failed; revocations wait until it works again",
		"reading key changes works again")}
	a.background("revoker", revoker.Run)
	// Raw usage reports go 36 days after they arrived; the rollups stay.
	a.background("usage retention", (&spend.Retention{Store: st, Log: slogOf(log)}).Run)
	// Audit entries go after audit.retention (400 days by default).
	a.background("audit retention", (&audit.Retention{Store: st, Keep: cfg.Audit.Retention, Log: slogOf(log)}).Run)
	// A replica decides nothing about spend before it knows the spend: the
	// first view is read before the listener opens (bounded, so that a
	// database that hangs does not hang the start), and until one is read
	// the replica is not ready and refuses keyed requests with 503.
	first, cancel := context.WithTimeout(context.Background(), firstSpendRefresh)
	if err := svc.enforcer.Refresh(first); err != nil {
		log.Warn("spend limits not read at start; not ready until they are", zap.Error(err))
	}
	cancel()
	a.background("spend refresh", svc.enforcer.Run)
}

// accessLog is the writer of the per-request lines when the logs are JSON
// at info level (else nil: zap writes them, or they are off by level). It
// drops lines rather than stall requests when the logs' reader is slow,
// and counts them; it is closed with the App, after the server stopped.
func (a *App) accessLog(reg prometheus.Registerer) *accesslog.Writer {
	if a.rt.Config.Log.Format == "console" || !a.rt.Log.Core().Enabled(zapcore.InfoLevel) || a.rt.logs == nil {
		return nil
	}
	w := accesslog.NewWriter(a.rt.logs, accesslog.Options{})
	a.closers = append(a.closers, w.Close)
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "gateway_access_log_dropped_lines_total",
		Help: "Access log lines dropped because the log output was behind (or failing).",
	}, func() float64 { return float64(w.Dropped()) }))
	return w
}

// Handler is the whole HTTP surface: the API, and the console under
// /console/ when it is on.
func (a *App) Handler() http.Handler { return a.handler }

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
	if errors.Is(err, iofs.ErrNotExist) && path == configs.Default().Catalog.Path {
		data, rerr := configs.Shipped.ReadFile("models.yaml")
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
func StorageOptions(c configs.Storage) storage.Options {
	return storage.Options{
		Backend: c.Backend,
		FS:      fs.Config{Dir: c.FS.Dir},
		S3: s3.Config{
			Bucket: c.S3.Bucket, Region: c.S3.Region, Endpoint: c.S3.Endpoint,
			PathStyle: c.S3.PathStyle, Prefix: c.S3.Prefix,
		},
		GCS: gcs.Config{Bucket: c.GCS.Bucket, Endpoint: c.GCS.Endpoint, Prefix: c.GCS.Prefix},
	}
}
