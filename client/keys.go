package client

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Key is an API key of the user, as the /keys routes show it; never its
// secret.
type Key struct {
	Hash               string     `json:"hash"`
	Name               string     `json:"name"`
	Label              string     `json:"label"`
	Disabled           bool       `json:"disabled"`
	WorkspaceID        string     `json:"workspace_id"`
	Role               string     `json:"role"`
	Limit              *float64   `json:"limit"`
	LimitReset         *string    `json:"limit_reset"`
	LimitRemaining     *float64   `json:"limit_remaining"`
	IncludeBYOKInLimit bool       `json:"include_byok_in_limit"`
	Usage              float64    `json:"usage"`
	UsageDaily         float64    `json:"usage_daily"`
	UsageWeekly        float64    `json:"usage_weekly"`
	UsageMonthly       float64    `json:"usage_monthly"`
	BYOKUsage          float64    `json:"byok_usage"`
	BYOKUsageDaily     float64    `json:"byok_usage_daily"`
	BYOKUsageWeekly    float64    `json:"byok_usage_weekly"`
	BYOKUsageMonthly   float64    `json:"byok_usage_monthly"`
	Models             []string   `json:"models"`
	CreatedAt          time.Time  `json:"created_at"`
	UpdatedAt          *time.Time `json:"updated_at"`
	ExpiresAt          *time.Time `json:"expires_at"`
	CreatorUserID      *string    `json:"creator_user_id"`
}

// KeyCreate is a new standard key. Name is required.
type KeyCreate struct {
	Name string `json:"name"`
	// Workspace is an id or slug of the user's; empty: the default one.
	Workspace          string     `json:"workspace_id,omitempty"`
	Limit              *float64   `json:"limit,omitempty"`
	LimitReset         string     `json:"limit_reset,omitempty"` // daily, weekly, monthly; empty: lifetime
	IncludeBYOKInLimit bool       `json:"include_byok_in_limit,omitempty"`
	ExpiresAt          *time.Time `json:"expires_at,omitempty"`

	// IdempotencyKey makes a creation sent again answer the first one's key
	// and secret for 24 hours. Empty: the client makes one up per call,
	// which still covers its own retries.
	IdempotencyKey string `json:"-"`
}

// CreatedKey is a new key and its secret, which the gateway shows this once.
type CreatedKey struct {
	Key    Key    `json:"data"`
	Secret string `json:"key"`
}

// KeyUpdate changes the fields given and leaves the others alone.
type KeyUpdate struct {
	Name               Field[string]
	Disabled           Field[bool]
	Limit              Field[float64] // Null: no limit
	LimitReset         Field[string]  // Null: the limit is lifetime
	IncludeBYOKInLimit Field[bool]
}

// MarshalJSON writes only the fields given.
func (u KeyUpdate) MarshalJSON() ([]byte, error) {
	m := map[string]any{}
	u.Name.put(m, "name")
	u.Disabled.put(m, "disabled")
	u.Limit.put(m, "limit")
	u.LimitReset.put(m, "limit_reset")
	u.IncludeBYOKInLimit.put(m, "include_byok_in_limit")
	return json.Marshal(m)
}

// CreateKey makes a standard key (a management key's call). It is sent with
// an Idempotency-Key, so it is retried safely and its secret is not lost.
func (c *Client) CreateKey(ctx context.Context, k KeyCreate) (*CreatedKey, error) {
	idem := k.IdempotencyKey
	if idem == "" {
		idem = idempotencyKey()
	}
	return sendJSON[CreatedKey](ctx, c, http.MethodPost, "/keys", http.Header{"Idempotency-Key": {idem}}, k, true)
}

// GetKey returns the user's key with that hash (a management key's call).
func (c *Client) GetKey(ctx context.Context, hash string) (*Key, error) {
	return getData[Key](ctx, c, "/keys/"+url.PathEscape(hash), nil)
}

// OwnKey is a key's view of itself (GET /key): the Key, and what only the
// key itself is told.
type OwnKey struct {
	Key
	IsManagementKey bool      `json:"is_management_key"`
	RateLimit       RateLimit `json:"rate_limit"`
}

// RateLimit is the request rate a key is held to.
type RateLimit struct {
	Requests int    `json:"requests"`
	Interval string `json:"interval"`
}

// CurrentKey returns the calling key's own view (any key).
func (c *Client) CurrentKey(ctx context.Context) (*OwnKey, error) {
	return getData[OwnKey](ctx, c, "/key", nil)
}

// UpdateKey changes the fields of u in the standard key hash. A PATCH sets
// fields to values, so sending it again is harmless: it is retried.
func (c *Client) UpdateKey(ctx context.Context, hash string, u KeyUpdate) (*Key, error) {
	return sendData[Key](ctx, c, http.MethodPatch, "/keys/"+url.PathEscape(hash), nil, u, true)
}

// DeleteKey deletes the standard key hash; every replica refuses it within
// seconds.
func (c *Client) DeleteKey(ctx context.Context, hash string) error {
	return c.remove(ctx, "/keys/"+url.PathEscape(hash), nil)
}

// KeyQuery selects the keys Keys and ListKeys list.
type KeyQuery struct {
	IncludeDisabled bool
	Workspace       string // id or slug; empty: every workspace
}

// KeysPerPage is the number of keys of a full page of ListKeys: the
// gateway's page of GET /keys, which has no other size.
const KeysPerPage = 100

// KeyPage is one page of the user's keys, oldest first.
type KeyPage struct {
	Keys []Key `json:"data"`
	// Next is the offset of the next page, 0 when this page is the last
	// (it holds fewer than KeysPerPage keys). The gateway tells no total:
	// a full page may be followed by an empty one.
	Next int `json:"-"`
}

