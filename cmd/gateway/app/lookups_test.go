package app

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/workspace"
)

// recordingStore notes each write it is asked for; its writes fail when
// err is set (a failed commit may still have landed).
type recordingStore struct {
	keys.ProviderKeyStore
	workspace.Store
	events *[]string
	err    error
}

func (s recordingStore) note(e string) error { *s.events = append(*s.events, e); return s.err }

func (s recordingStore) CreateProviderKey(context.Context, keys.ProviderKey) error {
	return s.note("create")
}

func (s recordingStore) UpdateProviderKey(context.Context, string, string, keys.ProviderKeyFields, *keys.SealedSecret, time.Time) (keys.ProviderKey, error) {
	return keys.ProviderKey{}, s.note("update")
}

func (s recordingStore) DeleteProviderKey(context.Context, string, string) error {
	return s.note("delete")
}

func (s recordingStore) DeleteWorkspace(context.Context, string, workspace.Ref) error {
	return s.note("delete workspace")
}

// Every change of a provider key and every workspace deletion made through
// this replica is followed, once the store has answered (and whatever it
// answered), by forgetting what the file routes remember.
func TestChangesForgetLookups(t *testing.T) {
	ctx := context.Background()
	for _, fail := range []bool{false, true} {
		var events []string
		st := recordingStore{events: &events}
		if fail {
			st.err = errors.New("commit outcome unknown")
		}
		forget := func() { events = append(events, "forget") }
		pk := providerKeyChanges{ProviderKeyStore: st, forget: forget}
		ws := workspaceDeletions{Store: st, forget: forget}
		_ = pk.CreateProviderKey(ctx, keys.ProviderKey{})
		_, _ = pk.UpdateProviderKey(ctx, "u", "id", keys.ProviderKeyFields{}, nil, time.Now())
		_ = pk.DeleteProviderKey(ctx, "u", "id")
		_ = ws.DeleteWorkspace(ctx, "u", workspace.Ref{})
		want := []string{"create", "forget", "update", "forget", "delete", "forget", "delete workspace", "forget"}
		if !slices.Equal(events, want) {
			t.Errorf("store failing %v: %v, want %v", fail, events, want)
		}
	}
}
