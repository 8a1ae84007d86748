package keys

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aigateway/gateway/internal/invalid"
	"github.com/aigateway/gateway/policy/keys/seal"
)

// operatorStore keeps keys in memory, in creation order, for the Operator.
type operatorStore struct {
	users    []string
	keys     []APIKey
	changes  []string // "disable id", "enable id", "remove id"
	listed   int      // ListKeys calls
	failList error
	put      []putKey
}

func (s *operatorStore) EnsureUser(_ context.Context, userID string) error {
	if !slices.Contains(s.users, userID) {
		s.users = append(s.users, userID)
	}
	return nil
}

func (s *operatorStore) CreateKey(_ context.Context, k APIKey) error {
	if !slices.Contains(s.users, k.UserID) {
		return fmt.Errorf("user %q not recorded", k.UserID)
	}
	s.keys = append(s.keys, k)
	return nil
}

func (s *operatorStore) KeyByID(_ context.Context, id string) (APIKey, error) {
	for _, k := range s.keys {
		if k.ID == id {
			return k, nil
		}
	}
	return APIKey{}, ErrKeyNotFound
}

func (s *operatorStore) ListKeys(_ context.Context, userID string, q ListQuery) ([]APIKey, error) {
	s.listed++
	if s.failList != nil {
		return nil, s.failList
	}
	var mine []APIKey
	for _, k := range s.keys {
		if k.UserID == userID && (q.IncludeDisabled || !k.Disabled) {
			mine = append(mine, k)
		}
	}
	if q.Offset >= len(mine) {
		return nil, nil
	}
	return mine[q.Offset:min(len(mine), q.Offset+q.Limit)], nil
}

func (s *operatorStore) SetKeyDisabled(_ context.Context, id string, disabled bool, _ time.Time) error {
	for i := range s.keys {
		if s.keys[i].ID == id {
			s.keys[i].Disabled = disabled
			s.changes = append(s.changes, map[bool]string{true: "disable ", false: "enable "}[disabled]+id)
			return nil
		}
	}
	return ErrKeyNotFound
}

func (s *operatorStore) PutProviderKey(_ context.Context, workspaceID, provider string, sealed []byte, label string) error {
	if workspaceID == unknownWorkspace {
		return errUnknownWorkspace
	}
	s.put = append(s.put, putKey{workspaceID, provider, sealed, label})
	return nil
}

type putKey struct {
	workspace, provider string
	sealed              []byte
	label               string
}

const unknownWorkspace = "00000000-0000-4000-8000-000000000000"

var errUnknownWorkspace = errors.New("no such workspace")

func testSealer() (*seal.Sealer, error) {
	return seal.NewSealer([]byte("a sealing key of thirty-two byte"))
}

func (s *operatorStore) RemoveKey(_ context.Context, id string, _ time.Time) error {
	for i := range s.keys {
		if s.keys[i].ID == id {
			s.keys = slices.Delete(s.keys, i, i+1)
			s.changes = append(s.changes, "remove "+id)
			return nil
		}
	}
	return ErrKeyNotFound
}

// defaultWorkspaces names each user's default workspace "default-<user>"
// and knows the slugs listed.
type defaultWorkspaces map[string]string

func (w defaultWorkspaces) WorkspaceID(_ context.Context, userID, ref string) (string, error) {
	if ref == "" {
		return "default-" + userID, nil
	}
	if id, ok := w[userID+"/"+ref]; ok {
		return id, nil
	}
	return "", ErrWorkspaceNotFound
}

// madeDefaults resolves workspaces as defaultWorkspaces does and records
// the users whose default workspace was asked for (made, in the real one).
type madeDefaults struct {
	defaultWorkspaces
	users []string
}

func (m *madeDefaults) WorkspaceID(ctx context.Context, userID, ref string) (string, error) {
	if ref == "" {
		m.users = append(m.users, userID)
	}
	return m.defaultWorkspaces.WorkspaceID(ctx, userID, ref)
}

