package gateway

import (
	"context"
	"io"
	"mime"
	"net/http"

	"github.com/aigateway/gateway/workspace"
)

// WorkspaceService is what the workspace routes need.
type WorkspaceService interface {
	ParseCreate(body []byte) (workspace.CreateRequest, error)
	Create(ctx context.Context, userID string, req workspace.CreateRequest, idempotencyKey string) (workspace.Created, error)
	Get(ctx context.Context, userID, idOrSlug string) (workspace.Workspace, error)
}

// maxJSONBody caps JSON request bodies; a workspace is well under 10 KiB.
const maxJSONBody = 64 << 10

// maxIdempotencyKey bounds the Idempotency-Key header.
const maxIdempotencyKey = 255

func (a *API) createWorkspace(w http.ResponseWriter, r *http.Request) error {
	if a.workspaces == nil {
		return errUnavailable
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			return badRequest(map[string]any{"content_type": "must be application/json"})
		}
	}
	idemKey := r.Header.Get("Idempotency-Key")
	if len(idemKey) > maxIdempotencyKey || !printableASCII(idemKey) {
		return badRequest(map[string]any{"idempotency_key": "must be 1 to 255 printable ASCII characters"})
	}
	body, err := io.ReadAll(newBodyReader(w, r, maxJSONBody))
	if err != nil {
		return err
	}
	req, err := a.workspaces.ParseCreate(body)
	if err != nil {
		return err
	}
	created, err := a.workspaces.Create(r.Context(), keyFrom(r.Context()).UserID, req, idemKey)
	if err != nil {
		return err
	}
	if created.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	writeBody(w, created.Status, created.Body)
	return nil
}

func (a *API) getWorkspace(w http.ResponseWriter, r *http.Request) error {
	if a.workspaces == nil {
		return errUnavailable
	}
	id, err := pathSegment(r, "id")
	if err != nil {
		return err
	}
	ws, err := a.workspaces.Get(r.Context(), keyFrom(r.Context()).UserID, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		Data workspace.Workspace `json:"data"`
	}{ws})
	return nil
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
