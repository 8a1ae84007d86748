package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/aigateway/gateway/internal/invalid"
	"github.com/aigateway/gateway/internal/jsonobj"
	"github.com/aigateway/gateway/internal/money"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/policy/limits"
)

// KeyManager is what the /keys routes need.
type KeyManager interface {
	Create(ctx context.Context, userID string, req keys.CreateRequest, idempotencyKey string) (keys.Created, error)
	Get(ctx context.Context, userID, id string) (keys.APIKey, error)
	List(ctx context.Context, userID string, q keys.ListQuery) ([]keys.APIKey, error)
	Update(ctx context.Context, userID, id string, u keys.UpdateRequest) (keys.APIKey, error)
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
	body, idemKey, err := readJSONBody(w, r, maxJSONBody)
	if err != nil {
		return err
	}
	req, err := readKeyCreation(body, time.Now().UTC().Truncate(time.Microsecond))
	if err != nil {
		return err
	}
	c, err := a.keys.Create(r.Context(), actor.UserID, req, idemKey)
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
	err := readQuery(query, refuseUnknown, map[string]paramReader{
		"offset":           intParam(&q.Offset, 0, 1_000_000),
		"include_disabled": boolParam(&q.IncludeDisabled),
		"workspace_id":     workspaceParam(&q.WorkspaceID),
	})
	return q, err
}

// readKeyCreation decodes the body of POST /keys. A refusal names every
// problem at once: those of the body's form and the domain's of the values
// (keys.CreateRequest.Check, at now); the document's own problem comes
// last, so a value read before a key given twice keeps its problem.
func readKeyCreation(body []byte, now time.Time) (keys.CreateRequest, error) {
	var (
		req keys.CreateRequest
		p   invalid.Problems
	)
	doc := walkObject(body, func(key string, raw json.RawMessage) {
		switch key {
		case "name":
			if s, ok := readKeyName(raw, &p); ok {
				req.Name = &s
			}
		case "workspace_id":
			if !jsonobj.IsNull(raw) {
				req.Workspace = readKeyString(key, raw, &p)
			}
		case "limit":
			req.Limit, _ = readKeyLimit(raw, &p)
		case "limit_reset":
			req.LimitReset, _ = readKeyReset(raw, &p)
		case "include_byok_in_limit":
			req.IncludeBYOKInLimit, _ = readKeyBool(key, raw, &p)
		case "expires_at":
			if jsonobj.IsNull(raw) {
				return
			}
			s, ok := jsonobj.String(raw)
			if !ok {
				p.Add(key, "must be a string")
				return
			}
			t, problem := readUTC(s)
			if problem != "" {
				p.Add(key, problem)
				return
			}
			req.ExpiresAt = &t
		default:
			p.Add(key, "unknown field")
		}
	})
	if doc != nil {
		req.CheckFields(now, &p)
		p.Add(doc.Name, doc.Problem)
		return req, p.Err()
	}
	if p.Err() != nil {
		req.Check(now, &p)
	}
	return req, p.Err()
}

// readKeyUpdate decodes the body of PATCH /keys/{hash}, naming every
// problem at once as readKeyCreation does.
func readKeyUpdate(body []byte) (keys.UpdateRequest, error) {
	var (
		u keys.UpdateRequest
		p invalid.Problems
	)
	doc := walkObject(body, func(key string, raw json.RawMessage) {
		switch key {
		case "name":
			s, ok := readKeyName(raw, &p)
			u.Name = keys.Optional[string]{Set: ok, Value: s}
		case "disabled":
			b, ok := readKeyBool(key, raw, &p)
			u.Disabled = keys.Optional[bool]{Set: ok, Value: b}
		case "limit":
			m, ok := readKeyLimit(raw, &p)
			u.Limit = keys.Optional[*money.Micros]{Set: ok, Value: m}
		case "limit_reset":
			r, ok := readKeyReset(raw, &p)
			u.LimitReset = keys.Optional[keys.Reset]{Set: ok, Value: r}
		case "include_byok_in_limit":
			b, ok := readKeyBool(key, raw, &p)
			u.IncludeBYOKInLimit = keys.Optional[bool]{Set: ok, Value: b}
		default:
			p.Add(key, "unknown field")
		}
	})
	if doc != nil || p.Err() != nil {
		u.Check(&p)
	}
	if doc != nil {
		p.Add(doc.Name, doc.Problem)
	}
	return u, p.Err()
}

// readKeyString reads a string (null reads as "").
func readKeyString(field string, raw json.RawMessage, p *invalid.Problems) string {
	s, ok := unmarshalString(raw)
	if !ok {
		p.Add(field, "must be a string")
	}
	return s
}

// readKeyName reads a key's name: a string, never null.
func readKeyName(raw json.RawMessage, p *invalid.Problems) (string, bool) {
	s, ok := jsonobj.String(raw)
	if !ok {
		p.Add("name", "must be a string")
	}
	return s, ok
}

func readKeyBool(field string, raw json.RawMessage, p *invalid.Problems) (bool, bool) {
	b, ok := jsonobj.Bool(raw)
	if !ok {
		p.Add(field, "must be true or false")
	}
	return b, ok
}

// readKeyLimit reads a limit in dollars, or null (nil).
func readKeyLimit(raw json.RawMessage, p *invalid.Problems) (*money.Micros, bool) {
	if jsonobj.IsNull(raw) {
		return nil, true
	}
	n, ok := unmarshalNumber(raw)
	if !ok {
		p.Add("limit", "must be a number or null")
		return nil, false
	}
	m, problem := readMoney(n)
	if problem != "" {
		p.Add("limit", problem)
		return nil, false
	}
	return &m, true
}

// readKeyReset reads a limit's window, or null (no window).
func readKeyReset(raw json.RawMessage, p *invalid.Problems) (keys.Reset, bool) {
	if jsonobj.IsNull(raw) {
		return keys.ResetNever, true
	}
	s, ok := unmarshalString(raw)
	if !ok {
		p.Add("limit_reset", "must be a string")
		return keys.ResetNever, false
	}
	r, ok := keys.ParseReset(s)
	if !ok {
		p.Add("limit_reset", keys.ResetRule)
		return keys.ResetNever, false
	}
	return r, true
}

func (a *API) updateKey(w http.ResponseWriter, r *http.Request, actor *keys.APIKey) error {
	id, err := pathSegment(r, "hash")
	if err != nil {
		return err
	}
	body, _, err := readJSONBody(w, r, maxJSONBody)
	if err != nil {
		return err
	}
	u, err := readKeyUpdate(body)
	if err != nil {
		return err
	}
	k, err := a.keys.Update(r.Context(), actor.UserID, id, u)
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
