package app

import (
	"context"
	"errors"

	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/workspace"
)

// keyWorkspaces resolves the workspace a key request names through the
// workspace service: "" is the user's default workspace (made on first
// need), anything else an id or slug of the user's.
type keyWorkspaces struct{ ws *workspace.Service }

func (k keyWorkspaces) WorkspaceID(ctx context.Context, userID, ref string) (string, error) {
	if ref == "" {
		w, err := k.ws.Default(ctx, userID)
		return w.ID, err
	}
	w, err := k.ws.Get(ctx, userID, ref)
	if errors.Is(err, workspace.ErrNotFound) {
		return "", keys.ErrWorkspaceNotFound
	}
	return w.ID, err
}
