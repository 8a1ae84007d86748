// Package gateway is the HTTP edge: the routes of the whole API surface, the
// middleware chain, one handler file per resource, and the one table that
// maps errors to statuses and the spec's error envelope.
package gateway

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aigateway/gateway/gateway/accesslog"
	"github.com/aigateway/gateway/internal/audit"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/policy/limits"
	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
)

// Authenticator turns an Authorization header into the caller's key.
type Authenticator interface {
	Authenticate(ctx context.Context, header string) (*keys.APIKey, error)
}

// Options are the dependencies of the API. Every service is required: New
// refuses Options that lack one, so a wiring mistake stops the process at
// start instead of turning a route into a 503 at run time.
type Options struct {
	Log        *zap.Logger
	Auth       Authenticator
	Catalog    CatalogSource
	Workspaces WorkspaceService
	Keys       KeyManager
	// ProviderKeys serves /byok.
	ProviderKeys ProviderKeyManager
	// Spend serves /usage and the budget routes; SpendGuard refuses keys
	// over their limit or budget (402).
	Spend      SpendService
	SpendGuard SpendGuard
	Files      FileService
	// FileReader serves the list, metadata, delete and download routes.
	FileReader FileReader
	// Uploads serves the resumable upload routes.
	Uploads UploadService
	// Audit serves GET /audit. The entries themselves are written by the
	// stores behind the management services, with the actor the
	// management routes put in the request's context.
	Audit audit.Store
	// Limits are the per-request rate limits; nil when the configuration
	// turns them off (the only optional dependency).
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
	log         *zap.Logger
	authn       *authenticator
	observation *observation
	catalog     CatalogSource
	workspaces  WorkspaceService
	keys        KeyManager
	// providerKeys serves /byok.
	providerKeys ProviderKeyManager
	spend        SpendService
	spendGuard   SpendGuard
	spendMetrics *spendMetrics
	files        FileService
	reader       FileReader
	uploads      UploadService
	audit        audit.Store
	limits       *RateLimits
	registry     *prometheus.Registry
	ready        map[string]ReadyCheck
	// bodyTimeout is the read deadline of request bodies (guardBody).
	bodyTimeout time.Duration
	// minUploadRate is Options.MinUploadRate.
	minUploadRate int64
	lingering     Lingering
	draining      atomic.Bool
}

