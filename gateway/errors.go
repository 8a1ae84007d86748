package gateway

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"
	"time"

	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/files/sniff"
	"github.com/aigateway/gateway/internal/invalid"
	"github.com/aigateway/gateway/internal/outage"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/policy/limits"
	"github.com/aigateway/gateway/policy/spend"
	"github.com/aigateway/gateway/workspace"
	"go.uber.org/zap"
)

// Errors of the HTTP layer itself.
var (
	errNotFound         = errors.New("route not found")
	errMethodNotAllowed = errors.New("method not allowed")
	// errBadRequest marks malformed input detected by the HTTP layer.
	errBadRequest = errors.New("bad request")
	errTooLarge   = errors.New("request payload too large")
	// errBodyTimeout: the request body stopped arriving (its read deadline
	// passed): 408.
	errBodyTimeout = errors.New("request body timed out")
	// errClientGone: the client closed or reset its connection mid-request.
	// Nothing can be answered; the response is aborted.
	errClientGone = errors.New("client went away")
)

// The spec's message texts, by status.
const (
	msgBadRequest         = "Invalid request parameters"
	msgMissingAuth        = "Missing Authentication header"
	msgInvalidAuth        = "Invalid authentication credentials"
	msgManagementOnly     = "Only management keys can perform this operation"
	msgReadOnlyKey        = "Service keys can only look up models and read files"
	msgManagedByCLI       = "Manage this key with the CLI"
	msgServiceOnly        = "Only service keys can report usage"
	msgOwnUserOnly        = "A key can read only its own user's activity"
	msgKeyLimit           = "Key limit exceeded"
	msgContentMissing     = "File content is missing: its record is kept, its bytes are gone"
	msgBudget             = "Workspace budget exceeded"
	msgNotFound           = "Resource not found"
	msgMethodNotAllowed   = "Method not allowed"
	msgConflict           = "Resource already exists"
	msgTooLarge           = "Request payload too large"
	msgRateLimited        = "Rate limit exceeded"
	msgInternal           = "Internal Server Error"
	msgProviderError      = "Provider returned error"
	msgProviderTimeout    = "Provider timed out"
	msgUnavailable        = "Service temporarily unavailable"
	msgIdempotencyReused  = "Idempotency-Key was already used with a different request"
	msgModelNotAllowed    = "Model not allowed for this key"
	msgQuotaExceeded      = "Workspace storage quota exceeded"
	msgWorkspaceForbidden = "Workspace not accessible with this key"
	msgRequestTimeout     = "Request timeout"
	statusClientClosedReq = 499 // nginx's convention: the client went away; nothing is sent
)

// errorKind is one row of the error table.
type errorKind struct {
	target  error
	status  int
	message string
}

