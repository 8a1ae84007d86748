package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aigateway/gateway/catalog"
	"github.com/aigateway/gateway/internal/audit"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/workspace"
	"github.com/prometheus/client_golang/prometheus"
)

// Keys is the operator's side of key management, as the command line
// uses it: the same rules and the same change log as the HTTP routes.
func (rt *Runtime) Keys() *keys.Operator {
	return keys.NewOperator(rt.store, keyWorkspaces{workspace.NewService(rt.store, nil)}, rt.sealer)
}

// CreateKey makes a key and returns its secret, which is shown this once:
// only its hash is stored. Models named in req are resolved through the
// catalog first: allowlists hold canonical ids, so an alias or a variant
// named here allows the model it resolves to, and a typo is refused now
// rather than silently allowing nothing.
func (rt *Runtime) CreateKey(ctx context.Context, req keys.NewKeyRequest) (token string, key keys.APIKey, err error) {
	if req.Models != nil {
		src, err := openCatalog(rt.Config.Catalog.Path, rt.Log, prometheus.NewRegistry())
		if err != nil {
			return "", key, err
		}
		if req.Models, err = canonicalModels(src.Current(), req.Models); err != nil {
			return "", key, err
		}
	}
	token, key, err = rt.Keys().Create(ctx, req)
	if errors.Is(err, keys.ErrWorkspaceNotFound) {
		return "", key, fmt.Errorf("workspace %q of user %q: %w", req.Workspace, req.User, err)
	}
	return token, key, err
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

// Audit is the record of management actions, as the store keeps it.
func (rt *Runtime) Audit() audit.Store { return rt.store }