// New builds the API from its dependencies. It fails, naming each, when a
// required one is missing.
func New(o Options) (*API, error) {
	var missing []string
	for _, dep := range []struct {
		name string
		set  bool
	}{
		{"Log", o.Log != nil}, {"Auth", o.Auth != nil}, {"Catalog", o.Catalog != nil},
		{"Workspaces", o.Workspaces != nil}, {"Keys", o.Keys != nil}, {"ProviderKeys", o.ProviderKeys != nil},
		{"Spend", o.Spend != nil}, {"SpendGuard", o.SpendGuard != nil}, {"Files", o.Files != nil},
		{"FileReader", o.FileReader != nil}, {"Uploads", o.Uploads != nil}, {"Audit", o.Audit != nil},
	} {
		if !dep.set {
			missing = append(missing, dep.name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("gateway: missing dependencies: %s", strings.Join(missing, ", "))
	}
	reg := o.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	api := &API{
		log:   o.Log,
		authn: newAuthenticator(o.Auth, o.TrustedProxies),
		observation: &observation{
			log:       o.Log,
			metrics:   newHTTPMetrics(reg),
			accessLog: !o.DisableAccessLog,
			access:    o.AccessLog,
			ids:       newRequestIDs(),
			trusted:   o.TrustedProxies,
		},
		catalog:       o.Catalog,
		workspaces:    o.Workspaces,
		keys:          o.Keys,
		providerKeys:  o.ProviderKeys,
		spend:         o.Spend,
		spendGuard:    o.SpendGuard,
		spendMetrics:  newSpendMetrics(reg),
		files:         o.Files,
		reader:        o.FileReader,
		uploads:       o.Uploads,
		audit:         o.Audit,
		limits:        o.Limits,
		registry:      reg,
		ready:         o.ReadyChecks,
		bodyTimeout:   cmp.Or(o.BodyReadTimeout, DefaultBodyReadTimeout),
		minUploadRate: o.MinUploadRate,
		lingering:     cmp.Or(o.LingeringClose, DefaultLingering),
	}
	if l := o.Limits; l != nil && l.Limiter != nil && l.AuthFailures.Rate > 0 {
		api.authn.failures = newAuthFailureLimit(l.Limiter, l.AuthFailures)
	}
	return api, nil
}

// StartDraining makes /readyz fail so load balancers stop routing here.
func (a *API) StartDraining() { a.draining.Store(true) }

// Handler returns the whole API surface.
//
// The /api/v1 routes sit on the top router in groups rather than in a
// mounted sub-router: one route lookup per request instead of two, which
// matters on the lookup hot path.
func (a *API) Handler() http.Handler {
	// observe is outermost, around the router: it makes the request's
	// state, which also serves as chi's routing context (see requestState).
	return observe(a.observation)(newHotRoutes(a.router()))
}

// router holds the routes and the middleware inside observe.
func (a *API) router() *chi.Mux {
	r := chi.NewRouter()
	r.Use(guardBody(a.bodyTimeout, a.lingering))
	r.NotFound(a.adapt(a.unrouted(errNotFound)))
	r.MethodNotAllowed(a.adapt(a.wrongMethod(r)))

	r.Get("/healthz", a.healthz)
	r.Get("/readyz", a.readyz)
	r.Handle("/metrics", promhttp.HandlerFor(a.registry, promhttp.HandlerOpts{Registry: a.registry}))
	// The API's description is public: a client reads it before it has a key.
	r.Get(apiPrefix+"/openapi.json", a.openAPI)

	// Usage reports come from the other gateway components, a whole fleet's
	// worth through one service key: a rate class of their own, so that
	// they neither hit a person's limit nor use it up.
	r.Group(func(r chi.Router) {
		r.Use(requireKey(a.authn, a.log))
		r.Use(limitRate(a.limits, limits.ClassUsage, a.log))
		r.Use(refuseQuerySemicolons(a.log))
		r.Use(refuseOverSpend(a.spendGuard, a.spendMetrics, a.log))
		r.Post(apiPrefix+"/usage", a.keyed(a.reportUsage))
		r.Post(apiPrefix+"/keys/{hash}/usage", a.keyed(a.reportKeyUsage))
	})

	r.Group(func(r chi.Router) {
		r.Use(requireKey(a.authn, a.log))
		r.Use(limitRate(a.limits, limits.ClassDefault, a.log))
		r.Use(refuseQuerySemicolons(a.log))

		// A key refused for spend can still read its own standing.
		r.Get(apiPrefix+"/key", a.keyed(a.currentKey))

		r.Group(func(r chi.Router) {
			r.Use(refuseOverSpend(a.spendGuard, a.spendMetrics, a.log))
			r.Get(modelRoute, a.keyed(a.getModel))
			r.Get(apiPrefix+"/models", a.adapt(a.listModels))
			r.Get(apiPrefix+"/models/count", a.adapt(a.countModels))
			r.Get(apiPrefix+"/models/user", a.keyed(a.listModelsForUser))
			r.Get(apiPrefix+"/models/{id}", a.keyed(a.retrieveModel))
			r.Get(apiPrefix+"/models/{author}/{slug}/endpoints", a.keyed(a.modelEndpoints))
			// The history of spend is behind the 402 like every route but
			// GET /key: the contract exempts that one alone, and it already
			// tells a refused key why (its limit, its usage in the current
			// day, week and month). A refused key waits for its window to
			// reset, or for its limit to be raised, to read past days.
			r.Get(apiPrefix+"/usage/daily", a.keyed(a.dailyUsage))

			r.Group(func(r chi.Router) {
				r.Use(requireManagement(a.log))
				r.Use(a.actAs)
				r.Post(apiPrefix+"/workspaces", a.keyed(a.createWorkspace))
				r.Get(apiPrefix+"/workspaces", a.keyed(a.listWorkspaces))
				r.Get(apiPrefix+"/workspaces/{id}", a.keyed(a.getWorkspace))
				r.Patch(apiPrefix+"/workspaces/{id}", a.keyed(a.updateWorkspace))
				r.Delete(apiPrefix+"/workspaces/{id}", a.keyed(a.deleteWorkspace))
				r.Get(apiPrefix+"/workspaces/{id}/budgets", a.keyed(a.listBudgets))
				r.Get(apiPrefix+"/workspaces/{id}/budgets/{interval}", a.keyed(a.getBudget))
				r.Put(apiPrefix+"/workspaces/{id}/budgets/{interval}", a.keyed(a.putBudget))
				r.Delete(apiPrefix+"/workspaces/{id}/budgets/{interval}", a.keyed(a.deleteBudget))
				r.Post(apiPrefix+"/keys", a.keyed(a.createKey))
				r.Get(apiPrefix+"/keys", a.keyed(a.listKeys))
				r.Get(apiPrefix+"/keys/{hash}", a.keyed(a.getKey))
				r.Patch(apiPrefix+"/keys/{hash}", a.keyed(a.updateKey))
				r.Delete(apiPrefix+"/keys/{hash}", a.keyed(a.deleteKey))
				r.Post(apiPrefix+"/byok", a.keyed(a.createProviderKey))
				r.Get(apiPrefix+"/byok", a.keyed(a.listProviderKeys))
				r.Get(apiPrefix+"/byok/{id}", a.keyed(a.getProviderKey))
				r.Patch(apiPrefix+"/byok/{id}", a.keyed(a.updateProviderKey))
				r.Delete(apiPrefix+"/byok/{id}", a.keyed(a.deleteProviderKey))
				r.Get(apiPrefix+"/activity", a.keyed(a.activity))
				r.Get(apiPrefix+"/audit", a.keyed(a.auditLog))
			})

			// Uploads are limited by a class of their own (and by the upload
			// admission); reads, lists and deletes go by the default class,
			// like every other request of the key.
			r.With(limitRate(a.limits, limits.ClassFiles, a.log)).Post(apiPrefix+"/files", a.keyed(a.uploadFile))
			r.Get(apiPrefix+"/files", a.keyed(a.listFiles))
			r.Get(apiPrefix+"/files/{id}", a.keyed(a.getFile))
			r.Delete(apiPrefix+"/files/{id}", a.keyed(a.deleteFile))
			r.Get(apiPrefix+"/files/{id}/content", a.keyed(a.fileContent))
			r.Head(apiPrefix+"/files/{id}/content", a.keyed(a.fileContent))

			// Resumable uploads: creating one and sending its parts go by
			// the files class, as an upload does; the rest by the default.
			r.With(limitRate(a.limits, limits.ClassFiles, a.log)).Post(apiPrefix+"/uploads", a.keyed(a.createUpload))
			r.With(limitRate(a.limits, limits.ClassFiles, a.log)).Post(apiPrefix+"/uploads/{id}/parts", a.keyed(a.addUploadPart))
			r.Post(apiPrefix+"/uploads/{id}/complete", a.keyed(a.completeUpload))
			r.Post(apiPrefix+"/uploads/{id}/cancel", a.keyed(a.cancelUpload))
			r.Get(apiPrefix+"/uploads/{id}", a.keyed(a.getUpload))
		})
	})
	return r
}

// Guard serves h, a handler mounted beside the API (the console), inside
// the API's outer middleware: request ids, panic recovery, the access log
// and metrics under route, and the body read deadline with its lingering
// close, so a body that stalls there is cut as it is on the API's routes.
func (a *API) Guard(route string, h http.Handler) http.Handler {
	guarded := guardBody(a.bodyTimeout, a.lingering)(h)
	return observe(a.observation)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if st := stateOf(r.Context()); st != nil {
			st.mount = route
		}
		guarded.ServeHTTP(w, r)
	}))
}

