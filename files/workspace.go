package files

import (
	"context"
	"errors"

	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/workspace"
	"github.com/google/uuid"
)

// Workspaces resolves the workspace a file request acts on.
type Workspaces interface {
	Get(ctx context.Context, userID, idOrSlug string) (workspace.Workspace, error)
	Default(ctx context.Context, userID string) (workspace.Workspace, error)
}

// resolveWorkspace finds the workspace key k acts on when the client asked
// for requestedID ("" for none). A standard key acts only in its own
// workspace: the one it is bound to, else its user's default. A management
// or service key acts in any workspace of its user, the default one unless
// asked otherwise. Another user's workspace, or one a standard key is not
// bound to, is refused exactly like a missing one, so ids cannot be probed.
func resolveWorkspace(ctx context.Context, ws Workspaces, k *keys.APIKey, requestedID string) (string, error) {
	var requested string
	if requestedID != "" {
		id, err := uuid.Parse(requestedID)
		if err != nil || len(requestedID) != 36 {
			return "", errInvalidWorkspaceID
		}
		requested = id.String()
	}
	switch k.Role {
	case keys.RoleStandard:
		own := k.WorkspaceID
		if own == "" {
			w, err := ws.Default(ctx, k.UserID)
			if err != nil {
				return "", err
			}
			own = w.ID
		}
		if requested != "" && requested != own {
			return "", ErrWorkspaceForbidden
		}
		return own, nil
	case keys.RoleManagement, keys.RoleService:
	default:
		return "", keys.ErrForbidden
	}
	if requested == "" {
		w, err := ws.Default(ctx, k.UserID)
		return w.ID, err
	}
	w, err := ws.Get(ctx, k.UserID, requested)
	if errors.Is(err, workspace.ErrNotFound) {
		return "", ErrWorkspaceForbidden
	}
	return w.ID, err
}
