package gateway

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/policy"
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
)

// The spec's message texts, by status.
const (
	msgBadRequest         = "Invalid request parameters"
	msgMissingAuth        = "Missing Authentication header"
	msgInvalidAuth        = "Invalid authentication credentials"
	msgManagementOnly     = "Only management keys can perform this operation"
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
	{policy.ErrUnauthenticated, http.StatusUnauthorized, msgMissingAuth},
	{policy.ErrInvalidKey, http.StatusUnauthorized, msgInvalidAuth},
	{policy.ErrForbidden, http.StatusForbidden, msgManagementOnly},
	{policy.ErrModelNotAllowed, http.StatusForbidden, msgModelNotAllowed},
	{errNotFound, http.StatusNotFound, msgNotFound},
	{errModelNotFound, http.StatusNotFound, msgNotFound},
	{errUnavailable, http.StatusServiceUnavailable, msgUnavailable},
	{errMethodNotAllowed, http.StatusMethodNotAllowed, msgMethodNotAllowed},
	{errBadRequest, http.StatusBadRequest, msgBadRequest},
	{errTooLarge, http.StatusRequestEntityTooLarge, msgTooLarge},
	{policy.ErrRateLimited, http.StatusTooManyRequests, msgRateLimited},
	{policy.ErrTooManyUploads, http.StatusTooManyRequests, msgRateLimited},
	{policy.ErrExceedsBurst, http.StatusRequestEntityTooLarge, msgTooLarge},
	{workspace.ErrNotFound, http.StatusNotFound, msgNotFound},
	{workspace.ErrInvalid, http.StatusBadRequest, msgBadRequest},
	{workspace.ErrSlugTaken, http.StatusConflict, msgConflict},
	{workspace.ErrIdempotencyMismatch, http.StatusUnprocessableEntity, msgIdempotencyReused},
	{workspace.ErrNotDeletable, http.StatusBadRequest, msgBadRequest},
	{files.ErrInvalidWorkspaceID, http.StatusBadRequest, msgBadRequest},
	{files.ErrUnknownProvider, http.StatusBadRequest, msgBadRequest},
	{files.ErrNoProviderKey, http.StatusBadRequest, msgBadRequest},
	{files.ErrInvalidFilename, http.StatusBadRequest, msgBadRequest},
	{files.ErrUnsupportedType, http.StatusBadRequest, msgBadRequest},
	{files.ErrEmptyFile, http.StatusBadRequest, msgBadRequest},
	{files.ErrWorkspaceForbidden, http.StatusForbidden, msgWorkspaceForbidden},
	{files.ErrQuotaExceeded, http.StatusForbidden, msgQuotaExceeded},
	{files.ErrTooLarge, http.StatusRequestEntityTooLarge, msgTooLarge},
	{files.ErrStorageUnavailable, http.StatusServiceUnavailable, msgUnavailable},
	{files.ErrProviderTimeout, http.StatusGatewayTimeout, msgProviderTimeout},
	{files.ErrProvider, http.StatusBadGateway, msgProviderError},
}

// metadataError is implemented by errors that carry client-safe details.
type metadataError interface {
	Metadata() map[string]any
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

// classify finds the status and client message for err.
func classify(err error) (status int, message string) {
	var maxErr *http.MaxBytesError
	if errors.As(err, &maxErr) {
		return http.StatusRequestEntityTooLarge, msgTooLarge
	}
	for _, k := range errorTable {
		if errors.Is(err, k.target) {
			return k.status, k.message
		}
	}
	return http.StatusInternalServerError, msgInternal
}

// writeError answers err in the envelope and logs it: 5xx at error level
// with the internal text, 4xx at debug. A client that went away gets nothing.
func writeError(w http.ResponseWriter, r *http.Request, log *zap.Logger, err error) {
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		setStatus(r, statusClientClosedReq)
		log.Debug("client closed request", zap.String("request_id", requestIDFrom(r.Context())), zap.Error(err))
		return
	}
	status, message := classify(err)
	if ex := exchangeFrom(r.Context()); ex != nil && ex.wrote {
		// The answer has begun; all that is left is to record what happened.
		log.Error("request failed after the response started", zap.Int("status", status), zap.String("request_id", ex.requestID), zap.Error(err))
		return
	}
	env := envelope{Error: envelopeError{Code: status, Message: message}}
	if status < 500 {
		var me metadataError
		if errors.As(err, &me) {
			env.Error.Metadata = me.Metadata()
		}
		log.Debug("request refused", zap.Int("status", status), zap.String("request_id", requestIDFrom(r.Context())), zap.Error(err))
	} else {
		// Upstream (provider) errors may carry safe metadata such as the
		// provider's request id; internal errors carry nothing.
		var me metadataError
		if status != http.StatusInternalServerError && errors.As(err, &me) {
			env.Error.Metadata = me.Metadata()
		}
		log.Error("request failed", zap.Int("status", status), zap.String("request_id", requestIDFrom(r.Context())), zap.Error(err))
	}
	var ra retryAfterError
	if errors.As(err, &ra) && ra.RetryAfterSeconds() > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(ra.RetryAfterSeconds()))
	} else if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	writeJSON(w, status, env)
}

// errUnavailable: a dependency needed to decide is not there (503).
var errUnavailable = errors.New("service unavailable")

// requestError is a 400 naming the offending fields, in the same
// {"fields": {name: problem}} shape as the workspace validation errors.
type requestError struct {
	meta map[string]any
}

func badRequest(fields map[string]any) error {
	return &requestError{meta: map[string]any{"fields": fields}}
}

func (e *requestError) Error() string            { return "bad request" }
func (e *requestError) Unwrap() error            { return errBadRequest }
func (e *requestError) Metadata() map[string]any { return e.meta }