// DefaultBodyReadTimeout is the read deadline of a request body when the
// configuration sets none: ample for a JSON body on any link.
const DefaultBodyReadTimeout = 30 * time.Second

// apiPrefix is the base path of the API; links in responses use it too.
const apiPrefix = "/api/v1"

// modelRoute is the hottest route of all, the model lookup (see hotRoutes).
const modelRoute = apiPrefix + "/model/{author}/{slug}"

// hotRoutes is the router with the model lookup taken out of chi's tree
// walk: for a parameterised route chi also copies the parameters into the
// request's path values, a map made per request (two of the lookup's
// allocations). The lookup is served by the very handler chi registered
// for it, behind the router's own middleware, with the routing context
// filled as chi fills it; handlers read parameters with chi.URLParam, so
// only r.PathValue, which none of them reads, stays empty. Every path the
// table does not match exactly (an empty or extra segment, another
// method) goes to chi, which answers it as before. The other hot route,
// GET /models, has no parameter and costs chi no allocation.
type hotRoutes struct {
	*chi.Mux
	model http.Handler
}

func newHotRoutes(mux *chi.Mux) hotRoutes {
	var endpoint http.Handler
	for _, rt := range mux.Routes() {
		if rt.Pattern == modelRoute {
			endpoint = rt.Handlers[http.MethodGet]
		}
	}
	if endpoint == nil { // no such route: chi routes everything
		return hotRoutes{Mux: mux}
	}
	routed := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := chi.RouteContext(r.Context())
		author, slug, _ := modelPathValues(routingPath(r))
		rc.RouteMethod = r.Method
		rc.URLParams.Add("author", author)
		rc.URLParams.Add("slug", slug)
		rc.RoutePatterns = append(rc.RoutePatterns, modelRoute)
		r.Pattern = modelRoute
		endpoint.ServeHTTP(w, r)
	})
	return hotRoutes{Mux: mux, model: chi.Chain(mux.Middlewares()...).Handler(routed)}
}

func (h hotRoutes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Only below observe, whose state carries chi's routing context.
	if h.model != nil && r.Method == http.MethodGet && chi.RouteContext(r.Context()) != nil {
		if _, _, ok := modelPathValues(routingPath(r)); ok {
			h.model.ServeHTTP(w, r)
			return
		}
	}
	h.Mux.ServeHTTP(w, r)
}

// routingPath is the path chi routes on: the raw one when the request
// kept it, so that parameters arrive still encoded (see pathSegment).
func routingPath(r *http.Request) string {
	return cmp.Or(r.URL.RawPath, r.URL.Path)
}

// modelPathValues splits a path of modelRoute into its two parameters, as
// chi would, for the paths where both are non-empty (chi's answer to the
// others is left to chi).
func modelPathValues(path string) (author, slug string, ok bool) {
	rest, ok := strings.CutPrefix(path, apiPrefix+"/model/")
	if !ok {
		return "", "", false
	}
	author, slug, ok = strings.Cut(rest, "/")
	if !ok || author == "" || slug == "" || strings.IndexByte(slug, '/') >= 0 {
		return "", "", false
	}
	return author, slug, true
}
