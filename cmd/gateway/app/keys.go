package app

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aigateway/gateway/catalog"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/workspace"
	"github.com/prometheus/client_golang/prometheus"
)

// KeyRequest describes a key to create.
type KeyRequest struct {
	Name string
	User string
	Role keys.Role
	// Workspace is the id or slug of a standard key's workspace; empty
	// means the user's default workspace (made on first need).
	Workspace string
	// Models restricts which models the key may look up; nil allows all.
	// Ids are resolved through the catalog (aliases, variants).
	Models []string
}

// CreateKey makes a key and returns its secret, which is shown this once:
// only its hash is stored.
func (rt *Runtime) CreateKey(ctx context.Context, req KeyRequest) (token string, key keys.APIKey, err error) {
	allow := req.Models
	if allow != nil {
		// Allowlists hold canonical ids, so an alias or a variant named here
		// allows the model it resolves to, and a typo is refused now rather
		// than silently allowing nothing.
		src, err := openCatalog(rt.Config.Catalog.Path, rt.Log, prometheus.NewRegistry())
		if err != nil {
			return "", key, err
		}
		if allow, err = canonicalModels(src.Current(), allow); err != nil {
			return "", key, err
		}
	}
	if err := rt.Store.EnsureUser(ctx, req.User); err != nil {
		return "", key, fmt.Errorf("record user: %w", err)
	}
	token, k, err := keys.NewKey()
	if err != nil {
		return "", key, err
	}
	k.UserID, k.CreatorUserID, k.Name, k.Models, k.CreatedAt, k.Role = req.User, req.User, req.Name, allow, time.Now().UTC(), req.Role
	if req.Role == keys.RoleStandard {
		svc := workspace.NewService(rt.Store, nil)
		var w workspace.Workspace
		if req.Workspace == "" {
			w, err = svc.Default(ctx, req.User)
		} else {
			w, err = svc.Get(ctx, req.User, req.Workspace)
		}
		if err != nil {
			return "", key, fmt.Errorf("workspace %q of user %q: %w", req.Workspace, req.User, err)
		}
		k.WorkspaceID = w.ID
	}
	if err := rt.Store.CreateKey(ctx, k); err != nil {
		return "", key, fmt.Errorf("store key: %w", err)
	}
	return token, k, nil
}

// canonicalModels resolves each id through the catalog to the concrete
// model (or the one variant) it names.
func canonicalModels(c *catalog.Catalog, ids []string) ([]string, error) {
	out := make([]string, 0, len(ids))
	var unknown []string
	for _, id := range ids {
		e, ok := c.LookupID(id)
		if !ok {
			unknown = append(unknown, id)
			continue
		}
		// A variant named on its own (gpt-4:free) allows just that variant;
		// anything else allows the concrete model with all its variants.
		canonical := e.BaseID
		if strings.Contains(e.ID, ":") {
			canonical = e.ID
		}
		if !slices.Contains(out, canonical) {
			out = append(out, canonical)
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("--models: not in the catalog: %s", strings.Join(unknown, ", "))
	}
	return out, nil
}
