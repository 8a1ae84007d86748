package keys

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aigateway/gateway/internal/money"
)

// oneUserKeys answers UserKey from a map; the Manager's other needs of
// the store are not wired.
type oneUserKeys struct {
	ManagedStore
	keys map[string]APIKey
}

func (s oneUserKeys) UserKey(_ context.Context, userID, id string) (APIKey, error) {
	if k, ok := s.keys[id]; ok && k.UserID == userID {
		return k, nil
	}
	return APIKey{}, ErrKeyNotFound
}

// TestEmptyUpdateKeepsTheRoleRule: PATCH with nothing to change answers as
// a change would, so a management or service key is the CLI's (403) even
// with an empty body, and a standard key is shown as it is.
func TestEmptyUpdateKeepsTheRoleRule(t *testing.T) {
	st := oneUserKeys{keys: map[string]APIKey{
		"00000000000000a1": {ID: "00000000000000a1", UserID: "u1", Role: RoleStandard},
		"00000000000000a2": {ID: "00000000000000a2", UserID: "u1", Role: RoleManagement},
		"00000000000000a3": {ID: "00000000000000a3", UserID: "u1", Role: RoleService},
	}}
	m := NewManager(st, nil, nil)
	ctx := context.Background()
	if k, err := m.Update(ctx, "u1", "00000000000000a1", UpdateRequest{}); err != nil || k.ID != "00000000000000a1" {
		t.Errorf("standard key: %v, %+v", err, k)
	}
	for _, id := range []string{"00000000000000a2", "00000000000000a3"} {
		if _, err := m.Update(ctx, "u1", id, UpdateRequest{}); !errors.Is(err, ErrManagedByCLI) {
			t.Errorf("key %s of role %s: %v, want ErrManagedByCLI", id, st.keys[id].Role, err)
		}
	}
	if _, err := m.Update(ctx, "u2", "00000000000000a2", UpdateRequest{}); !errors.Is(err, ErrKeyNotFound) {
		t.Errorf("another user's key: %v, want ErrKeyNotFound", err)
	}
}

// updatingKeys stores every update, or refuses it with err.
type updatingKeys struct {
	ManagedStore
	err error
}

func (s updatingKeys) UpdateKey(_ context.Context, _, id string, _ UpdateRequest, _ time.Time) (APIKey, error) {
	return APIKey{ID: id}, s.err
}

// The replica's spend view is told of a limit set or changed, once it is
// stored: not of other changes, nor of a refused one.
func TestUpdateTellsLimitChanges(t *testing.T) {
	micros := money.Micros(5)
	for _, tc := range []struct {
		name string
		u    UpdateRequest
		err  error
		told int
	}{
		{"limit", UpdateRequest{Limit: Optional[*money.Micros]{Set: true, Value: &micros}}, nil, 1},
		{"limit cleared", UpdateRequest{Limit: Optional[*money.Micros]{Set: true}}, nil, 1},
		{"reset", UpdateRequest{LimitReset: Optional[Reset]{Set: true, Value: ResetDaily}}, nil, 1},
		{"byok", UpdateRequest{IncludeBYOKInLimit: Optional[bool]{Set: true, Value: true}}, nil, 1},
		{"name only", UpdateRequest{Name: Optional[string]{Set: true, Value: "n"}}, nil, 0},
		{"refused", UpdateRequest{Limit: Optional[*money.Micros]{Set: true, Value: &micros}}, ErrKeyNotFound, 0},
	} {
		m := NewManager(updatingKeys{err: tc.err}, nil, nil)
		told := 0
		m.OnLimitsChanged(func(context.Context) { told++ })
		_, _ = m.Update(context.Background(), "u1", "00000000000000a1", tc.u)
		if told != tc.told {
			t.Errorf("%s: told %d times, want %d", tc.name, told, tc.told)
		}
	}
}