// ListKeys returns the page of the user's keys that q selects, skipping
// offset of them (a management key's call).
func (c *Client) ListKeys(ctx context.Context, q KeyQuery, offset int) (*KeyPage, error) {
	query := url.Values{"offset": {strconv.Itoa(offset)}}
	if q.IncludeDisabled {
		query.Set("include_disabled", "true")
	}
	if q.Workspace != "" {
		query.Set("workspace_id", q.Workspace)
	}
	p, err := get[KeyPage](ctx, c, "/keys", query)
	if err != nil {
		return nil, err
	}
	if len(p.Keys) >= KeysPerPage {
		p.Next = offset + len(p.Keys)
	}
	return p, nil
}

// Keys yields every key of the user, oldest first, a page of KeysPerPage
// at a time; it stops at the first error, which it yields.
func (c *Client) Keys(ctx context.Context, q KeyQuery) iter.Seq2[Key, error] {
	return items(pages(0, func(offset int) (*KeyPage, int, bool, error) {
		p, err := c.ListKeys(ctx, q, offset)
		if err != nil {
			return nil, 0, false, err
		}
		return offsetPage(p, offset, len(p.Keys), p.Next > 0)
	}), func(p *KeyPage) []Key { return p.Keys })
}

// ProviderKey is a workspace's own key for a provider; never its secret.
type ProviderKey struct {
	ID                  string    `json:"id"`
	Provider            string    `json:"provider"`
	Label               string    `json:"label"`
	Name                *string   `json:"name"`
	Disabled            bool      `json:"disabled"`
	WorkspaceID         string    `json:"workspace_id"`
	AllowedAPIKeyHashes []string  `json:"allowed_api_key_hashes"`
	AllowedModels       []string  `json:"allowed_models"`
	IsBYOKOnly          bool      `json:"is_byok_only"`
	IsFallback          bool      `json:"is_fallback"`
	IsRequired          bool      `json:"is_required"`
	DeclaredZDR         *bool     `json:"declared_zdr"`
	SortOrder           int       `json:"sort_order"`
	CreatedAt           time.Time `json:"created_at"`
}

// ProviderKeyCreate is a new provider key: Provider (openai or anthropic)
// and Secret are required.
type ProviderKeyCreate struct {
	Provider            string   `json:"provider"`
	Secret              string   `json:"key"`
	Workspace           string   `json:"workspace_id,omitempty"`
	Name                *string  `json:"name,omitempty"`
	Disabled            bool     `json:"disabled,omitempty"`
	AllowedAPIKeyHashes []string `json:"allowed_api_key_hashes,omitempty"`
	SortOrder           int      `json:"sort_order,omitempty"`
}

// ProviderKeyUpdate changes the fields given; Secret replaces the key.
type ProviderKeyUpdate struct {
	Secret              Field[string]
	Name                Field[string]
	Disabled            Field[bool]
	AllowedAPIKeyHashes Field[[]string]
	SortOrder           Field[int]
}

// MarshalJSON writes only the fields given.
func (u ProviderKeyUpdate) MarshalJSON() ([]byte, error) {
	m := map[string]any{}
	u.Secret.put(m, "key")
	u.Name.put(m, "name")
	u.Disabled.put(m, "disabled")
	u.AllowedAPIKeyHashes.put(m, "allowed_api_key_hashes")
	u.SortOrder.put(m, "sort_order")
	return json.Marshal(m)
}

// CreateProviderKey stores a provider key (a management key's call). It is
// not retried: a lost answer could otherwise store the key twice.
func (c *Client) CreateProviderKey(ctx context.Context, k ProviderKeyCreate) (*ProviderKey, error) {
	return c.writeProviderKey(ctx, http.MethodPost, "/byok", k, false)
}

// UpdateProviderKey changes the fields of u in the provider key id.
func (c *Client) UpdateProviderKey(ctx context.Context, id string, u ProviderKeyUpdate) (*ProviderKey, error) {
	return c.writeProviderKey(ctx, http.MethodPatch, "/byok/"+url.PathEscape(id), u, true)
}

func (c *Client) writeProviderKey(ctx context.Context, method, path string, v any, retry bool) (*ProviderKey, error) {
	return sendData[ProviderKey](ctx, c, method, path, nil, v, retry)
}

// GetProviderKey returns the provider key id.
func (c *Client) GetProviderKey(ctx context.Context, id string) (*ProviderKey, error) {
	return getData[ProviderKey](ctx, c, "/byok/"+url.PathEscape(id), nil)
}

// DeleteProviderKey deletes the provider key id.
func (c *Client) DeleteProviderKey(ctx context.Context, id string) error {
	return c.remove(ctx, "/byok/"+url.PathEscape(id), nil)
}

// ProviderKeys yields every provider key of the user (of one workspace, id
// or slug, when workspace is not empty), oldest first.
func (c *Client) ProviderKeys(ctx context.Context, workspace string) iter.Seq2[ProviderKey, error] {
	type page struct {
		Data  []ProviderKey `json:"data"`
		Total int           `json:"total_count"`
	}
	return items(pages(0, func(offset int) (*page, int, bool, error) {
		query := url.Values{"offset": {strconv.Itoa(offset)}, "limit": {"100"}}
		if workspace != "" {
			query.Set("workspace_id", workspace)
		}
		p, err := get[page](ctx, c, "/byok", query)
		if err != nil {
			return nil, 0, false, err
		}
		return offsetPage(p, offset, len(p.Data), offset+len(p.Data) < p.Total)
	}), func(p *page) []ProviderKey { return p.Data })
}
