// Package gateway is the HTTP edge: the routes of the whole API surface, the
// middleware chain, one handler file per resource, and the one table that
// maps errors to statuses and the spec's error envelope.
package gateway

import (
	"cmp"
	"context"
	"net/http"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/aigateway/gateway/gateway/accesslog"
	"github.com/aigateway/gateway/keys"
	"github.com/aigateway/gateway/limits"
	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
)

// Authenticator turns an Authorization header into the caller's key.
type Authenticator interface {
	Authenticate(ctx context.Context, header string) (*keys.APIKey, error)
}

// Options are the dependencies of the API. Nil services leave their routes
// answering 503, so a partly wired gateway still speaks the envelope.
type Options struct {
	Log        *zap.Logger
	Auth       Authenticator
	Catalog    CatalogSource
	Workspaces WorkspaceService
	Keys       KeyManager
	// ProviderKeys serves /byok.
	ProviderKeys ProviderKeyManager
	// Spend serves /usage and the budget routes; SpendGuard refuses keys
	// over their limit or budget (402). Either may be nil.
	Spend      SpendService
	SpendGuard SpendGuard
	Files      FileService
	// FileReader serves the list, metadata, delete and download routes.
	FileReader     FileReader
	Limits         *RateLimits
	Registry       *prometheus.Registry
	TrustedProxies []netip.Prefix
	// ReadyChecks are run by /readyz, by name.
	ReadyChecks map[string]ReadyCheck
	// DisableAccessLog turns the per-request log line off (benchmarks).
	DisableAccessLog bool
	// AccessLog, when set, writes the per-request lines (JSON, zap's
	// encoding) instead of Log; its owner closes it after the server stops.
	AccessLog *accesslog.Writer
	// BodyReadTimeout bounds how long a request body may take to arrive
	// (uploads: how long it may stay idle). Zero means DefaultBodyReadTimeout.
	BodyReadTimeout time.Duration
	// MinUploadRate is the least an upload's body may average, in bytes per
	// second, once BodyReadTimeout has passed since it began; 0: no minimum.
	MinUploadRate int64
	// LingeringClose bounds the draining of a body still coming when its
	// request is refused, so that clients sending the whole body before
	// reading get the answer. The zero value means DefaultLingering; a
	// MaxBytes of 0 with a Timeout set turns draining off.
	LingeringClose Lingering
}

// API is the gateway's HTTP surface.
type API struct {
	log        *zap.Logger
	auth       Authenticator
	catalog    CatalogSource
	workspaces WorkspaceService
	keys       KeyManager
	// providerKeys serves /byok.
	providerKeys ProviderKeyManager
	spend        SpendService
	spendGuard   SpendGuard
	spendMetrics *spendMetrics
	files        FileService
	reader       FileReader
	limits       *RateLimits
	metrics      *httpMetrics
	registry     *prometheus.Registry
	trusted      []netip.Prefix
	ready        map[string]ReadyCheck
	accessLog    bool
	access       *accesslog.Writer
	// bodyTimeout is the read deadline of request bodies (guardBody).
	bodyTimeout time.Duration
	// minUploadRate is Options.MinUploadRate.
	minUploadRate int64
	// authFailures limits failed authentications per client address; nil
	// when rate limiting is off.
	authFailures *authFailureLimit
	lingering    Lingering
	ids          *requestIDs
	draining     atomic.Bool
}

// New builds the API from its dependencies.
func New(o Options) *API {
	reg := o.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	api := &API{
		log:           o.Log,
		auth:          o.Auth,
		catalog:       o.Catalog,
		workspaces:    o.Workspaces,
		keys:          o.Keys,
		providerKeys:  o.ProviderKeys,
		spend:         o.Spend,
		spendGuard:    o.SpendGuard,
		spendMetrics:  newSpendMetrics(reg),
		files:         o.Files,
		reader:        o.FileReader,
		limits:        o.Limits,
		metrics:       newHTTPMetrics(reg),
		registry:      reg,
		trusted:       o.TrustedProxies,
		ready:         o.ReadyChecks,
		accessLog:     !o.DisableAccessLog,
		access:        o.AccessLog,
		bodyTimeout:   cmp.Or(o.BodyReadTimeout, DefaultBodyReadTimeout),
		minUploadRate: o.MinUploadRate,
		lingering:     cmp.Or(o.LingeringClose, DefaultLingering),
		ids:           newRequestIDs(),
	}
	if l := o.Limits; l != nil && l.Limiter != nil && l.AuthFailures.Rate > 0 {
		api.authFailures = newAuthFailureLimit(l.Limiter, l.AuthFailures)
	}
	return api
}

// StartDraining makes /readyz fail so load balancers stop routing here.
func (a *API) StartDraining() { a.draining.Store(true) }

