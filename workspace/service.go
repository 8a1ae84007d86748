// Package workspace is the workspace service: validation, defaults, and
// creation, lookup, listing, update and deletion of a user's workspaces over
// a Store. It speaks no HTTP: it returns values and errors, and the edge
// picks statuses and encodes bodies.
package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/aigateway/gateway/internal/invalid"
)

// DefaultSlug is the slug of the workspace every user gets on first need.
const DefaultSlug = "default"

// ModelResolver says whether a model id is one the catalog serves.
type ModelResolver interface {
	ModelExists(id string) bool
}

// Service creates, reads, changes and deletes workspaces. It is safe for concurrent use.
type Service struct {
	store  Store
	models ModelResolver
	now    func() time.Time
}

// NewService returns a Service over store; models may be nil to skip the
// default-model checks. It logs nothing: the edge records what each request
// did, and this package stays free of a logger (zap imports net/http).
func NewService(store Store, models ModelResolver) *Service {
	return &Service{store: store, models: models, now: time.Now}
}

// Result is the workspace a Create or Update answers with. Replayed is true
// when an earlier request with the same Idempotency-Key produced it.
type Result struct {
	Workspace Workspace
	Replayed  bool
}

// Create validates req as CheckCreate does (every problem at once in
// *invalid.Problems, nothing created), creates the workspace for userID and
// returns it. With a non-empty idempotencyKey, a retry of the same request
// within IdempotencyTTL gets the original workspace and creates nothing;
// the same key with a different request is ErrIdempotencyMismatch.
func (s *Service) Create(ctx context.Context, userID string, req CreateRequest, idempotencyKey string) (Result, error) {
	var p invalid.Problems
	s.CheckCreate(req, &p)
	if err := p.Err(); err != nil {
		return Result{}, err
	}
	if err := s.refuseIDAsSlug(ctx, userID, *req.Slug, ""); err != nil {
		return Result{}, err
	}
	w, err := s.build(userID, req)
	if err != nil {
		return Result{}, err
	}
	var idem *Idempotency
	if idempotencyKey != "" {
		idem = &Idempotency{
			UserID:      userID,
			Scope:       ScopeCreate,
			Key:         idempotencyKey,
			RequestHash: requestHash(req),
			Workspace:   w,
			CreatedAt:   w.CreatedAt,
		}
	}
	prior, err := s.store.CreateWorkspace(ctx, w, idem)
	if err != nil {
		return Result{}, err
	}
	if prior != nil {
		return replay(prior, idem)
	}
	return Result{Workspace: w}, nil
}

// Update validates u as CheckUpdate does (every problem at once in
// *invalid.Problems, nothing changed) and applies it to userID's workspace
// idOrSlug. An empty u changes nothing, updated_at included: it answers
// with the workspace as it is. Changing the default workspace's slug is
// refused (*invalid.Problems naming slug), since Default finds it by that
// slug. The Idempotency-Key works as for Create, in a scope of its own, and
// binds the key to idOrSlug as well as to the request.
func (s *Service) Update(ctx context.Context, userID, idOrSlug string, u UpdateRequest, idempotencyKey string) (Result, error) {
	ref, ok := ParseRef(idOrSlug)
	if !ok {
		return Result{}, ErrNotFound
	}
	var p invalid.Problems
	s.CheckUpdate(u, &p)
	if err := p.Err(); err != nil {
		return Result{}, err
	}
	if u.Slug.Set && idShaped(u.Slug.Value) {
		self, err := s.Get(ctx, userID, idOrSlug)
		if err != nil {
			return Result{}, err
		}
		if err := s.refuseIDAsSlug(ctx, userID, u.Slug.Value, self.ID); err != nil {
			return Result{}, err
		}
	}
	at := s.now().UTC().Truncate(time.Microsecond)
	var idem *Idempotency
	if idempotencyKey != "" {
		idem = &Idempotency{
			UserID: userID,
			Scope:  ScopeUpdate,
			Key:    idempotencyKey,
			RequestHash: requestHash(struct {
				Ref     Ref
				Request UpdateRequest
			}{ref, u}),
			CreatedAt: at,
		}
	}
	w, prior, err := s.store.UpdateWorkspace(ctx, userID, ref, u, at, idem)
	if errors.Is(err, ErrDefaultSlug) {
		return Result{}, invalid.One("slug", "cannot change: this is the default workspace")
	}
	if err != nil {
		return Result{}, err
	}
	if prior != nil {
		return replay(prior, idem)
	}
	return Result{Workspace: w}, nil
}