// TestOperatorMakesTheDefaultWorkspace: a user's first key, of any role,
// comes with the user's default workspace, made before the key is stored;
// a key refused for its own workspace leaves no key behind.
func TestOperatorMakesTheDefaultWorkspace(t *testing.T) {
	for _, role := range []Role{RoleManagement, RoleService, RoleStandard} {
		st := &operatorStore{}
		ws := &madeDefaults{defaultWorkspaces: defaultWorkspaces{"carol/team": "ws-team"}}
		op := NewOperator(st, ws, testSealer)
		if _, _, err := op.Create(t.Context(), NewKeyRequest{Name: "first", User: "carol", Role: role}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ws.users, []string{"carol"}) {
			t.Errorf("%s key: defaults made for %v, want carol's", role, ws.users)
		}
	}
	st := &operatorStore{}
	ws := &madeDefaults{defaultWorkspaces: defaultWorkspaces{"carol/team": "ws-team"}}
	_, k, err := NewOperator(st, ws, testSealer).Create(t.Context(), NewKeyRequest{Name: "team", User: "carol", Role: RoleStandard, Workspace: "team"})
	if err != nil || k.WorkspaceID != "ws-team" || !slices.Equal(ws.users, []string{"carol"}) {
		t.Errorf("a first key in another workspace: %v, workspace %q, defaults made for %v; want ws-team and carol's default", err, k.WorkspaceID, ws.users)
	}
	if _, _, err := NewOperator(st, ws, testSealer).Create(t.Context(), NewKeyRequest{Name: "x", User: "dave", Role: RoleStandard, Workspace: "nope"}); !errors.Is(err, ErrWorkspaceNotFound) || len(st.keys) != 1 {
		t.Errorf("an unknown workspace: %v with %d keys stored, want ErrWorkspaceNotFound and none more", err, len(st.keys))
	}
}

func TestOperatorCreate(t *testing.T) {
	ctx := t.Context()
	st := &operatorStore{}
	op := NewOperator(st, defaultWorkspaces{"alice/research": "ws-research"}, testSealer)

	token, k, err := op.Create(ctx, NewKeyRequest{Name: "ci", User: "alice", Role: RoleStandard, Workspace: "research", Models: []string{"openai/gpt-4"}})
	if err != nil {
		t.Fatal(err)
	}
	if !k.Matches(token) || !strings.HasPrefix(token, KeyPrefix) {
		t.Errorf("the token %q does not open the key it returned", token)
	}
	if k.UserID != "alice" || k.CreatorUserID != "alice" || k.WorkspaceID != "ws-research" || k.Role != RoleStandard ||
		!slices.Equal(k.Models, []string{"openai/gpt-4"}) || k.CreatedAt.IsZero() || k.CreatedAt.Location() != time.UTC {
		t.Errorf("key = %+v", k)
	}
	if len(st.keys) != 1 || st.keys[0].ID != k.ID || !slices.Equal(st.users, []string{"alice"}) {
		t.Errorf("stored keys %v, users %v", st.keys, st.users)
	}

	_, k, err = op.Create(ctx, NewKeyRequest{Name: "default", User: "bob", Role: RoleStandard})
	if err != nil || k.WorkspaceID != "default-bob" {
		t.Errorf("a standard key without a workspace: %v, workspace %q; want the user's default", err, k.WorkspaceID)
	}
	_, k, err = op.Create(ctx, NewKeyRequest{Name: "admin", User: "bob", Role: RoleManagement})
	if err != nil || k.WorkspaceID != "" || k.Role != RoleManagement {
		t.Errorf("a management key: %v, %+v", err, k)
	}
	if _, _, err := op.Create(ctx, NewKeyRequest{Name: "x", User: "alice", Role: RoleStandard, Workspace: "nope"}); !errors.Is(err, ErrWorkspaceNotFound) {
		t.Errorf("an unknown workspace: %v, want ErrWorkspaceNotFound", err)
	}
	if len(st.keys) != 3 {
		t.Errorf("%d keys stored, want 3: a refused key is never stored", len(st.keys))
	}
}

