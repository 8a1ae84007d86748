package app

import (
	"context"
	"time"

	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/workspace"
)

// fileLookupTTL is how long the file routes trust a workspace and a
// provider key they found (files.ReadConfig.LookupTTL): a provider key
// replaced, disabled or deleted, or a workspace deleted, through another
// replica or the CLI is in effect here within this. It costs one read of
// the store per second per workspace, provider and calling key in use,
// whatever the request rate.
const fileLookupTTL = time.Second

// providerKeyChanges is the store of this replica's /byok routes: once a
// change of a provider key is committed (or failed: it may have been
// committed all the same), forget drops what the file routes remember, so
// the change is in effect on this replica at once.
type providerKeyChanges struct {
	keys.ProviderKeyStore
	forget func()
}

func (s providerKeyChanges) CreateProviderKey(ctx context.Context, k keys.ProviderKey) error {
	defer s.forget()
	return s.ProviderKeyStore.CreateProviderKey(ctx, k)
}

func (s providerKeyChanges) UpdateProviderKey(ctx context.Context, userID, id string, f keys.ProviderKeyFields, secret *keys.SealedSecret, at time.Time) (keys.ProviderKey, error) {
	defer s.forget()
	return s.ProviderKeyStore.UpdateProviderKey(ctx, userID, id, f, secret, at)
}

func (s providerKeyChanges) DeleteProviderKey(ctx context.Context, userID, id string) error {
	defer s.forget()
	return s.ProviderKeyStore.DeleteProviderKey(ctx, userID, id)
}

// workspaceDeletions is the store of this replica's workspace service: once
// a workspace is deleted (with its provider keys), forget drops what the
// file routes remember, as providerKeyChanges does.
type workspaceDeletions struct {
	workspace.Store
	forget func()
}

func (s workspaceDeletions) DeleteWorkspace(ctx context.Context, userID string, ref workspace.Ref) error {
	defer s.forget()
	return s.Store.DeleteWorkspace(ctx, userID, ref)
}