// refuseIDAsSlug answers ErrSlugTaken for a slug that is the id of
// another of userID's workspaces (self, "" on creation, is the one being
// changed). The spec's pattern allows a slug in the shape of a UUID, and a
// path is read as an id first: such a slug would name the other workspace
// everywhere. Unlike a slug, an id is never chosen, reused or given to a
// workspace made later, so reading before the write races with nothing.
func (s *Service) refuseIDAsSlug(ctx context.Context, userID, slug, self string) error {
	if !idShaped(slug) || slug == self {
		return nil
	}
	_, err := s.store.WorkspaceByID(ctx, userID, slug)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil
	case err != nil:
		return err
	}
	return ErrSlugTaken
}

// replay answers a retry with the record of the first request.
func replay(prior, idem *Idempotency) (Result, error) {
	if prior.RequestHash != idem.RequestHash {
		return Result{}, ErrIdempotencyMismatch
	}
	return Result{Workspace: prior.Workspace, Replayed: true}, nil
}

// Limits of a page of List.
const (
	DefaultPageLimit = 50
	MaxPageLimit     = 100
)

// Page selects a slice of a user's workspaces: Offset >= 0, Limit from 1
// to MaxPageLimit (the edge reads them; List takes them as they are).
type Page struct {
	Offset int
	Limit  int
}

// Listing is one page of a user's workspaces and how many there are.
type Listing struct {
	Workspaces []Workspace // never nil
	Total      int
}

// List returns the page of userID's workspaces, ordered by created_at then
// id. An offset past the end yields an empty page with the true total.
//
// The user's default workspace is always among them: a user who can ask
// has a key, and every key acts in the default workspace unless it names
// another. Keys made since the default is made with the first key find it
// there; for a user whose keys came before that (and whose default was
// only made when first read), List makes it, so that what a list shows
// never depends on whether one of its items was read.
func (s *Service) List(ctx context.Context, userID string, p Page) (Listing, error) {
	if _, err := s.Default(ctx, userID); err != nil {
		return Listing{}, err
	}
	ws, total, err := s.store.ListWorkspaces(ctx, userID, p.Offset, p.Limit)
	if err != nil {
		return Listing{}, err
	}
	if ws == nil {
		ws = []Workspace{}
	}
	return Listing{Workspaces: ws, Total: total}, nil
}

// Delete removes userID's workspace idOrSlug. It is refused with
// *NotDeletableError, changing nothing, for the default workspace and for
// a workspace that holds files, keys or uploads in progress: nothing a user
// stored is lost by a delete. Its slug is free again afterwards.
func (s *Service) Delete(ctx context.Context, userID, idOrSlug string) error {
	ref, ok := ParseRef(idOrSlug)
	if !ok {
		return ErrNotFound
	}
	return s.store.DeleteWorkspace(ctx, userID, ref)
}

// Get returns userID's workspace by UUID or slug. Another user's workspace
// is ErrNotFound, exactly like a missing one. The slug DefaultSlug names
// the user's default workspace, which exists for every user with a key (as
// List shows it): made here if it was not yet.
func (s *Service) Get(ctx context.Context, userID, idOrSlug string) (Workspace, error) {
	ref, ok := ParseRef(idOrSlug)
	if !ok {
		return Workspace{}, ErrNotFound
	}
	if ref.ID != "" {
		w, err := s.store.WorkspaceByID(ctx, userID, ref.ID)
		if !errors.Is(err, ErrNotFound) || ref.Slug == "" {
			return w, err
		}
	}
	if ref.Slug == DefaultSlug {
		return s.Default(ctx, userID)
	}
	return s.store.WorkspaceBySlug(ctx, userID, ref.Slug)
}

// Default returns userID's default workspace, creating it on first need.
// Concurrent first calls agree on one workspace: the store's unique slug
// constraint picks the winner and the others read it.
func (s *Service) Default(ctx context.Context, userID string) (Workspace, error) {
	w, err := s.store.WorkspaceBySlug(ctx, userID, DefaultSlug)
	if !errors.Is(err, ErrNotFound) {
		return w, err
	}
	name, slug := "Default", DefaultSlug
	w, err = s.build(userID, CreateRequest{Name: &name, Slug: &slug})
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

// build applies the defaults of a new workspace; req has been checked.
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
		Name:                            *req.Name,
		Slug:                            *req.Slug,
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

// requestHash fingerprints the typed request, so a retry that differs only
// in whitespace or key order still counts as the same request. The encoding
// of a CreateRequest must not change: records written before an upgrade
// are compared with it.
func requestHash(req any) string {
	b, _ := json.Marshal(req) // structs of plain fields always encode
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