func TestOperatorCreateRefusals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		req    NewKeyRequest
		fields []string
	}{
		{"no name", NewKeyRequest{User: "alice", Role: RoleStandard}, []string{"name"}},
		{"blank name", NewKeyRequest{Name: "  ", User: "alice", Role: RoleStandard}, []string{"name"}},
		{"long name", NewKeyRequest{Name: strings.Repeat("é", 101), User: "alice", Role: RoleStandard}, []string{"name"}},
		{"name with a control character", NewKeyRequest{Name: "a\tb", User: "alice", Role: RoleStandard}, []string{"name"}},
		{"name clearing the terminal", NewKeyRequest{Name: "\x1b[2J", User: "alice", Role: RoleStandard}, []string{"name"}},
		{"no user", NewKeyRequest{Name: "n", Role: RoleStandard}, []string{"user"}},
		{"user with a space", NewKeyRequest{Name: "n", User: "al ice", Role: RoleStandard}, []string{"user"}},
		{"unknown role", NewKeyRequest{Name: "n", User: "alice", Role: "root"}, []string{"role"}},
		{"workspace of a service key", NewKeyRequest{Name: "n", User: "alice", Role: RoleService, Workspace: "w"}, []string{"workspace"}},
		{"everything", NewKeyRequest{Role: RoleManagement, Workspace: "w"}, []string{"name", "user", "workspace"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &operatorStore{}
			_, _, err := NewOperator(st, defaultWorkspaces{}, testSealer).Create(t.Context(), tc.req)
			var got []string
			for _, f := range invalid.Fields(err) {
				got = append(got, f.Name)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.fields) {
				t.Errorf("fields at fault %v (%v), want %v", got, err, tc.fields)
			}
			if len(st.keys) != 0 || len(st.users) != 0 {
				t.Errorf("a refused request recorded %v, %v", st.users, st.keys)
			}
		})
	}
}

func TestValidUserID(t *testing.T) {
	for _, ok := range []string{"alice", "a", "a.b-c_d@example.com", strings.Repeat("x", 128)} {
		if !ValidUserID(ok) {
			t.Errorf("ValidUserID(%q) = false", ok)
		}
	}
	for _, bad := range []string{"", strings.Repeat("x", 129), "a b", "a/b", "é", "a\u202eb", "a\n"} {
		if ValidUserID(bad) {
			t.Errorf("ValidUserID(%q) = true", bad)
		}
	}
}

