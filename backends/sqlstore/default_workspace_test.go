package sqlstore

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/workspace"
)

// TestDefaultWorkspaceContract: a user's default workspace exists from the
// user's first key and is listed from then on, on every database; a user
// whose keys came before that finds it listed too, made once however many
// lists ask at the same time.
func TestDefaultWorkspaceContract(t *testing.T) {
	t.Parallel()
	tests := []contractCase{
		{"FromFirstKey", testDefaultFromFirstKey},
		{"ListedForOldKeys", testDefaultListedForOldKeys},
	}
	runOnBothDatabases(t, tests)
}

// serviceWorkspaces resolves a key's workspace through the workspace
// service, as the wiring does: "" is the user's default.
type serviceWorkspaces struct{ svc *workspace.Service }

func (w serviceWorkspaces) WorkspaceID(ctx context.Context, userID, ref string) (string, error) {
	if ref == "" {
		d, err := w.svc.Default(ctx, userID)
		return d.ID, err
	}
	ws, err := w.svc.Get(ctx, userID, ref)
	if errors.Is(err, workspace.ErrNotFound) {
		return "", keys.ErrWorkspaceNotFound
	}
	return ws.ID, err
}

func testDefaultFromFirstKey(t *testing.T, b backend) {
	s := b.store(t)
	ctx := testContext(t)
	svc := workspace.NewService(s, nil)
	op := keys.NewOperator(s, serviceWorkspaces{svc}, nil)
	for _, role := range []keys.Role{keys.RoleManagement, keys.RoleService, keys.RoleStandard} {
		user := "first-" + string(role)
		if _, _, err := op.Create(ctx, keys.NewKeyRequest{Name: "first", User: user, Role: role}); err != nil {
			t.Fatal(err)
		}
		// In the store before anything reads it.
		stored, total, err := s.ListWorkspaces(ctx, user, 0, 10)
		if err != nil || total != 1 || len(stored) != 1 || stored[0].Slug != workspace.DefaultSlug {
			t.Fatalf("%s key: the user's workspaces = %+v (total %d), %v; want the default", role, stored, total, err)
		}
		listed, err := svc.List(ctx, user, workspace.Page{Limit: 50})
		if err != nil || listed.Total != 1 || listed.Workspaces[0].ID != stored[0].ID {
			t.Fatalf("%s key: List = %+v, %v; want the default %s", role, listed, err, stored[0].ID)
		}
		// A second key finds the same one.
		if _, k, err := op.Create(ctx, keys.NewKeyRequest{Name: "second", User: user, Role: keys.RoleStandard}); err != nil || k.WorkspaceID != stored[0].ID {
			t.Fatalf("%s: a second key acts in %q (%v), want %s", role, k.WorkspaceID, err, stored[0].ID)
		}
		if _, total, _ := s.ListWorkspaces(ctx, user, 0, 10); total != 1 {
			t.Errorf("%s: %d workspaces after a second key, want 1", role, total)
		}
	}
}

func testDefaultListedForOldKeys(t *testing.T, b backend) {
	s := b.store(t)
	ctx := testContext(t)
	// A management key stored as the operator stored it before: no
	// workspace made with it.
	mustUser(t, s, "old-user")
	_, k, err := keys.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	k.UserID, k.CreatorUserID, k.Name, k.Role, k.CreatedAt = "old-user", "old-user", "admin", keys.RoleManagement, time.Now().UTC()
	if err := s.CreateKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	team := newWorkspace("old-user", "team")
	team.CreatedAt = team.CreatedAt.Add(-time.Hour) // made before anyone listed
	if _, err := s.CreateWorkspace(ctx, team, nil); err != nil {
		t.Fatal(err)
	}

	svc := workspace.NewService(s, nil)
	lists := make([]workspace.Listing, 6)
	errs := make([]error, len(lists))
	var wg sync.WaitGroup
	for i := range lists {
		wg.Go(func() { lists[i], errs[i] = svc.List(ctx, "old-user", workspace.Page{Limit: 50}) })
	}
	wg.Wait()
	stored, total, err := s.ListWorkspaces(ctx, "old-user", 0, 10)
	if err != nil || total != 2 {
		t.Fatalf("stored workspaces = %+v (total %d), %v; want team and one default", stored, total, err)
	}
	for i, l := range lists {
		if errs[i] != nil || l.Total != 2 || len(l.Workspaces) != 2 || l.Workspaces[0].ID != team.ID || l.Workspaces[1].Slug != workspace.DefaultSlug {
			t.Fatalf("List = %+v, %v; want team, then the default", l, errs[i])
		}
	}
	def, err := svc.Get(ctx, "old-user", workspace.DefaultSlug)
	if err != nil || def.ID != stored[1].ID {
		t.Errorf("Get(default) = %+v, %v; want the listed %s", def, err, stored[1].ID)
	}
}
