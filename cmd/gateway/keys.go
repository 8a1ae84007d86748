package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aigateway/gateway/catalog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/aigateway/gateway/policy"
	"github.com/aigateway/gateway/workspace"
)

// keysCreate makes a key and prints its secret as the last line of stdout;
// the secret is shown this once and only its hash is stored.
func keysCreate(ctx context.Context, args []string, e env) error {
	fs, path := newFlags("keys create")
	name := fs.String("name", "", "a label for the key")
	user := fs.String("user", "", "the id of the user the key belongs to")
	management := fs.Bool("management", false, "make a management key (workspaces)")
	ws := fs.String("workspace", "", "workspace id or slug of a standard key (default: the user's default workspace)")
	models := fs.String("models", "", "comma-separated model ids the key may look up (default: all)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var problems []string
	if strings.TrimSpace(*name) == "" || len(*name) > 100 {
		problems = append(problems, "--name is required (1 to 100 characters)")
	}
	if !validUserID(*user) {
		problems = append(problems, "--user is required (1 to 128 characters of letters, digits, '-', '_', '.', '@')")
	}
	if *management && *ws != "" {
		problems = append(problems, "--workspace applies to standard keys only")
	}
	allow, err := parseModels(*models)
	if err != nil {
		problems = append(problems, err.Error())
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}

	cfg, err := loadConfig(*path, e.getenv)
	if err != nil {
		return err
	}
	log, flush := newLogger(cfg.Log, e.stderr)
	defer flush()
	st, err := openStore(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer st.Close()

	if allow != nil {
		// Allowlists hold canonical ids, so an alias or a variant named here
		// allows the model it resolves to, and a typo is refused now rather
		// than silently allowing nothing.
		src, err := openCatalog(cfg.Catalog.Path, log, prometheus.NewRegistry())
		if err != nil {
			return err
		}
		if allow, err = canonicalModels(src.Current(), allow); err != nil {
			return err
		}
	}
	if err := st.EnsureUser(ctx, *user); err != nil {
		return fmt.Errorf("record user: %w", err)
	}
	token, key, err := policy.NewKey()
	if err != nil {
		return err
	}
	key.UserID, key.Name, key.Models, key.CreatedAt = *user, *name, allow, time.Now().UTC()
	key.Role = policy.RoleStandard
	if *management {
		key.Role = policy.RoleManagement
	} else {
		svc := workspace.NewService(st, nil)
		var w workspace.Workspace
		if *ws == "" {
			w, err = svc.Default(ctx, *user)
		} else {
			w, err = svc.Get(ctx, *user, *ws)
		}
		if err != nil {
			return fmt.Errorf("workspace %q of user %q: %w", *ws, *user, err)
		}
		key.WorkspaceID = w.ID
	}
	if err := st.CreateKey(ctx, key); err != nil {
		return fmt.Errorf("store key: %w", err)
	}
	fmt.Fprintf(e.stdout, "key id: %s\nrole: %s\nuser: %s\n", key.ID, key.Role, key.UserID)
	if key.WorkspaceID != "" {
		fmt.Fprintf(e.stdout, "workspace: %s\n", key.WorkspaceID)
	}
	fmt.Fprintln(e.stdout, token)
	return nil
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

func validUserID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, c := range s {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.ContainsRune("-_.@", c)) {
			return false
		}
	}
	return true
}

// parseModels splits --models; empty means no allowlist (nil).
func parseModels(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []string
	for _, m := range strings.Split(s, ",") {
		m = strings.TrimSpace(m)
		if m == "" || !strings.Contains(m, "/") {
			return nil, fmt.Errorf("--models: %q is not a model id (author/slug)", m)
		}
		out = append(out, m)
	}
	return out, nil
}
