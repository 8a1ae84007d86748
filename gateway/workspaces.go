package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"

	"go.uber.org/zap"

	"github.com/aigateway/gateway/internal/invalid"
	"github.com/aigateway/gateway/internal/jsonobj"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/workspace"
)

// WorkspaceService is what the workspace routes need.
type WorkspaceService interface {
	Create(ctx context.Context, userID string, req workspace.CreateRequest, idempotencyKey string) (workspace.Result, error)
	Get(ctx context.Context, userID, idOrSlug string) (workspace.Workspace, error)
	List(ctx context.Context, userID string, page workspace.Page) (workspace.Listing, error)
	Update(ctx context.Context, userID, idOrSlug string, u workspace.UpdateRequest, idempotencyKey string) (workspace.Result, error)
	Delete(ctx context.Context, userID, idOrSlug string) error
	workspaceChecker
}

// workspaceChecker is the domain's judgement of a workspace request: it
// adds its problems to those the decoding of the body found, so that a
// refusal names them all.
type workspaceChecker interface {
	CheckCreate(req workspace.CreateRequest, p *invalid.Problems)
	CheckUpdate(u workspace.UpdateRequest, p *invalid.Problems)
}

// workspaceData is the {"data": Workspace} body of the workspace routes.
type workspaceData struct {
	Data workspace.Workspace `json:"data"`
}

func (a *API) createWorkspace(w http.ResponseWriter, r *http.Request, caller *keys.APIKey) error {
	body, idemKey, err := readJSONBody(w, r, maxJSONBody)
	if err != nil {
		return err
	}
	req, err := readWorkspaceCreation(body, a.workspaces)
	if err != nil {
		return err
	}
	userID := caller.UserID
	res, err := a.workspaces.Create(r.Context(), userID, req, idemKey)
	if err != nil {
		return err
	}
	if !res.Replayed {
		a.log.Info("workspace created", zap.String("workspace_id", res.Workspace.ID), zap.String("user_id", userID))
	}
	writeWorkspace(w, http.StatusCreated, res)
	return nil
}

func (a *API) updateWorkspace(w http.ResponseWriter, r *http.Request, caller *keys.APIKey) error {
	id, err := pathSegment(r, "id")
	if err != nil {
		return err
	}
	body, idemKey, err := readJSONBody(w, r, maxJSONBody)
	if err != nil {
		return err
	}
	u, err := readWorkspaceUpdate(body, a.workspaces)
	if err != nil {
		return err
	}
	userID := caller.UserID
	res, err := a.workspaces.Update(r.Context(), userID, id, u, idemKey)
	if err != nil {
		return err
	}
	if !res.Replayed {
		a.log.Info("workspace updated", zap.String("workspace_id", res.Workspace.ID), zap.String("user_id", userID))
	}
	writeWorkspace(w, http.StatusOK, res)
	return nil
}

// readWorkspaceCreation decodes the body of POST /workspaces. A refusal
// names every problem at once (*invalid.Problems): those of the body and,
// with them, the domain's (check), as the service names them when the body
// decodes. What a document cut short lacks says nothing, so nothing is
// required of it then.
func readWorkspaceCreation(body []byte, check workspaceChecker) (workspace.CreateRequest, error) {
	u, p, whole := readWorkspaceBody(body)
	req := creation(u)
	switch {
	case p.Err() == nil:
	case whole:
		check.CheckCreate(req, &p)
	default:
		check.CheckUpdate(u, &p)
	}
	return req, p.Err()
}

// readWorkspaceUpdate decodes the body of PATCH /workspaces/{id}, naming
// every problem at once as readWorkspaceCreation does.
func readWorkspaceUpdate(body []byte, check workspaceChecker) (workspace.UpdateRequest, error) {
	u, p, _ := readWorkspaceBody(body)
	if p.Err() != nil {
		check.CheckUpdate(u, &p)
	}
	return u, p.Err()
}

// readWorkspaceBody decodes the body of POST or PATCH /workspaces: the
// fields given, each of its JSON type, and the problems of the rest (every
// one at once, named by field: "body" for the document itself). whole is
// false when the document could not be walked to its end (a key given
// twice stops it there).
func readWorkspaceBody(body []byte) (u workspace.UpdateRequest, p invalid.Problems, whole bool) {
	doc := walkObject(body, func(key string, raw json.RawMessage) {
		readWorkspaceField(&u, key, raw, &p)
	})
	if doc != nil {
		p.Add(doc.Name, doc.Problem)
	}
	return u, p, doc == nil
}

