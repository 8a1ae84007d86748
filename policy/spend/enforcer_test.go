package spend

import (
	"context"
	"errors"
	"testing"

	"github.com/aigateway/gateway/internal/outage"
	"github.com/aigateway/gateway/policy/keys"
)

// standings answers Standings with one key over its limit, or fails.
type standings struct {
	Store
	err error
}

func (s *standings) Standings(context.Context, Windows) ([]KeyStanding, []BudgetStanding, error) {
	if s.err != nil {
		return nil, nil, s.err
	}
	return []KeyStanding{{KeyID: "over", Limit: 1, Usage: Usage{Total: 2}}}, nil, nil
}

// TestEnforcerDecidesNothingBeforeItKnows: a replica whose first refresh
// has not succeeded is not ready and refuses every key but service keys
// with ErrNotReady (an outage: 503), where an empty view let keys over
// their limit spend; once a refresh succeeds it decides from the view.
func TestEnforcerDecidesNothingBeforeItKnows(t *testing.T) {
	ctx := context.Background()
	st := &standings{err: errors.New("usage_days locked")}
	e := &Enforcer{Store: st}
	over := &keys.APIKey{ID: "over", Role: keys.RoleStandard}
	fine := &keys.APIKey{ID: "fine", Role: keys.RoleManagement}
	service := &keys.APIKey{ID: "svc", Role: keys.RoleService}

	for _, k := range []*keys.APIKey{over, fine} {
		if err := e.Decide(k); !errors.Is(err, ErrNotReady) || !errors.Is(err, outage.ErrUnavailable) {
			t.Errorf("%s before any refresh: %v, want ErrNotReady, an outage", k.ID, err)
		}
	}
	if err := e.Decide(service); err != nil {
		t.Errorf("a service key before any refresh: %v, want nil (never refused for spend)", err)
	}
	if err := e.Refresh(ctx); err == nil {
		t.Fatal("a failing refresh succeeded")
	}
	if err := e.Ready(ctx); !errors.Is(err, ErrNotReady) {
		t.Errorf("ready after a failed refresh: %v", err)
	}

	st.err = nil
	if err := e.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.Ready(ctx); err != nil {
		t.Errorf("ready after a refresh: %v", err)
	}
	if err := e.Decide(over); !errors.Is(err, ErrKeyLimit) {
		t.Errorf("a key over its limit: %v, want ErrKeyLimit", err)
	}
	if err := e.Decide(fine); err != nil {
		t.Errorf("a key within its limit: %v", err)
	}

	// A later failure keeps the last view: still ready, still deciding.
	st.err = errors.New("database down")
	if err := e.Refresh(ctx); err == nil {
		t.Fatal("a failing refresh succeeded")
	}
	if err := e.Ready(ctx); err != nil || !errors.Is(e.Decide(over), ErrKeyLimit) {
		t.Errorf("after a failed refresh the last view is gone: ready %v", err)
	}
}
