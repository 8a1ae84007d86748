// Package workspace is the workspace service: validation, defaults, and
// creation and lookup of a user's workspaces over a Store.
package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"
)

// DefaultSlug is the slug of the workspace every user gets on first need.
const DefaultSlug = "default"

// ModelResolver says whether a model id is one the catalog serves.
type ModelResolver interface {
	ModelExists(id string) bool
}

// Service creates and reads workspaces. It is safe for concurrent use.
type Service struct {
	store  Store
	models ModelResolver
	log    *zap.Logger
	now    func() time.Time
}

// NewService returns a Service over store; models may be nil to skip the
// default-model checks.
func NewService(store Store, models ModelResolver, log *zap.Logger) *Service {
	return &Service{store: store, models: models, log: log, now: time.Now}
}

// Created is the outcome of Create: the status and body to answer with.
// Replayed is true when an earlier request with the same Idempotency-Key
// produced them.
type Created struct {
	Status   int
	Body     []byte
	Replayed bool
}

// ParseCreate decodes and validates a creation body, including that the
// default models are ones the catalog serves, and reports every problem at
// once in *InvalidError.
func (s *Service) ParseCreate(body []byte) (CreateRequest, error) {
	req, err := ParseCreateRequest(body)
	bad := &InvalidError{}
	if err != nil && !errors.As(err, &bad) {
		return req, err
	}
	if mErr := s.checkModels(req); mErr != nil {
		var mBad *InvalidError
		if errors.As(mErr, &mBad) {
			for f, p := range mBad.Fields {
				bad.add(f, p)
			}
		}
	}
	if len(bad.Fields) > 0 {
		return req, bad
	}
	return req, nil
}

// Create validates req, creates the workspace for userID and returns the
// response to send. With a non-empty idempotencyKey, a retry of the same
// request within IdempotencyTTL gets the original answer and creates
// nothing; the same key with a different request is ErrIdempotencyMismatch.
func (s *Service) Create(ctx context.Context, userID string, req CreateRequest, idempotencyKey string) (Created, error) {
	if err := s.checkModels(req); err != nil {
		return Created{}, err
	}
	w, err := s.build(userID, req)
	if err != nil {
		return Created{}, err
	}
	body, err := json.Marshal(struct {
		Data Workspace `json:"data"`
	}{w})
	if err != nil {
		return Created{}, err
	}
	var idem *Idempotency
	if idempotencyKey != "" {
		idem = &Idempotency{
			UserID:      userID,
			Key:         idempotencyKey,
			RequestHash: requestHash(req),
			Status:      http.StatusCreated,
			Body:        body,
			CreatedAt:   w.CreatedAt,
		}
	}
	prior, err := s.store.CreateWorkspace(ctx, w, idem)
	if err != nil {
		return Created{}, err
	}
	if prior != nil {
		if prior.RequestHash != idem.RequestHash {
			return Created{}, ErrIdempotencyMismatch
		}
		return Created{Status: prior.Status, Body: prior.Body, Replayed: true}, nil
	}
	s.log.Info("workspace created", zap.String("workspace_id", w.ID), zap.String("user_id", userID))
	return Created{Status: http.StatusCreated, Body: body}, nil
}

// Get returns userID's workspace by UUID or slug. Another user's workspace
// is ErrNotFound, exactly like a missing one.
func (s *Service) Get(ctx context.Context, userID, idOrSlug string) (Workspace, error) {
	if _, err := uuid.Parse(idOrSlug); err == nil && len(idOrSlug) == 36 {
		w, err := s.store.WorkspaceByID(ctx, userID, idOrSlug)
		if !errors.Is(err, ErrNotFound) {
			return w, err
		}
		// A canonical UUID is also a well-formed slug; fall through.
	}
	if !ValidSlug(idOrSlug) {
		return Workspace{}, ErrNotFound
	}
	return s.store.WorkspaceBySlug(ctx, userID, idOrSlug)
}

// Default returns userID's default workspace, creating it on first need.
// Concurrent first calls agree on one workspace: the store's unique slug
// constraint picks the winner and the others read it.
func (s *Service) Default(ctx context.Context, userID string) (Workspace, error) {
	w, err := s.store.WorkspaceBySlug(ctx, userID, DefaultSlug)
	if !errors.Is(err, ErrNotFound) {
		return w, err
	}
	w, err = s.build(userID, CreateRequest{Name: "Default", Slug: DefaultSlug})
	if err != nil {
		return Workspace{}, err
	}
	_, err = s.store.CreateWorkspace(ctx, w, nil)
	switch {
	case err == nil:
		return w, nil
	case errors.Is(err, ErrSlugTaken):
		return s.store.WorkspaceBySlug(ctx, userID, DefaultSlug)
	default:
		return Workspace{}, err
	}
}

// checkModels refuses default models the catalog does not serve.
func (s *Service) checkModels(req CreateRequest) error {
	if s.models == nil {
		return nil
	}
	bad := &InvalidError{}
	for field, id := range map[string]*string{
		"default_text_model":  req.DefaultTextModel,
		"default_image_model": req.DefaultImageModel,
	} {
		if id != nil && !s.models.ModelExists(*id) {
			bad.add(field, "is not a model the catalog serves")
		}
	}
	if len(bad.Fields) > 0 {
		return bad
	}
	return nil
}

// build applies the defaults of a new workspace.
func (s *Service) build(userID string, req CreateRequest) (Workspace, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return Workspace{}, fmt.Errorf("workspace id: %w", err)
	}
	guardrail, err := uuid.NewRandom()
	if err != nil {
		return Workspace{}, fmt.Errorf("guardrail id: %w", err)
	}
	w := Workspace{
		ID:                              id.String(),
		Name:                            req.Name,
		Slug:                            req.Slug,
		DefaultTextModel:                req.DefaultTextModel,
		DefaultImageModel:               req.DefaultImageModel,
		DefaultProviderSort:             req.DefaultProviderSort,
		DefaultGuardrailID:              guardrail.String(),
		CreatedBy:                       userID,
		CreatedAt:                       s.now().UTC().Truncate(time.Microsecond),
		IOLoggingAPIKeyIDs:              req.IOLoggingAPIKeyIDs,
		IOLoggingSamplingRate:           1,
		IsDataDiscountLoggingEnabled:    true,
		IsObservabilityBroadcastEnabled: false,
		IsObservabilityIOLoggingEnabled: false,
	}
	if req.Description != nil {
		w.Description = *req.Description
	}
	if req.IOLoggingSamplingRate != nil {
		w.IOLoggingSamplingRate = *req.IOLoggingSamplingRate
	}
	if req.IsDataDiscountLoggingEnabled != nil {
		w.IsDataDiscountLoggingEnabled = *req.IsDataDiscountLoggingEnabled
	}
	if req.IsObservabilityBroadcastEnabled != nil {
		w.IsObservabilityBroadcastEnabled = *req.IsObservabilityBroadcastEnabled
	}
	if req.IsObservabilityIOLoggingEnabled != nil {
		w.IsObservabilityIOLoggingEnabled = *req.IsObservabilityIOLoggingEnabled
	}
	return w, nil
}

// requestHash fingerprints the decoded request, so a retry that differs only
// in whitespace or key order still counts as the same request.
func requestHash(req CreateRequest) string {
	b, _ := json.Marshal(req) // a struct of plain fields always encodes
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