// errorTable maps every error a handler may return to a status and the
// message clients see. The first row whose target matches (errors.Is) wins.
// Anything else is a 500 whose text is logged, never shown.
var errorTable = []errorKind{
	{keys.ErrUnauthenticated, http.StatusUnauthorized, msgMissingAuth},
	{keys.ErrInvalidKey, http.StatusUnauthorized, msgInvalidAuth},
	{keys.ErrReadOnlyKey, http.StatusForbidden, msgReadOnlyKey},
	{keys.ErrManagedByCLI, http.StatusForbidden, msgManagedByCLI},
	{spend.ErrNotServiceKey, http.StatusForbidden, msgServiceOnly},
	{spend.ErrOtherUser, http.StatusForbidden, msgOwnUserOnly},
	{spend.ErrKeyLimit, http.StatusPaymentRequired, msgKeyLimit},
	{spend.ErrBudget, http.StatusPaymentRequired, msgBudget},
	{spend.ErrNoBudget, http.StatusNotFound, msgNotFound},
	{keys.ErrKeyNotFound, http.StatusNotFound, msgNotFound},
	{keys.ErrProviderKeyNotFound, http.StatusNotFound, msgNotFound},
	{keys.ErrIdempotencyMismatch, http.StatusUnprocessableEntity, msgIdempotencyReused},
	{keys.ErrIdempotencyUnavailable, http.StatusBadRequest, msgBadRequest},
	{keys.ErrForbidden, http.StatusForbidden, msgManagementOnly},
	{keys.ErrModelNotAllowed, http.StatusForbidden, msgModelNotAllowed},
	{errNotFound, http.StatusNotFound, msgNotFound},
	{errModelNotFound, http.StatusNotFound, msgNotFound},
	{errUnavailable, http.StatusServiceUnavailable, msgUnavailable},
	// A backend out of reach (metadata store, object storage, Redis without
	// failover): 503 with Retry-After, whatever the route.
	{outage.ErrUnavailable, http.StatusServiceUnavailable, msgUnavailable},
	{limits.ErrLimiterUnavailable, http.StatusServiceUnavailable, msgUnavailable},
	{errMethodNotAllowed, http.StatusMethodNotAllowed, msgMethodNotAllowed},
	{errBadRequest, http.StatusBadRequest, msgBadRequest},
	{errTooLarge, http.StatusRequestEntityTooLarge, msgTooLarge},
	{errBodyTimeout, http.StatusRequestTimeout, msgRequestTimeout},
	{limits.ErrRateLimited, http.StatusTooManyRequests, msgRateLimited},
	{limits.ErrTooManyUploads, http.StatusTooManyRequests, msgRateLimited},
	{limits.ErrExceedsBurst, http.StatusRequestEntityTooLarge, msgTooLarge},
	{workspace.ErrNotFound, http.StatusNotFound, msgNotFound},
	{workspace.ErrInvalid, http.StatusBadRequest, msgBadRequest},
	{workspace.ErrSlugTaken, http.StatusConflict, msgConflict},
	{workspace.ErrIdempotencyMismatch, http.StatusUnprocessableEntity, msgIdempotencyReused},
	{workspace.ErrNotDeletable, http.StatusBadRequest, msgBadRequest},
	{files.ErrInvalidWorkspaceID, http.StatusBadRequest, msgBadRequest},
	{files.ErrUnknownProvider, http.StatusBadRequest, msgBadRequest},
	{files.ErrNoProviderKey, http.StatusBadRequest, msgBadRequest},
	{files.ErrInvalidFilename, http.StatusBadRequest, msgBadRequest},
	{files.ErrInvalidPurpose, http.StatusBadRequest, msgBadRequest},
	{sniff.ErrUnsupportedType, http.StatusBadRequest, msgBadRequest},
	{sniff.ErrEmptyFile, http.StatusBadRequest, msgBadRequest},
	{files.ErrInvalidParam, http.StatusBadRequest, msgBadRequest},
	{files.ErrNotDownloadable, http.StatusBadRequest, msgNotDownloadable},
	{files.ErrContentMissing, http.StatusNotFound, msgContentMissing},
	{errRangeNotSatisfiable, http.StatusRequestedRangeNotSatisfiable, msgRangeNotSatisfiable},
	{files.ErrNotFound, http.StatusNotFound, msgNotFound},
	{files.ErrUploadNotFound, http.StatusNotFound, msgNotFound},
	{files.ErrUploadNotPending, http.StatusBadRequest, msgBadRequest},
	{files.ErrPartsExceedUpload, http.StatusBadRequest, msgBadRequest},
	{files.ErrTooManyPending, http.StatusTooManyRequests, msgRateLimited},
	{files.ErrProviderRateLimited, http.StatusTooManyRequests, msgRateLimited},
	{files.ErrProviderRejected, http.StatusBadRequest, msgBadRequest},
	{files.ErrWorkspaceForbidden, http.StatusForbidden, msgWorkspaceForbidden},
	{files.ErrQuotaExceeded, http.StatusForbidden, msgQuotaExceeded},
	{files.ErrTooLarge, http.StatusRequestEntityTooLarge, msgTooLarge},
	{files.ErrStorageUnavailable, http.StatusServiceUnavailable, msgUnavailable},
	{files.ErrProviderTimeout, http.StatusGatewayTimeout, msgProviderTimeout},
	{files.ErrProvider, http.StatusBadGateway, msgProviderError},
}