// Handler returns the whole API surface.
//
// The /api/v1 routes sit on the top router in groups rather than in a
// mounted sub-router: one route lookup per request instead of two, which
// matters on the lookup hot path.
func (a *API) Handler() http.Handler {
	r := chi.NewRouter()
	r.Use(a.observe)
	r.Use(a.guardBody)
	r.NotFound(a.adapt(a.unrouted(errNotFound)))
	r.MethodNotAllowed(a.adapt(a.wrongMethod(r)))

	r.Get("/healthz", a.healthz)
	r.Get("/readyz", a.readyz)
	r.Handle("/metrics", promhttp.HandlerFor(a.registry, promhttp.HandlerOpts{Registry: a.registry}))
	// The API's description is public: a client reads it before it has a key.
	r.Get(apiPrefix+"/openapi.json", a.openAPI)

	r.Group(func(r chi.Router) {
		r.Use(a.authenticate)
		r.Use(a.rateLimit(limits.ClassDefault))

		// A key refused for spend can still read its own standing.
		r.Get(apiPrefix+"/key", a.adapt(a.currentKey))

		r.Group(func(r chi.Router) {
			r.Use(a.enforceSpend)
			r.Get(apiPrefix+"/model/{author}/{slug}", a.adapt(a.getModel))
			r.Get(apiPrefix+"/models", a.adapt(a.listModels))
			r.Get(apiPrefix+"/models/count", a.adapt(a.countModels))
			r.Get(apiPrefix+"/models/user", a.adapt(a.listModelsForUser))
			r.Get(apiPrefix+"/models/{id}", a.adapt(a.retrieveModel))
			r.Get(apiPrefix+"/models/{author}/{slug}/endpoints", a.adapt(a.modelEndpoints))
			// Service keys report what the requests they ran cost.
			r.Post(apiPrefix+"/usage", a.adapt(a.reportUsage))
			r.Post(apiPrefix+"/keys/{hash}/usage", a.adapt(a.reportKeyUsage))

			r.Group(func(r chi.Router) {
				r.Use(a.managementOnly)
				r.Post(apiPrefix+"/workspaces", a.adapt(a.createWorkspace))
				r.Get(apiPrefix+"/workspaces", a.adapt(a.listWorkspaces))
				r.Get(apiPrefix+"/workspaces/{id}", a.adapt(a.getWorkspace))
				r.Patch(apiPrefix+"/workspaces/{id}", a.adapt(a.updateWorkspace))
				r.Delete(apiPrefix+"/workspaces/{id}", a.adapt(a.deleteWorkspace))
				r.Get(apiPrefix+"/workspaces/{id}/budgets", a.adapt(a.listBudgets))
				r.Get(apiPrefix+"/workspaces/{id}/budgets/{interval}", a.adapt(a.getBudget))
				r.Put(apiPrefix+"/workspaces/{id}/budgets/{interval}", a.adapt(a.putBudget))
				r.Delete(apiPrefix+"/workspaces/{id}/budgets/{interval}", a.adapt(a.deleteBudget))
				r.Post(apiPrefix+"/keys", a.adapt(a.createKey))
				r.Get(apiPrefix+"/keys", a.adapt(a.listKeys))
				r.Get(apiPrefix+"/keys/{hash}", a.adapt(a.getKey))
				r.Patch(apiPrefix+"/keys/{hash}", a.adapt(a.updateKey))
				r.Delete(apiPrefix+"/keys/{hash}", a.adapt(a.deleteKey))
				r.Post(apiPrefix+"/byok", a.adapt(a.createProviderKey))
				r.Get(apiPrefix+"/byok", a.adapt(a.listProviderKeys))
				r.Get(apiPrefix+"/byok/{id}", a.adapt(a.getProviderKey))
				r.Patch(apiPrefix+"/byok/{id}", a.adapt(a.updateProviderKey))
				r.Delete(apiPrefix+"/byok/{id}", a.adapt(a.deleteProviderKey))
			})

			// Uploads are limited by a class of their own (and by the upload
			// admission); reads, lists and deletes go by the default class,
			// like every other request of the key.
			r.With(a.rateLimit(limits.ClassFiles)).Post(apiPrefix+"/files", a.adapt(a.uploadFile))
			r.Get(apiPrefix+"/files", a.adapt(a.listFiles))
			r.Get(apiPrefix+"/files/{id}", a.adapt(a.getFile))
			r.Delete(apiPrefix+"/files/{id}", a.adapt(a.deleteFile))
			r.Get(apiPrefix+"/files/{id}/content", a.adapt(a.fileContent))
			r.Head(apiPrefix+"/files/{id}/content", a.adapt(a.fileContent))
		})
	})
	return r
}

// DefaultBodyReadTimeout is the read deadline of a request body when the
// configuration sets none: ample for a JSON body on any link.
const DefaultBodyReadTimeout = 30 * time.Second

// apiPrefix is the base path of the API; links in responses use it too.
const apiPrefix = "/api/v1"