func TestOperatorKeysPages(t *testing.T) {
	ctx := t.Context()
	st := &operatorStore{}
	op := NewOperator(st, defaultWorkspaces{}, testSealer)
	for i := range PageSize + 3 {
		if _, _, err := op.Create(ctx, NewKeyRequest{Name: fmt.Sprint("k", i), User: "alice", Role: RoleStandard}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := op.Create(ctx, NewKeyRequest{Name: "other", User: "bob", Role: RoleStandard}); err != nil {
		t.Fatal(err)
	}
	if err := op.SetDisabled(ctx, st.keys[1].ID, true); err != nil {
		t.Fatal(err)
	}
	st.listed = 0
	var names []string
	for k, err := range op.Keys(ctx, "alice") {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, k.Name)
	}
	if len(names) != PageSize+3 || names[0] != "k0" || names[1] != "k1" || names[len(names)-1] != fmt.Sprint("k", PageSize+2) {
		t.Errorf("listed %d keys (%v ...), want all %d of alice's, the disabled one too, oldest first", len(names), names[:min(3, len(names))], PageSize+3)
	}
	if st.listed != 2 {
		t.Errorf("%d pages read, want 2", st.listed)
	}

	st.failList = errors.New("database down")
	for _, err := range op.Keys(ctx, "alice") {
		if !errors.Is(err, st.failList) {
			t.Errorf("a failing store yields %v", err)
		}
	}
	for _, err := range op.Keys(ctx, "no one") {
		if len(invalid.Fields(err)) != 1 {
			t.Errorf("an invalid user id yields %v, want a problem of the user", err)
		}
	}
}

func TestOperatorChanges(t *testing.T) {
	ctx := t.Context()
	st := &operatorStore{}
	op := NewOperator(st, defaultWorkspaces{}, testSealer)
	_, k, err := op.Create(ctx, NewKeyRequest{Name: "svc", User: "alice", Role: RoleService})
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []func() error{
		func() error { return op.SetDisabled(ctx, k.ID, true) },
		func() error { return op.SetDisabled(ctx, k.ID, false) },
		func() error { return op.Delete(ctx, k.ID) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"disable " + k.ID, "enable " + k.ID, "remove " + k.ID}
	if !slices.Equal(st.changes, want) {
		t.Errorf("changes %v, want %v", st.changes, want)
	}
	if err := op.Delete(ctx, k.ID); !errors.Is(err, ErrKeyNotFound) {
		t.Errorf("deleting a deleted key: %v, want ErrKeyNotFound", err)
	}
	for _, id := range []string{"", "xyz", "../../x", strings.Repeat("a", 17)} {
		if err := op.SetDisabled(ctx, id, true); !errors.Is(err, ErrKeyNotFound) {
			t.Errorf("SetDisabled(%q) = %v, want ErrKeyNotFound", id, err)
		}
		if err := op.Delete(ctx, id); !errors.Is(err, ErrKeyNotFound) {
			t.Errorf("Delete(%q) = %v, want ErrKeyNotFound", id, err)
		}
	}
	if len(st.changes) != 3 {
		t.Errorf("a malformed id reached the store: %v", st.changes)
	}
}

func TestOperatorSetProviderKey(t *testing.T) {
	ctx := t.Context()
	st := &operatorStore{}
	sealerAsked := 0
	op := NewOperator(st, defaultWorkspaces{}, func() (*seal.Sealer, error) { sealerAsked++; return testSealer() })
	const ws = "0F8FAD5B-D9CB-469F-A165-70867728950E"
	if err := op.SetProviderKey(ctx, ws, ProviderOpenAI, seal.NewSecret("sk-proj-abcdefghijklmnop")); err != nil {
		t.Fatal(err)
	}
	if len(st.put) != 1 {
		t.Fatalf("stored %d keys", len(st.put))
	}
	got := st.put[0]
	if got.workspace != strings.ToLower(ws) || got.provider != ProviderOpenAI || got.label != MaskSecret("sk-proj-abcdefghijklmnop") {
		t.Errorf("stored %+v", got)
	}
	if strings.Contains(string(got.sealed), "abcdefghijklmnop") {
		t.Error("the secret was stored in the clear")
	}
	sealer, _ := testSealer()
	if open, err := sealer.Open(strings.ToLower(ws), ProviderOpenAI, got.sealed); err != nil || open.Reveal() != "sk-proj-abcdefghijklmnop" {
		t.Errorf("the sealed key does not open for its workspace and provider: %v", err)
	}

	for _, tc := range []struct {
		workspace, provider, secret string
		fields                      []string
	}{
		{"not-a-uuid", ProviderOpenAI, "k", []string{"workspace"}},
		{ws, "mistral", "k", []string{"provider"}},
		{ws, ProviderAnthropic, "  ", []string{"key"}},
		{ws, ProviderAnthropic, "sk-a b", []string{"key"}},
		{ws, ProviderAnthropic, "sk-a\x01b", []string{"key"}},
		{ws, ProviderAnthropic, "sk-\xff\xfe", []string{"key"}},
		{ws, ProviderOpenAI, strings.Repeat("k", 4097), []string{"key"}},
		{"", "", "", []string{"key", "provider", "workspace"}},
	} {
		err := op.SetProviderKey(ctx, tc.workspace, tc.provider, seal.NewSecret(tc.secret))
		var fields []string
		for _, f := range invalid.Fields(err) {
			fields = append(fields, f.Name)
		}
		slices.Sort(fields)
		if !slices.Equal(fields, tc.fields) {
			t.Errorf("SetProviderKey(%q, %q): %v, want problems of %v", tc.workspace, tc.provider, err, tc.fields)
		}
	}
	if err := op.SetProviderKey(ctx, unknownWorkspace, ProviderOpenAI, seal.NewSecret("k")); !errors.Is(err, errUnknownWorkspace) {
		t.Errorf("an unknown workspace: %v", err)
	}
	if len(st.put) != 1 || sealerAsked != 2 {
		t.Errorf("%d keys stored, sealer asked %d times: refused arguments must reach neither", len(st.put), sealerAsked)
	}
}