// metadataTable builds the envelope's metadata of the domain's typed
// refusals from their fields: the domain says what went wrong in its own
// terms, and the edge alone chooses the wire's names. The first row that
// finds its type in the error (errors.As) describes it, even when it has
// nothing to add (a nil map). A new typed error gets a row here beside its
// row in errorTable.
var metadataTable = []func(error) (meta map[string]any, found bool){
	describe(burstMetadata),
	describe(limitedMetadata),
	describe(keyLimitMetadata),
	describe(budgetMetadata),
	describe(notDeletableMetadata),
	describe(typeMetadata),
	describe(filenameMetadata),
	describe(tooLargeMetadata),
	describe(partTooLargeMetadata),
	describe(pendingMetadata),
	describe(quotaMetadata),
	emptyFileMetadata,
}

// emptyFileMetadata names the field of a file with no bytes, as every
// other 400 of an upload names what it refuses.
func emptyFileMetadata(err error) (map[string]any, bool) {
	if !errors.Is(err, sniff.ErrEmptyFile) {
		return nil, false
	}
	return map[string]any{"fields": map[string]any{"file": "is empty"}}, true
}

// describe turns build, which describes one typed error E, into a row of
// metadataTable.
func describe[E error](build func(E) map[string]any) func(error) (map[string]any, bool) {
	return func(err error) (map[string]any, bool) {
		var e E
		if !errors.As(err, &e) {
			return nil, false
		}
		return build(e), true
	}
}

// burstMetadata: what the request would cost and the most the limit can
// ever allow.
func burstMetadata(e *limits.ExceedsBurstError) map[string]any {
	return map[string]any{"cost": e.Cost, "limit": e.Burst}
}

// limitedMetadata names the limit that denied.
func limitedMetadata(e *limits.LimitedError) map[string]any {
	return map[string]any{"limit": e.Reason}
}

// keyLimitMetadata: the key's limit in dollars and its window, null for a
// lifetime limit.
func keyLimitMetadata(e *spend.KeyLimitError) map[string]any {
	var reset any
	if e.Reset != keys.ResetNever {
		reset = string(e.Reset)
	}
	return map[string]any{"limit": e.Limit, "limit_reset": reset}
}

// budgetMetadata: which budget was reached, and when it resets (in UTC,
// null for a lifetime budget).
func budgetMetadata(e *spend.BudgetError) map[string]any {
	var resets any
	if e.ResetsAt != nil {
		resets = e.ResetsAt.UTC().Format(time.RFC3339)
	}
	return map[string]any{"workspace_id": e.WorkspaceID, "interval": string(e.Interval), "limit_usd": e.Limit, "resets_at": resets}
}

// notDeletableMetadata says what is in the way: the workspace being the
// default one, or what it still holds.
func notDeletableMetadata(e *workspace.NotDeletableError) map[string]any {
	if e.Default {
		return map[string]any{"default": true}
	}
	return map[string]any{"files": e.Files, "keys": e.Keys, "uploads_in_progress": e.Uploads}
}

// typeMetadata adds, for text refused part-way, the offset of the first
// byte at fault; the reason is already under "fields".
func typeMetadata(e *sniff.TypeError) map[string]any {
	if e.Offset < 0 {
		return nil
	}
	return map[string]any{"offset": e.Offset}
}

// filenameMetadata: the rule broken and, when known, where. Never the name
// itself.
func filenameMetadata(e *files.FilenameError) map[string]any {
	m := map[string]any{"rule": e.Rule}
	if e.Position > 0 {
		m["position"] = e.Position
	}
	return m
}

// tooLargeMetadata tells the client the largest file accepted.
func tooLargeMetadata(e *files.TooLargeError) map[string]any {
	return map[string]any{"max_file_bytes": e.Limit}
}

