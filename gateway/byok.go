package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"

	"go.uber.org/zap"

	"github.com/aigateway/gateway/internal/invalid"
	"github.com/aigateway/gateway/internal/jsonobj"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/policy/keys/seal"
)

// ProviderKeyManager is what the /byok routes need.
type ProviderKeyManager interface {
	Create(ctx context.Context, userID string, f keys.ProviderKeyFields) (keys.ProviderKey, error)
	Get(ctx context.Context, userID, id string) (keys.ProviderKey, error)
	List(ctx context.Context, userID string, q keys.ProviderKeyQuery) ([]keys.ProviderKey, int, error)
	Update(ctx context.Context, userID, id string, f keys.ProviderKeyFields) (keys.ProviderKey, error)
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
	body, _, err := readJSONBody(w, r, maxJSONBody)
	if err != nil {
		return err
	}
	f, err := readProviderKeyBody(body, true)
	if err != nil {
		return err
	}
	k, err := a.providerKeys.Create(r.Context(), actor.UserID, f)
	if err != nil {
		return err
	}
	a.log.Info("provider key created", zap.String("provider_key_id", k.ID), zap.String("provider", k.Provider),
		zap.String("workspace_id", k.WorkspaceID), zap.String("actor_key_id", actor.ID))
	writeJSON(w, http.StatusCreated, providerKeyData{viewProviderKey(&k)})
	return nil
}

func (a *API) getProviderKey(w http.ResponseWriter, r *http.Request, caller *keys.APIKey) error {
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
	err := readQuery(query, refuseUnknown, map[string]paramReader{
		"offset":       intParam(&q.Offset, 0, 1_000_000),
		"limit":        intParam(&q.Limit, 1, maxProviderKeyPage),
		"workspace_id": workspaceParam(&q.WorkspaceID),
	})
	return q, err
}

// readProviderKeyBody decodes the body of POST (create) or PATCH /byok. A
// refusal names every problem at once: those of the body's form and the
// domain's of the values (keys.ProviderKeyFields.CheckCreate or
// CheckUpdate); the document's own problem comes last, so a value read
// before a key given twice keeps its problem.
func readProviderKeyBody(body []byte, create bool) (keys.ProviderKeyFields, error) {
	var (
		f keys.ProviderKeyFields
		p invalid.Problems
	)
	str := func(key string, raw json.RawMessage) (string, bool) {
		s, ok := unmarshalString(raw) // null is "", judged by the domain
		if !ok {
			p.Add(key, "must be a string")
		}
		return s, ok
	}
	boolean := func(key string, raw json.RawMessage) (bool, bool) {
		b, ok := jsonobj.Bool(raw)
		if !ok {
			p.Add(key, "must be true or false")
		}
		return b, ok
	}
	list := func(key string, raw json.RawMessage) keys.Optional[[]string] {
		items, ok := unmarshalStrings(raw)
		if !ok {
			p.Add(key, "must be an array of strings or null")
		}
		return keys.Optional[[]string]{Set: ok, Value: items}
	}
	doc := walkObject(body, func(key string, raw json.RawMessage) {
		switch key {
		case "provider":
			s, ok := str(key, raw)
			f.Provider = keys.Optional[string]{Set: ok, Value: s}
		case "key":
			s, ok := str(key, raw)
			f.Secret = keys.Optional[seal.Secret]{Set: ok, Value: seal.NewSecret(s)}
		case "workspace_id":
			if !jsonobj.IsNull(raw) {
				s, ok := str(key, raw)
				f.Workspace = keys.Optional[string]{Set: ok, Value: s}
			}
		case "name":
			if jsonobj.IsNull(raw) {
				f.Name = keys.Optional[*string]{Set: true}
			} else if s, ok := str(key, raw); ok {
				f.Name = keys.Optional[*string]{Set: true, Value: &s}
			}
		case "disabled":
			b, ok := boolean(key, raw)
			f.Disabled = keys.Optional[bool]{Set: ok, Value: b}
		case "is_byok_only":
			b, ok := boolean(key, raw)
			f.IsBYOKOnly = keys.Optional[bool]{Set: ok, Value: b}
		case "is_fallback":
			b, ok := boolean(key, raw)
			f.IsFallback = keys.Optional[bool]{Set: ok, Value: b}
		case "is_required":
			b, ok := boolean(key, raw)
			f.IsRequired = keys.Optional[bool]{Set: ok, Value: b}
		case "declared_zdr":
			if jsonobj.IsNull(raw) {
				f.DeclaredZDR = keys.Optional[*bool]{Set: true}
			} else if b, ok := boolean(key, raw); ok {
				f.DeclaredZDR = keys.Optional[*bool]{Set: true, Value: &b}
			}
		case "allowed_api_key_hashes":
			f.AllowedAPIKeys = list(key, raw)
		case "allowed_models":
			f.AllowedModels = list(key, raw)
		case "allowed_user_ids":
			// The public service's field, of keys shared between users.
			if !jsonobj.IsNull(raw) {
				p.Add(key, "must be null: keys are not shared between users here")
			}
		case "sort_order":
			// json.Number takes a quoted number too ("3"), as it always has here.
			var n json.Number
			err := json.Unmarshal(raw, &n)
			v, err2 := n.Int64()
			if err != nil || err2 != nil {
				p.Add(key, keys.SortOrderRule)
				return
			}
			f.SortOrder = keys.Optional[int]{Set: true, Value: int(v)}
		default:
			p.Add(key, "unknown field")
		}
	})
	switch {
	case doc != nil:
		f.CheckFields(&p)
		p.Add(doc.Name, doc.Problem)
	case p.Err() == nil:
	case create:
		f.CheckCreate(&p)
	default:
		f.CheckUpdate(&p)
	}
	return f, p.Err()
}

func (a *API) updateProviderKey(w http.ResponseWriter, r *http.Request, actor *keys.APIKey) error {
	id, err := pathSegment(r, "id")
	if err != nil {
		return err
	}
	body, _, err := readJSONBody(w, r, maxJSONBody)
	if err != nil {
		return err
	}
	f, err := readProviderKeyBody(body, false)
	if err != nil {
		return err
	}
	k, err := a.providerKeys.Update(r.Context(), actor.UserID, id, f)
	if err != nil {
		return err
	}
	a.log.Info("provider key updated", zap.String("provider_key_id", k.ID), zap.String("actor_key_id", actor.ID),
		zap.Bool("disabled", k.Disabled))
	writeJSON(w, http.StatusOK, providerKeyData{viewProviderKey(&k)})
	return nil
}

func (a *API) deleteProviderKey(w http.ResponseWriter, r *http.Request, actor *keys.APIKey) error {
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