// readWorkspaceField decodes one member; names match exactly. A field is
// Set only when its value decoded.
func readWorkspaceField(u *workspace.UpdateRequest, key string, raw json.RawMessage, p *invalid.Problems) {
	str := func(dst *workspace.Optional[string]) {
		s, ok := jsonobj.String(raw)
		switch {
		case !ok:
			p.Add(key, "must be a string")
		case replacedInvalid(raw, s):
			p.Add(key, "must be valid UTF-8")
		default:
			*dst = workspace.Optional[string]{Set: true, Value: s}
		}
	}
	nullableStr := func(dst *workspace.Optional[*string]) {
		if jsonobj.IsNull(raw) {
			*dst = workspace.Optional[*string]{Set: true}
			return
		}
		var s workspace.Optional[string]
		if str(&s); s.Set {
			*dst = workspace.Optional[*string]{Set: true, Value: &s.Value}
		}
	}
	boolean := func(dst *workspace.Optional[bool]) {
		b, ok := jsonobj.Bool(raw)
		if !ok {
			p.Add(key, "must be a boolean")
			return
		}
		*dst = workspace.Optional[bool]{Set: true, Value: b}
	}
	switch key {
	case "name":
		str(&u.Name)
	case "slug":
		str(&u.Slug)
	case "description":
		nullableStr(&u.Description)
	case "default_text_model":
		nullableStr(&u.DefaultTextModel)
	case "default_image_model":
		nullableStr(&u.DefaultImageModel)
	case "default_provider_sort":
		nullableStr(&u.DefaultProviderSort)
	case "io_logging_api_key_ids":
		if jsonobj.IsNull(raw) {
			u.IOLoggingAPIKeyIDs = workspace.Optional[[]string]{Set: true}
			return
		}
		ids, ok := unmarshalStrings(raw)
		if !ok {
			p.Add(key, "must be an array of strings or null")
			return
		}
		if ids == nil {
			ids = []string{}
		}
		u.IOLoggingAPIKeyIDs = workspace.Optional[[]string]{Set: true, Value: ids}
	case "io_logging_sampling_rate":
		n, ok := unmarshalNumber(raw)
		f, err := json.Number(n).Float64()
		if !ok || err != nil { // null too: it is no number
			p.Add(key, "must be a number")
			return
		}
		u.IOLoggingSamplingRate = workspace.Optional[float64]{Set: true, Value: f}
	case "is_data_discount_logging_enabled":
		boolean(&u.IsDataDiscountLoggingEnabled)
	case "is_observability_broadcast_enabled":
		boolean(&u.IsObservabilityBroadcastEnabled)
	case "is_observability_io_logging_enabled":
		boolean(&u.IsObservabilityIOLoggingEnabled)
	default:
		p.Add(key, "unknown field")
	}
}

// creation is the creation u stands for: an explicit null is the same as
// an absent field there (the default applies).
func creation(u workspace.UpdateRequest) workspace.CreateRequest {
	req := workspace.CreateRequest{
		Description:         u.Description.Value,
		DefaultTextModel:    u.DefaultTextModel.Value,
		DefaultImageModel:   u.DefaultImageModel.Value,
		DefaultProviderSort: u.DefaultProviderSort.Value,
		IOLoggingAPIKeyIDs:  u.IOLoggingAPIKeyIDs.Value,
	}
	if o := u.Name; o.Set {
		req.Name = &o.Value
	}
	if o := u.Slug; o.Set {
		req.Slug = &o.Value
	}
	if o := u.IOLoggingSamplingRate; o.Set {
		req.IOLoggingSamplingRate = &o.Value
	}
	for _, f := range []struct {
		o   workspace.Optional[bool]
		dst **bool
	}{
		{u.IsDataDiscountLoggingEnabled, &req.IsDataDiscountLoggingEnabled},
		{u.IsObservabilityBroadcastEnabled, &req.IsObservabilityBroadcastEnabled},
		{u.IsObservabilityIOLoggingEnabled, &req.IsObservabilityIOLoggingEnabled},
	} {
		if f.o.Set {
			v := f.o.Value
			*f.dst = &v
		}
	}
	return req
}

// writeWorkspace answers with {"data": Workspace}. A replay is encoded from
// the recorded Workspace, which gives the bytes of the first answer.
func writeWorkspace(w http.ResponseWriter, status int, res workspace.Result) {
	if res.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	writeJSON(w, status, workspaceData{res.Workspace})
}

func (a *API) getWorkspace(w http.ResponseWriter, r *http.Request, caller *keys.APIKey) error {
	id, err := pathSegment(r, "id")
	if err != nil {
		return err
	}
	ws, err := a.workspaces.Get(r.Context(), caller.UserID, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, workspaceData{ws})
	return nil
}

func (a *API) listWorkspaces(w http.ResponseWriter, r *http.Request, caller *keys.APIKey) error {
	page, err := workspacePage(r.URL.Query())
	if err != nil {
		return err
	}
	list, err := a.workspaces.List(r.Context(), caller.UserID, page)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		Data       []workspace.Workspace `json:"data"`
		TotalCount int                   `json:"total_count"`
	}{list.Workspaces, list.Total})
	return nil
}

func (a *API) deleteWorkspace(w http.ResponseWriter, r *http.Request, caller *keys.APIKey) error {
	id, err := pathSegment(r, "id")
	if err != nil {
		return err
	}
	userID := caller.UserID
	if err := a.workspaces.Delete(r.Context(), userID, id); err != nil {
		return err
	}
	a.log.Info("workspace deleted", zap.String("workspace", id), zap.String("user_id", userID))
	writeBody(w, http.StatusOK, deletedBody)
	return nil
}

// deletedBody is the answer of a delete.
var deletedBody = []byte(`{"deleted":true}`)

// workspacePage reads the offset and limit of GET /workspaces: offset >= 0,
// default 0; limit 1 to workspace.MaxPageLimit, default
// workspace.DefaultPageLimit. Other parameters are ignored, as the
// resources' spec leaves them (resources.md names only these two).
func workspacePage(query url.Values) (workspace.Page, error) {
	p := workspace.Page{Offset: 0, Limit: workspace.DefaultPageLimit}
	err := readQuery(query, ignoreUnknown, map[string]paramReader{
		"offset": intParamSaying(&p.Offset, 0, math.MaxInt, "must be an integer >= 0"),
		"limit":  intParamSaying(&p.Limit, 1, workspace.MaxPageLimit, fmt.Sprintf("must be an integer from 1 to %d", workspace.MaxPageLimit)),
	})
	if err != nil {
		return workspace.Page{}, err
	}
	return p, nil
}
