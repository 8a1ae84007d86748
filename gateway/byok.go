package gateway

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"go.uber.org/zap"

	"github.com/aigateway/gateway/policy/keys"
)

// ProviderKeyManager is what the /byok routes need.
type ProviderKeyManager interface {
	Create(ctx context.Context, userID string, body []byte) (keys.ProviderKey, error)
	Get(ctx context.Context, userID, id string) (keys.ProviderKey, error)
	List(ctx context.Context, userID string, q keys.ProviderKeyQuery) ([]keys.ProviderKey, int, error)
	Update(ctx context.Context, userID, id string, body []byte) (keys.ProviderKey, error)
	Delete(ctx context.Context, userID, id string) error
}

// providerKeyView is the spec's BYOK key; the secret never leaves the store
// sealed, and never this way at all.
type providerKeyView struct {
	ID                  string    `json:"id"`
	Provider            string    `json:"provider"`
	Label               string    `json:"label"`
	Name                *string   `json:"name"`
	Disabled            bool      `json:"disabled"`
	WorkspaceID         string    `json:"workspace_id"`
	AllowedAPIKeyHashes []string  `json:"allowed_api_key_hashes"`
	AllowedModels       []string  `json:"allowed_models"`
	AllowedUserIDs      []string  `json:"allowed_user_ids"`
	IsBYOKOnly          bool      `json:"is_byok_only"`
	IsFallback          bool      `json:"is_fallback"`
	IsRequired          bool      `json:"is_required"`
	DeclaredZDR         *bool     `json:"declared_zdr"`
	SortOrder           int       `json:"sort_order"`
	CreatedAt           time.Time `json:"created_at"`
}

func viewProviderKey(k *keys.ProviderKey) providerKeyView {
	return providerKeyView{
		ID: k.ID, Provider: k.Provider, Label: k.Label, Name: k.Name, Disabled: k.Disabled,
		WorkspaceID: k.WorkspaceID, AllowedAPIKeyHashes: k.AllowedAPIKeys, AllowedModels: k.AllowedModels,
		IsBYOKOnly: k.IsBYOKOnly, IsFallback: k.IsFallback, IsRequired: k.IsRequired,
		DeclaredZDR: k.DeclaredZDR, SortOrder: k.SortOrder, CreatedAt: k.CreatedAt,
	}
}

type providerKeyData struct {
	Data providerKeyView `json:"data"`
}

// Pages of GET /byok.
const (
	defaultProviderKeyPage = 50
	maxProviderKeyPage     = 100
)

func (a *API) createProviderKey(w http.ResponseWriter, r *http.Request, actor *keys.APIKey) error {
	if a.providerKeys == nil {
		return errUnavailable
	}
	body, _, err := readWorkspaceRequest(w, r)
	if err != nil {
		return err
	}
	k, err := a.providerKeys.Create(r.Context(), actor.UserID, body)
	if err != nil {
		return err
	}
	a.log.Info("provider key created", zap.String("provider_key_id", k.ID), zap.String("provider", k.Provider),
		zap.String("workspace_id", k.WorkspaceID), zap.String("actor_key_id", actor.ID))
	writeJSON(w, http.StatusCreated, providerKeyData{viewProviderKey(&k)})
	return nil
}

func (a *API) getProviderKey(w http.ResponseWriter, r *http.Request, caller *keys.APIKey) error {
	if a.providerKeys == nil {
		return errUnavailable
	}
	id, err := pathSegment(r, "id")
	if err != nil {
		return err
	}
	k, err := a.providerKeys.Get(r.Context(), caller.UserID, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, providerKeyData{viewProviderKey(&k)})
	return nil
}

func (a *API) listProviderKeys(w http.ResponseWriter, r *http.Request, caller *keys.APIKey) error {
	if a.providerKeys == nil {
		return errUnavailable
	}
	q, err := parseProviderKeyQuery(r.URL.Query())
	if err != nil {
		return err
	}
	page, total, err := a.providerKeys.List(r.Context(), caller.UserID, q)
	if err != nil {
		return err
	}
	views := make([]providerKeyView, len(page))
	for i := range page {
		views[i] = viewProviderKey(&page[i])
	}
	writeJSON(w, http.StatusOK, struct {
		Data       []providerKeyView `json:"data"`
		TotalCount int               `json:"total_count"`
	}{views, total})
	return nil
}

// parseProviderKeyQuery reads workspace_id, offset and limit.
func parseProviderKeyQuery(query url.Values) (keys.ProviderKeyQuery, error) {
	q := keys.ProviderKeyQuery{Limit: defaultProviderKeyPage}
	err := readQuery(query, map[string]func(string) error{
		"offset":       intParam("offset", &q.Offset, 0, 1_000_000),
		"limit":        intParam("limit", &q.Limit, 1, maxProviderKeyPage),
		"workspace_id": workspaceParam(&q.WorkspaceID),
	})
	return q, err
}

func (a *API) updateProviderKey(w http.ResponseWriter, r *http.Request, actor *keys.APIKey) error {
	if a.providerKeys == nil {
		return errUnavailable
	}
	id, err := pathSegment(r, "id")
	if err != nil {
		return err
	}
	body, _, err := readWorkspaceRequest(w, r)
	if err != nil {
		return err
	}
	k, err := a.providerKeys.Update(r.Context(), actor.UserID, id, body)
	if err != nil {
		return err
	}
	a.log.Info("provider key updated", zap.String("provider_key_id", k.ID), zap.String("actor_key_id", actor.ID),
		zap.Bool("disabled", k.Disabled))
	writeJSON(w, http.StatusOK, providerKeyData{viewProviderKey(&k)})
	return nil
}

func (a *API) deleteProviderKey(w http.ResponseWriter, r *http.Request, actor *keys.APIKey) error {
	if a.providerKeys == nil {
		return errUnavailable
	}
	id, err := pathSegment(r, "id")
	if err != nil {
		return err
	}
	if err := a.providerKeys.Delete(r.Context(), actor.UserID, id); err != nil {
		return err
	}
	a.log.Info("provider key deleted", zap.String("provider_key_id", id), zap.String("actor_key_id", actor.ID))
	writeJSON(w, http.StatusOK, struct {
		Deleted bool `json:"deleted"`
	}{true})
	return nil
}