// partTooLargeMetadata tells the client the largest part accepted.
func partTooLargeMetadata(e *files.PartTooLargeError) map[string]any {
	return map[string]any{"max_part_bytes": e.Limit}
}

// pendingMetadata names the limit of pending uploads and its value.
func pendingMetadata(e *files.TooManyPendingError) map[string]any {
	return map[string]any{"limit": "uploads.pending_per_workspace", "max_pending": e.Limit}
}

// quotaMetadata tells the client the workspace's quota and what was left of
// it.
func quotaMetadata(e *files.QuotaError) map[string]any {
	return map[string]any{"limit_bytes": e.Limit, "available_bytes": e.Available}
}

// metadataError is implemented by errors that carry their own client-safe
// details: the adapters' (a provider's request id, the store's quota
// figures), which no row of metadataTable describes, and requestError.
type metadataError interface {
	Metadata() map[string]any
}

// errorMetadata is the client-safe detail of err: from metadataTable, else
// from the error's own Metadata, else nil.
func errorMetadata(err error) map[string]any {
	for _, row := range metadataTable {
		if meta, found := row(err); found {
			return meta
		}
	}
	var me metadataError
	if errors.As(err, &me) {
		return me.Metadata()
	}
	return nil
}

// retryAfterError is implemented by errors that tell when to try again.
type retryAfterError interface {
	RetryAfterSeconds() int
}

// envelope is the error body of the spec.
type envelope struct {
	Error envelopeError `json:"error"`
	// Model lookup errors may carry these two, as the spec allows.
	ServiceMetadata map[string]any `json:"service_metadata,omitempty"`
	UserID          *string        `json:"user_id,omitempty"`
}

type envelopeError struct {
	Code     int            `json:"code"`
	Message  string         `json:"message"`
	Metadata map[string]any `json:"metadata"`
}

// classify finds the status and client message for err. An error the
// table does not know that names fields at fault is the caller's: 400.
func classify(err error) (status int, message string) {
	for _, k := range errorTable {
		if errors.Is(err, k.target) {
			return k.status, k.message
		}
	}
	if invalid.Fields(err) != nil {
		return http.StatusBadRequest, msgBadRequest
	}
	return http.StatusInternalServerError, msgInternal
}

// clientMetadata is the metadata of a refusal: the fields at fault, as
// the domain named them, under "fields", with whatever other client-safe
// detail the error carries.
func clientMetadata(err error) map[string]any {
	meta := errorMetadata(err)
	problems := invalid.Fields(err)
	if len(problems) == 0 {
		return meta
	}
	fields := make(map[string]any, len(problems))
	for _, p := range problems {
		fields[p.Name] = p.Problem
	}
	out := make(map[string]any, len(meta)+1)
	for k, v := range meta {
		out[k] = v
	}
	out["fields"] = fields
	return out
}

