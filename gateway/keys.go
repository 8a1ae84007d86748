package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/aigateway/gateway/internal/money"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/policy/limits"
)

// KeyManager is what the /keys routes need.
type KeyManager interface {
	Create(ctx context.Context, userID string, body []byte, idempotencyKey string) (keys.Created, error)
	Get(ctx context.Context, userID, id string) (keys.APIKey, error)
	List(ctx context.Context, userID string, q keys.ListQuery) ([]keys.APIKey, error)
	Update(ctx context.Context, userID, id string, body []byte) (keys.APIKey, error)
	Delete(ctx context.Context, userID, id string) error
}

// keyView is the spec's Key resource. Usage is reported by the components
// that run generations; until a key has any, its sums are 0.
type keyView struct {
	Hash               string        `json:"hash"`
	Name               string        `json:"name"`
	Label              string        `json:"label"`
	Disabled           bool          `json:"disabled"`
	WorkspaceID        *string       `json:"workspace_id"`
	Role               keys.Role     `json:"role"`
	Limit              *money.Micros `json:"limit"`
	LimitReset         *keys.Reset   `json:"limit_reset"`
	LimitRemaining     *money.Micros `json:"limit_remaining"`
	IncludeBYOKInLimit bool          `json:"include_byok_in_limit"`
	Usage              money.Micros  `json:"usage"`
	UsageDaily         money.Micros  `json:"usage_daily"`
	UsageWeekly        money.Micros  `json:"usage_weekly"`
	UsageMonthly       money.Micros  `json:"usage_monthly"`
	BYOKUsage          money.Micros  `json:"byok_usage"`
	BYOKUsageDaily     money.Micros  `json:"byok_usage_daily"`
	BYOKUsageWeekly    money.Micros  `json:"byok_usage_weekly"`
	BYOKUsageMonthly   money.Micros  `json:"byok_usage_monthly"`
	Models             []string      `json:"models"`
	CreatedAt          time.Time     `json:"created_at"`
	UpdatedAt          *time.Time    `json:"updated_at"`
	ExpiresAt          *time.Time    `json:"expires_at"`
	CreatorUserID      *string       `json:"creator_user_id"`
	ExternalUser       *string       `json:"external_user"`
}

func viewKey(k *keys.APIKey) keyView {
	v := keyView{
		Hash: k.ID, Name: k.Name, Label: k.Label, Disabled: k.Disabled, Role: k.Role,
		Limit: k.Limit, IncludeBYOKInLimit: k.IncludeBYOKInLimit, Models: k.Models,
		CreatedAt: k.CreatedAt, UpdatedAt: k.UpdatedAt, ExpiresAt: k.ExpiresAt,
	}
	if k.WorkspaceID != "" {
		v.WorkspaceID = &k.WorkspaceID
	}
	if k.LimitReset != keys.ResetNever {
		v.LimitReset = &k.LimitReset
	}
	if k.Limit != nil {
		remaining := max(*k.Limit-v.Usage, 0)
		v.LimitRemaining = &remaining
	}
	if k.CreatorUserID != "" {
		v.CreatorUserID = &k.CreatorUserID
	}
	return v
}

type keyData struct {
	Data keyView `json:"data"`
}

func (a *API) createKey(w http.ResponseWriter, r *http.Request, actor *keys.APIKey) error {
	if a.keys == nil {
		return errUnavailable
	}
	body, idemKey, err := readWorkspaceRequest(w, r)
	if err != nil {
		return err
	}
	c, err := a.keys.Create(r.Context(), actor.UserID, body, idemKey)
	if err != nil {
		return err
	}
	status := http.StatusCreated
	if c.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	} else {
		a.log.Info("api key created", zap.String("key_id", c.Key.ID), zap.String("actor_key_id", actor.ID),
			zap.String("workspace_id", c.Key.WorkspaceID))
	}
	writeJSON(w, status, struct {
		Data keyView `json:"data"`
		Key  string  `json:"key"`
	}{viewKey(&c.Key), c.Secret.Reveal()})
	return nil
}

func (a *API) getKey(w http.ResponseWriter, r *http.Request, caller *keys.APIKey) error {
	if a.keys == nil {
		return errUnavailable
	}
	id, err := pathSegment(r, "hash")
	if err != nil {
		return err
	}
	k, err := a.keys.Get(r.Context(), caller.UserID, id)
	if err != nil {
		return err
	}
	v, err := a.viewKeyWithUsage(r.Context(), &k)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, keyData{v})
	return nil
}

func (a *API) listKeys(w http.ResponseWriter, r *http.Request, caller *keys.APIKey) error {
	if a.keys == nil {
		return errUnavailable
	}
	q, err := parseKeyQuery(r.URL.Query())
	if err != nil {
		return err
	}
	page, err := a.keys.List(r.Context(), caller.UserID, q)
	if err != nil {
		return err
	}
	views, err := a.viewKeysWithUsage(r.Context(), page)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		Data []keyView `json:"data"`
	}{views})
	return nil
}

