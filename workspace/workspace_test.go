package workspace

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap"
)

func TestParseCreateRequest(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		fields []string // offending fields; none means valid
	}{
		{"minimal", `{"name":"A","slug":"a"}`, nil},
		{"all fields", `{"name":"A","slug":"a-1","description":"d","default_text_model":"x/y","default_image_model":"x/z",
			"default_provider_sort":"price","io_logging_api_key_ids":["k1"],"io_logging_sampling_rate":0.5,
			"is_data_discount_logging_enabled":false,"is_observability_broadcast_enabled":true,"is_observability_io_logging_enabled":true}`, nil},
		{"100 multi-byte characters", `{"name":"` + strings.Repeat("é", 100) + `","slug":"a"}`, nil},
		{"101 characters", `{"name":"` + strings.Repeat("é", 101) + `","slug":"a"}`, []string{"name"}},
		{"missing both", `{}`, []string{"name", "slug"}},
		{"look-alike slug", `{"name":"A","slug":"аbc"}`, []string{"slug"}},
		{"double hyphen", `{"name":"A","slug":"a--b"}`, []string{"slug"}},
		{"unknown and case-folded", `{"name":"A","slug":"a","Name":"B","extra":1}`, []string{"Name", "extra"}},
		{"duplicate key", `{"name":"A","slug":"a","slug":"b"}`, []string{"slug"}},
		{"quoted number", `{"name":"A","slug":"a","io_logging_sampling_rate":"0.5"}`, []string{"io_logging_sampling_rate"}},
		{"rate out of range", `{"name":"A","slug":"a","io_logging_sampling_rate":0}`, []string{"io_logging_sampling_rate"}},
		{"bool as string", `{"name":"A","slug":"a","is_data_discount_logging_enabled":"true"}`, []string{"is_data_discount_logging_enabled"}},
		{"lone surrogate", `{"name":"\ud800","slug":"a"}`, []string{"name"}},
		{"literal replacement char is fine", `{"name":"\ufffd","slug":"a"}`, nil},
		{"trailing data", `{"name":"A","slug":"a"} {}`, []string{"body"}},
		{"array body", `[]`, []string{"body"}},
		{"not JSON", `name=A`, []string{"body"}},
		{"invalid UTF-8", "{\"name\":\"\xff\",\"slug\":\"a\"}", []string{"body"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseCreateRequest([]byte(tt.body))
			if len(tt.fields) == 0 {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			var bad *InvalidError
			if !errors.As(err, &bad) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("want *InvalidError, got %v", err)
			}
			for _, f := range tt.fields {
				if _, ok := bad.Fields[f]; !ok {
					t.Errorf("field %q not named: %v", f, bad.Fields)
				}
			}
			if len(bad.Fields) != len(tt.fields) {
				t.Errorf("named %v, want exactly %v", bad.Fields, tt.fields)
			}
		})
	}
}

// memStore is an in-memory Store for the service's own logic.
type memStore struct {
	mu   sync.Mutex
	ws   []Workspace
	idem map[string]*Idempotency
}

func (m *memStore) CreateWorkspace(_ context.Context, w Workspace, idem *Idempotency) (*Idempotency, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if idem != nil {
		if prior, ok := m.idem[idem.UserID+"\x00"+idem.Key]; ok {
			return prior, nil
		}
	}
	for _, x := range m.ws {
		if x.CreatedBy == w.CreatedBy && x.Slug == w.Slug {
			return nil, ErrSlugTaken
		}
	}
	m.ws = append(m.ws, w)
	if idem != nil {
		if m.idem == nil {
			m.idem = map[string]*Idempotency{}
		}
		m.idem[idem.UserID+"\x00"+idem.Key] = idem
	}
	return nil, nil
}

func (m *memStore) find(match func(Workspace) bool) (Workspace, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, w := range m.ws {
		if match(w) {
			return w, nil
		}
	}
	return Workspace{}, ErrNotFound
}

func (m *memStore) WorkspaceByID(_ context.Context, user, id string) (Workspace, error) {
	return m.find(func(w Workspace) bool { return w.CreatedBy == user && w.ID == id })
}

func (m *memStore) WorkspaceBySlug(_ context.Context, user, slug string) (Workspace, error) {
	return m.find(func(w Workspace) bool { return w.CreatedBy == user && w.Slug == slug })
}

type knownModels map[string]bool

func (k knownModels) ModelExists(id string) bool { return k[id] }

func TestServiceCreateAndIdempotency(t *testing.T) {
	st := &memStore{}
	svc := NewService(st, knownModels{"x/y": true}, zap.NewNop())
	ctx := context.Background()
	req, err := svc.ParseCreate([]byte(`{"name":"A","slug":"a","default_text_model":"x/y"}`))
	if err != nil {
		t.Fatal(err)
	}
	first, err := svc.Create(ctx, "u1", req, "key-1")
	if err != nil || first.Status != 201 || first.Replayed {
		t.Fatalf("create = %+v, %v", first, err)
	}
	again, err := svc.Create(ctx, "u1", req, "key-1")
	if err != nil || !again.Replayed || string(again.Body) != string(first.Body) {
		t.Fatalf("retry = %+v, %v; want the same body replayed", again, err)
	}
	other, _ := svc.ParseCreate([]byte(`{"name":"B","slug":"b"}`))
	if _, err := svc.Create(ctx, "u1", other, "key-1"); !errors.Is(err, ErrIdempotencyMismatch) {
		t.Fatalf("same key, other body: %v", err)
	}
	if _, err := svc.ParseCreate([]byte(`{"name":"","slug":"c","default_image_model":"no/such"}`)); err == nil {
		t.Fatal("bad name and unknown model accepted")
	} else {
		var bad *InvalidError
		if !errors.As(err, &bad) || bad.Fields["name"] == "" || bad.Fields["default_image_model"] == "" {
			t.Fatalf("want name and default_image_model named together: %v", err)
		}
	}
}

func TestServiceGetAndDefault(t *testing.T) {
	st := &memStore{}
	svc := NewService(st, nil, zap.NewNop())
	ctx := context.Background()
	var wg sync.WaitGroup
	ids := make([]string, 8)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, err := svc.Default(ctx, "u1")
			if err != nil {
				t.Error(err)
			}
			ids[i] = w.ID
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("concurrent Default calls disagree: %v", ids)
		}
	}
	byID, err := svc.Get(ctx, "u1", ids[0])
	if err != nil || byID.Slug != DefaultSlug {
		t.Fatalf("Get by id = %+v, %v", byID, err)
	}
	if _, err := svc.Get(ctx, "u2", ids[0]); !errors.Is(err, ErrNotFound) {
		t.Fatalf("another user's workspace: %v, want ErrNotFound", err)
	}
	if _, err := svc.Get(ctx, "u1", "Not A Slug"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("malformed id: %v, want ErrNotFound", err)
	}
}
