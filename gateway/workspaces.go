package gateway

import (
	"context"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"net/url"

	"go.uber.org/zap"

	"github.com/aigateway/gateway/internal/invalid"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/workspace"
)

// WorkspaceService is what the workspace routes need.
type WorkspaceService interface {
	Create(ctx context.Context, userID string, body []byte, idempotencyKey string) (workspace.Result, error)
	Get(ctx context.Context, userID, idOrSlug string) (workspace.Workspace, error)
	List(ctx context.Context, userID string, page workspace.Page) (workspace.Listing, error)
	Update(ctx context.Context, userID, idOrSlug string, body []byte, idempotencyKey string) (workspace.Result, error)
	Delete(ctx context.Context, userID, idOrSlug string) error
}

// maxJSONBody caps JSON request bodies; a workspace is well under 10 KiB.
const maxJSONBody = 64 << 10

// maxIdempotencyKey bounds the Idempotency-Key header.
const maxIdempotencyKey = 255

// workspaceData is the {"data": Workspace} body of the workspace routes.
type workspaceData struct {
	Data workspace.Workspace `json:"data"`
}

func (a *API) createWorkspace(w http.ResponseWriter, r *http.Request, caller *keys.APIKey) error {
	if a.workspaces == nil {
		return errUnavailable
	}
	body, idemKey, err := readWorkspaceRequest(w, r)
	if err != nil {
		return err
	}
	userID := caller.UserID
	res, err := a.workspaces.Create(r.Context(), userID, body, idemKey)
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
	if a.workspaces == nil {
		return errUnavailable
	}
	id, err := pathSegment(r, "id")
	if err != nil {
		return err
	}
	body, idemKey, err := readWorkspaceRequest(w, r)
	if err != nil {
		return err
	}
	userID := caller.UserID
	res, err := a.workspaces.Update(r.Context(), userID, id, body, idemKey)
	if err != nil {
		return err
	}
	if !res.Replayed {
		a.log.Info("workspace updated", zap.String("workspace_id", res.Workspace.ID), zap.String("user_id", userID))
	}
	writeWorkspace(w, http.StatusOK, res)
	return nil
}

// readWorkspaceRequest reads a JSON body of at most maxJSONBody bytes and
// the Idempotency-Key header, checking the HTTP layer's part: the media
// type (absent is taken as JSON) and the key's form.
func readWorkspaceRequest(w http.ResponseWriter, r *http.Request) (body []byte, idempotencyKey string, err error) {
	return readJSONRequest(w, r, maxJSONBody)
}

// readJSONRequest is readWorkspaceRequest with a body limit of its own.
func readJSONRequest(w http.ResponseWriter, r *http.Request, limit int64) (body []byte, idempotencyKey string, err error) {
	if idempotencyKey, err = checkJSONRequest(r); err != nil {
		return nil, "", err
	}
	body, err = io.ReadAll(newBodyReader(w, r, limit))
	if err != nil {
		return nil, "", err
	}
	return body, idempotencyKey, nil
}

// checkJSONRequest checks the headers of a request with a JSON body and
// returns its Idempotency-Key.
func checkJSONRequest(r *http.Request) (idempotencyKey string, err error) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return "", badRequest(map[string]any{"content_type": "must be application/json"})
		}
	}
	idempotencyKey = r.Header.Get("Idempotency-Key")
	if len(idempotencyKey) > maxIdempotencyKey || !printableASCII(idempotencyKey) {
		return "", badRequest(map[string]any{"idempotency_key": "must be 1 to 255 printable ASCII characters"})
	}
	return idempotencyKey, nil
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
	if a.workspaces == nil {
		return errUnavailable
	}
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
	if a.workspaces == nil {
		return errUnavailable
	}
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
	if a.workspaces == nil {
		return errUnavailable
	}
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

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// workspacePage reads the offset and limit of GET /workspaces: offset >= 0,
// default 0; limit 1 to workspace.MaxPageLimit, default
// workspace.DefaultPageLimit. A parameter given twice, empty, not a decimal
// integer or out of range is named; other parameters are ignored.
func workspacePage(query url.Values) (workspace.Page, error) {
	p := workspace.Page{Offset: 0, Limit: workspace.DefaultPageLimit}
	var bad invalid.Problems
	read := func(name string, dst *int, lo, hi int, problem string) {
		vs, ok := query[name]
		if !ok {
			return
		}
		if len(vs) != 1 {
			bad.Add(name, "must be given once")
			return
		}
		n, ok := queryInt(vs[0], lo, hi)
		if !ok {
			bad.Add(name, problem)
			return
		}
		*dst = n
	}
	read("offset", &p.Offset, 0, math.MaxInt, "must be an integer >= 0")
	read("limit", &p.Limit, 1, workspace.MaxPageLimit, fmt.Sprintf("must be an integer from 1 to %d", workspace.MaxPageLimit))
	if err := bad.Err(); err != nil {
		return workspace.Page{}, err
	}
	return p, nil
}