// parseKeyQuery reads offset, include_disabled and workspace_id.
func parseKeyQuery(query url.Values) (keys.ListQuery, error) {
	var q keys.ListQuery
	err := readQuery(query, map[string]func(string) error{
		"offset":           intParam("offset", &q.Offset, 0, 1_000_000),
		"include_disabled": boolParam("include_disabled", &q.IncludeDisabled),
		"workspace_id":     workspaceParam(&q.WorkspaceID),
	})
	return q, err
}

func (a *API) updateKey(w http.ResponseWriter, r *http.Request, actor *keys.APIKey) error {
	if a.keys == nil {
		return errUnavailable
	}
	id, err := pathSegment(r, "hash")
	if err != nil {
		return err
	}
	body, _, err := readWorkspaceRequest(w, r)
	if err != nil {
		return err
	}
	k, err := a.keys.Update(r.Context(), actor.UserID, id, body)
	if err != nil {
		return err
	}
	a.forgetKey(k.ID)
	a.log.Info("api key updated", zap.String("key_id", k.ID), zap.String("actor_key_id", actor.ID),
		zap.Bool("disabled", k.Disabled))
	v, err := a.viewKeyWithUsage(r.Context(), &k)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, keyData{v})
	return nil
}

func (a *API) deleteKey(w http.ResponseWriter, r *http.Request, actor *keys.APIKey) error {
	if a.keys == nil {
		return errUnavailable
	}
	id, err := pathSegment(r, "hash")
	if err != nil {
		return err
	}
	if err := a.keys.Delete(r.Context(), actor.UserID, id); err != nil {
		return err
	}
	a.forgetKey(id)
	a.log.Info("api key deleted", zap.String("key_id", id), zap.String("actor_key_id", actor.ID))
	writeJSON(w, http.StatusOK, struct {
		Deleted bool `json:"deleted"`
	}{true})
	return nil
}

// forgetKey drops this replica's cached authentication of a key it just
// changed, so the change holds here at once; other replicas learn it from
// the store's change log within seconds.
func (a *API) forgetKey(id string) {
	if f, ok := a.authn.keys.(interface{ Forget(ids ...string) }); ok {
		f.Forget(id)
	}
}

// currentKey answers GET /key: the calling key's own view, for any role.
func (a *API) currentKey(w http.ResponseWriter, r *http.Request, k *keys.APIKey) error {
	v, err := a.viewKeyWithUsage(r.Context(), k)
	if err != nil {
		return err
	}
	var rate rateLimitView
	if a.limits != nil {
		rate = viewRate(a.limits.limit(limits.ClassDefault))
	}
	writeJSON(w, http.StatusOK, struct {
		Data currentKeyView `json:"data"`
	}{currentKeyView{
		keyView:              v,
		IsManagementKey:      k.Role == keys.RoleManagement,
		IsProvisioningKey:    k.Role == keys.RoleManagement,
		AllowedDataRegions:   []string{"global"},
		FreeModelDailyLimits: freeModelRequests{},
		RateLimit:            rate,
	}})
	return nil
}

type currentKeyView struct {
	keyView
	IsManagementKey      bool              `json:"is_management_key"`
	IsProvisioningKey    bool              `json:"is_provisioning_key"`
	IsFreeTier           bool              `json:"is_free_tier"`
	OrganizationID       *string           `json:"organization_id"`
	AllowedDataRegions   []string          `json:"allowed_data_regions"`
	FreeModelDailyLimits freeModelRequests `json:"free_model_daily_requests"`
	RateLimit            rateLimitView     `json:"rate_limit"`
}

// freeModelRequests: the spec lists limit and remaining; the public
// service's SDK also requires used.
type freeModelRequests struct {
	Limit     int `json:"limit"`
	Remaining int `json:"remaining"`
	Used      int `json:"used"`
}

type rateLimitView struct {
	Requests int    `json:"requests"`
	Interval string `json:"interval"`
	Note     string `json:"note"`
}

func viewRate(l limits.Limit) rateLimitView {
	if l.Rate <= 0 || l.Per <= 0 {
		return rateLimitView{Interval: "1m", Note: "requests of this key are not rate limited"}
	}
	return rateLimitView{
		Requests: l.Rate,
		Interval: interval(l.Per),
		Note:     fmt.Sprintf("%d requests per %s, bursts up to %d, per key", l.Rate, interval(l.Per), l.Burst),
	}
}

// interval writes a period the way the spec does: "1m", "10s", "1h".
func interval(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return d.String()
}
