package files

import (
	"errors"
	"testing"

	"github.com/aigateway/gateway/policy/keys"
)

// The roles resolveWorkspace knows beyond what uploads exercise (see
// TestResolveWorkspace): a service key reads any workspace of its user, and
// a key of a role it does not know is refused rather than treated as one.
func TestResolveWorkspaceRoles(t *testing.T) {
	ws := aliceAndBob()
	service := &keys.APIKey{ID: "s", UserID: "alice", Role: keys.RoleService}
	unknown := &keys.APIKey{ID: "u", UserID: "alice", Role: keys.Role("auditor")}
	tests := []struct {
		name    string
		key     *keys.APIKey
		ws      string
		want    string
		wantErr error
	}{
		{"service key: the user's default", service, "", aliceDefault, nil},
		{"service key: any workspace of its user", service, aliceOther, aliceOther, nil},
		{"service key: another user's workspace", service, bobDefault, "", ErrWorkspaceForbidden},
		{"unknown role", unknown, "", "", keys.ErrForbidden},
		{"unknown role, a workspace of its user", unknown, aliceOther, "", keys.ErrForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := resolveWorkspace(t.Context(), ws, tt.key, tt.ws)
			if !errors.Is(err, tt.wantErr) || got != tt.want {
				t.Errorf("resolveWorkspace = %q, %v; want %q, %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