// writeError answers err in the envelope and logs it: 5xx at error level
// with the internal text, 4xx at debug.
//
// A client that went away gets nothing, not even a status line: the
// response is aborted (http.ErrAbortHandler), so net/http cannot fill in a
// 200 for work that was not done. This covers a client that half-closes its
// connection after sending (net/http cancels the request on that EOF, as it
// cannot tell a half-close from a close): like nginx, the gateway treats it
// as gone. Once an answer has begun, a failure aborts it too, so the client
// sees a broken transfer rather than a short one that looks complete.
func writeError(w http.ResponseWriter, r *http.Request, log *zap.Logger, err error) {
	// A body that stopped arriving also cancels the request (net/http does
	// on any read error of the connection), but the client may still be
	// there to read why: it gets its 408.
	if errors.Is(err, errClientGone) || r.Context().Err() != nil && !errors.Is(err, errBodyTimeout) {
		setStatus(r, statusClientClosedReq)
		log.Debug("client closed request", zap.String("request_id", requestIDOf(r)), zap.Error(err))
		panic(http.ErrAbortHandler)
	}
	status, message := classify(err)
	if answerStarted(r) {
		// The answer has begun: record what happened and break the transfer.
		log.Error("request failed after the response started", zap.Int("status", status), zap.String("request_id", requestIDOf(r)), zap.Error(err))
		panic(http.ErrAbortHandler)
	}
	env := envelope{Error: envelopeError{Code: status, Message: message}}
	if status < 500 {
		env.Error.Metadata = clientMetadata(err)
		log.Debug("request refused", zap.Int("status", status), zap.String("request_id", requestIDOf(r)), zap.Error(err))
	} else {
		// Upstream (provider) errors may carry safe metadata such as the
		// provider's request id; internal errors carry nothing.
		if status != http.StatusInternalServerError {
			env.Error.Metadata = errorMetadata(err)
		}
		if dependencyDown(err) {
			// The dependency logs its outage once, when it begins and when it
			// ends; each request it fails is in the access log and the
			// metrics (status 503), not one error line apiece.
			log.Debug("request failed: dependency unavailable", zap.Int("status", status), zap.String("request_id", requestIDOf(r)), zap.Error(err))
		} else {
			log.Error("request failed", zap.Int("status", status), zap.String("request_id", requestIDOf(r)), zap.Error(err))
		}
	}
	setRetryHeaders(w.Header(), status, err)
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="api"`) // RFC 9110 §11.6.1: a 401 names its scheme
	}
	bodyClockOf(r).prepareLinger(w.Header())
	writeJSON(w, status, env)
}

// dependencyDown reports an error of a dependency out of reach, whose outage is
// logged where it is detected rather than per request.
func dependencyDown(err error) bool {
	return errors.Is(err, outage.ErrUnavailable) || errors.Is(err, limits.ErrLimiterUnavailable)
}

// errUnavailable: a dependency needed to decide is not there (503).
var errUnavailable = errors.New("service unavailable")

// requestError is a 400 naming the offending fields, in the same
// {"fields": {name: problem}} shape as the workspace validation errors.
type requestError struct {
	meta map[string]any
	// cause is what went wrong underneath, for the log only: it is not
	// unwrapped, so no row of the error table can match it instead.
	cause error
}

func badRequest(fields map[string]any) error {
	return &requestError{meta: map[string]any{"fields": fields}}
}

func (e *requestError) Error() string {
	if e.cause != nil {
		return "bad request: " + e.cause.Error()
	}
	return "bad request"
}

func (e *requestError) Unwrap() error            { return errBadRequest }
func (e *requestError) Metadata() map[string]any { return e.meta }

// bodyReader reads a request body up to limit bytes and turns the failures
// of reading it into answers of the error table: past the limit errTooLarge
// (413; net/http then closes the connection rather than read the rest), a
// body that stopped arriving errBodyTimeout (408), a connection closed or
// reset mid-body errClientGone (nothing answered), anything else (malformed
// chunked framing) a 400 saying the body could not be read. It is the one place that knows *http.MaxBytesError. It remembers
// the first failure, so a caller whose parser wrapped or replaced it can
// still tell why the body ended.
type bodyReader struct {
	r   io.Reader
	err error
}

func newBodyReader(w http.ResponseWriter, r *http.Request, limit int64) *bodyReader {
	return &bodyReader{r: http.MaxBytesReader(w, r.Body, limit)}
}

func (b *bodyReader) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.r.Read(p)
	if err == nil || err == io.EOF {
		return n, err
	}
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		b.err = fmt.Errorf("%w: %w", errTooLarge, err)
	case errors.Is(err, os.ErrDeadlineExceeded):
		b.err = fmt.Errorf("%w: %w", errBodyTimeout, err)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, net.ErrClosed):
		b.err = fmt.Errorf("%w: %w", errClientGone, err)
	default:
		b.err = &requestError{meta: map[string]any{"fields": map[string]any{"body": "could not be read"}}, cause: err}
	}
	return n, b.err
}
