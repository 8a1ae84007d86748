package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aigateway/gateway/policy/keys"
)

// uploadsProvider is a provider with an Uploads resource, in memory.
type uploadsProvider struct {
	fakeProvider
	mu        sync.Mutex
	uploads   map[string]int64 // id -> bytes received in parts
	cancelled []string
	expires   time.Time
	err       error // answered by every Uploads call
	cancelErr error
	sizeSkew  int64 // added to the size a completed file is answered with
}

var _ UploadProvider = (*uploadsProvider)(nil)

func (p *uploadsProvider) CreateUpload(_ context.Context, r ProviderUploadRequest) (ProviderUpload, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return ProviderUpload{}, p.err
	}
	id := fmt.Sprintf("upload_p%d", len(p.uploads)+1)
	if p.uploads == nil {
		p.uploads = map[string]int64{}
	}
	p.uploads[id] = 0
	return ProviderUpload{ID: id, ExpiresAt: p.expires}, nil
}

func (p *uploadsProvider) AddUploadPart(_ context.Context, id string, data io.Reader) (ProviderUploadPart, error) {
	n, err := io.Copy(io.Discard, data)
	if err != nil {
		return ProviderUploadPart{}, fmt.Errorf("fake provider: sending the part: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return ProviderUploadPart{}, p.err
	}
	p.uploads[id] += n
	return ProviderUploadPart{ID: "part_p", CreatedAt: fixedNow}, nil
}

func (p *uploadsProvider) CompleteUpload(_ context.Context, id string, _ []string, _ string) (ProviderUpload, error) {
	p.mu.Lock()
	if p.err != nil {
		p.mu.Unlock()
		return ProviderUpload{}, p.err
	}
	size := p.uploads[id]
	p.mu.Unlock()
	fileID, err := p.Upload(context.Background(), ProviderFile{Name: id, Body: strings.NewReader(strings.Repeat("x", int(size)))})
	if err != nil {
		return ProviderUpload{}, err
	}
	return ProviderUpload{ID: id, File: &ProviderFileInfo{ID: fileID, Size: size + p.sizeSkew}}, nil
}

func (p *uploadsProvider) CancelUpload(_ context.Context, id string) (ProviderUpload, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cancelled = append(p.cancelled, id)
	if p.cancelErr != nil {
		return ProviderUpload{}, p.cancelErr
	}
	return ProviderUpload{ID: id}, nil
}

type uploadsOpener struct{ p *uploadsProvider }

func (o uploadsOpener) Open(_, provider string, _ []byte) (Provider, error) {
	if provider != ProviderOpenAI {
		return nil, ErrUnknownProvider
	}
	return o.p, nil
}

// forwardedRow is an upload row of forwardStore.
type forwardedRow struct {
	rec     UploadRecord
	backend string
}

// forwardStore keeps upload rows in memory, with knobs to refuse.
type forwardStore struct {
	UploadStore
	mu                     sync.Mutex
	rows                   map[string]*forwardedRow
	createErr, completeErr error
	replay                 *UploadRecord // answered, not created, by the next creation
	completed              []Record
}

var _ ForwardedUploadStore = (*forwardStore)(nil)

func (s *forwardStore) CreateForwardedUpload(_ context.Context, u UploadRecord, provider string, _ int64, _ int, idem *UploadIdempotency) (UploadRecord, string, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.createErr != nil {
		return UploadRecord{}, "", false, s.createErr
	}
	if s.replay != nil {
		return *s.replay, idem.RequestHash, false, nil
	}
	s.rows[u.ID] = &forwardedRow{rec: u, backend: provider}
	return u, "", true, nil
}

func (s *forwardStore) row(ws, id string) (*forwardedRow, error) {
	r, ok := s.rows[id]
	if !ok || r.rec.WorkspaceID != ws {
		return nil, ErrUploadNotFound
	}
	return r, nil
}

func (s *forwardStore) UploadBackend(_ context.Context, ws, id string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.row(ws, id)
	if err != nil {
		return "", err
	}
	return r.backend, nil
}

func (s *forwardStore) Upload(_ context.Context, ws, id string) (UploadRecord, []UploadPart, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.row(ws, id)
	if err != nil {
		return UploadRecord{}, nil, err
	}
	return r.rec, nil, nil
}

func (s *forwardStore) CompleteUpload(_ context.Context, ws, id string, rec Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.completeErr != nil {
		return s.completeErr
	}
	r, err := s.row(ws, id)
	if err != nil {
		return err
	}
	r.rec.Status, r.rec.FileID = UploadCompleted, rec.ID
	s.completed = append(s.completed, rec)
	return nil
}

func (s *forwardStore) CancelUpload(_ context.Context, ws, id string) (UploadRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.row(ws, id)
	if err != nil {
		return UploadRecord{}, err
	}
	r.rec.Status = UploadCancelled
	return r.rec, nil
}

type forwardRig struct {
	u     *Resumable
	prov  *uploadsProvider
	store *forwardStore
	key   *keys.APIKey
}

func newForwardRig(t *testing.T) *forwardRig {
	t.Helper()
	files := newFakeStore()
	files.keys[aliceDefault+"/"+ProviderOpenAI] = []byte("sk-alice")
	r := &forwardRig{
		prov:  &uploadsProvider{},
		store: &forwardStore{rows: map[string]*forwardedRow{}},
		key:   &keys.APIKey{ID: "key-alice", UserID: "alice", Role: keys.RoleStandard},
	}
	s := NewService(Config{MaxFileBytes: maxFile, WorkspaceQuota: quota}, Deps{
		Store: files, Keys: files, Opener: uploadsOpener{r.prov}, Workspaces: aliceAndBob(),
	})
	s.now = func() time.Time { return fixedNow }
	r.u = NewResumable(ResumableConfig{TTL: time.Hour}, s, r.store)
	return r
}

func (r *forwardRig) create(t *testing.T) (UploadRecord, error) {
	t.Helper()
	return r.u.Create(t.Context(), CreateUpload{Key: r.key, Bytes: 10, Filename: "a.txt", MimeType: "text/plain", Provider: ProviderOpenAI,
		Idempotency: &UploadIdempotency{UserID: "alice", Key: "k", RequestHash: "h"}})
}

func TestForwardedUploadLifecycle(t *testing.T) {
	r := newForwardRig(t)
	ctx := t.Context()
	// The provider keeps it for less than the gateway's TTL: the row, and
	// its reservation, last no longer.
	r.prov.expires = fixedNow.Add(30 * time.Minute)
	rec, err := r.create(t)
	if err != nil {
		t.Fatal(err)
	}
	row := r.store.rows[rec.ID]
	if row == nil || row.backend != ProviderOpenAI || rec.ID != "upload_p1" || !rec.ExpiresAt.Equal(r.prov.expires) || rec.WorkspaceID != aliceDefault {
		t.Fatalf("created %+v, row %+v", rec, row)
	}
	ref := UploadRef{Key: r.key, ID: rec.ID, Provider: ProviderOpenAI}
	part, err := r.u.AddPart(ctx, ref, strings.NewReader("0123456789"), -1, func() error { return nil })
	if err != nil || part.Bytes != 10 || part.UploadID != rec.ID {
		t.Fatalf("part = %+v, %v", part, err)
	}
	// Past the upload's bytes: refused while streaming.
	if _, err := r.u.AddPart(ctx, ref, strings.NewReader("0123456789x"), -1, func() error { return nil }); !errors.Is(err, ErrPartsExceedUpload) {
		t.Fatalf("a part past the upload = %v", err)
	}
	st, err := r.u.Complete(ctx, CompleteUpload{Ref: ref, PartIDs: []string{part.ID}})
	if err != nil {
		t.Fatal(err)
	}
	f := r.store.completed[0]
	if st.File == nil || f.Backend != ProviderOpenAI || f.ObjectKey != f.ID || f.ID != st.Upload.FileID || f.Size != 10 || f.Purpose != DefaultPurpose || f.WorkspaceID != aliceDefault {
		t.Fatalf("file record %+v, state %+v", f, st)
	}
	// Completed: nothing more is sent to the provider.
	if _, err := r.u.Cancel(ctx, ref); !errors.Is(err, ErrUploadNotPending) {
		t.Fatalf("cancel after completion = %v", err)
	}
	if len(r.prov.cancelled) != 0 {
		t.Fatalf("cancelled at the provider: %v", r.prov.cancelled)
	}
}

func TestForwardedUploadUndoesWhatIsNotKept(t *testing.T) {
	t.Run("row refused", func(t *testing.T) {
		r := newForwardRig(t)
		r.store.createErr = ErrTooManyPending
		if _, err := r.create(t); !errors.Is(err, ErrTooManyPending) {
			t.Fatalf("err = %v", err)
		}
		if len(r.prov.cancelled) != 1 || r.prov.cancelled[0] != "upload_p1" {
			t.Fatalf("provider's upload not cancelled: %v", r.prov.cancelled)
		}
	})
	t.Run("idempotent replay", func(t *testing.T) {
		r := newForwardRig(t)
		first := UploadRecord{ID: "upload_first", Status: UploadPending}
		r.store.replay = &first
		got, err := r.create(t)
		if err != nil || got.ID != "upload_first" {
			t.Fatalf("replay = %+v, %v", got, err)
		}
		if len(r.prov.cancelled) != 1 || r.prov.cancelled[0] != "upload_p1" {
			t.Fatalf("the replay's new provider upload not cancelled: %v", r.prov.cancelled)
		}
	})
	t.Run("completion not recorded", func(t *testing.T) {
		r := newForwardRig(t)
		rec, err := r.create(t)
		if err != nil {
			t.Fatal(err)
		}
		ref := UploadRef{Key: r.key, ID: rec.ID, Provider: ProviderOpenAI}
		if _, err := r.u.AddPart(t.Context(), ref, strings.NewReader("0123456789"), -1, func() error { return nil }); err != nil {
			t.Fatal(err)
		}
		r.store.completeErr = ErrReservationNotFound
		if _, err := r.u.Complete(t.Context(), CompleteUpload{Ref: ref, PartIDs: []string{"part_p"}}); !errors.Is(err, ErrReservationNotFound) {
			t.Fatalf("err = %v", err)
		}
		if len(r.prov.files) != 0 || len(r.prov.deleted) != 1 {
			t.Fatalf("the provider keeps %v (deleted %v)", r.prov.files, r.prov.deleted)
		}
	})
	t.Run("file of other bytes than declared", func(t *testing.T) {
		for _, skew := range []int64{-10, -15, 1} {
			r := newForwardRig(t)
			rec, err := r.create(t)
			if err != nil {
				t.Fatal(err)
			}
			ref := UploadRef{Key: r.key, ID: rec.ID, Provider: ProviderOpenAI}
			if _, err := r.u.AddPart(t.Context(), ref, strings.NewReader("0123456789"), -1, func() error { return nil }); err != nil {
				t.Fatal(err)
			}
			r.prov.sizeSkew = skew
			if _, err := r.u.Complete(t.Context(), CompleteUpload{Ref: ref, PartIDs: []string{"part_p"}}); !errors.Is(err, ErrProvider) {
				t.Fatalf("skew %d: err = %v, want ErrProvider (502)", skew, err)
			}
			if len(r.prov.files) != 0 || len(r.prov.deleted) != 1 || r.store.rows[rec.ID].rec.Status != UploadPending {
				t.Fatalf("skew %d: the provider keeps %v (deleted %v), upload %s", skew, r.prov.files, r.prov.deleted, r.store.rows[rec.ID].rec.Status)
			}
		}
	})
	t.Run("cancel refused by the provider", func(t *testing.T) {
		r := newForwardRig(t)
		rec, err := r.create(t)
		if err != nil {
			t.Fatal(err)
		}
		r.prov.cancelErr = fmt.Errorf("%w: throttled", &RateLimitedError{Provider: ProviderOpenAI})
		if _, err := r.u.Cancel(t.Context(), UploadRef{Key: r.key, ID: rec.ID, Provider: ProviderOpenAI}); !errors.Is(err, ErrProviderRateLimited) {
			t.Fatalf("err = %v", err)
		}
		if st := r.store.rows[rec.ID].rec.Status; st != UploadPending {
			t.Fatalf("status %s, want pending, so the cancel can be sent again", st)
		}
	})
}

func TestForwardedUploadRefusals(t *testing.T) {
	r := newForwardRig(t)
	ctx := t.Context()
	rec, err := r.create(t)
	if err != nil {
		t.Fatal(err)
	}
	r.store.rows["upload_native"] = &forwardedRow{rec: UploadRecord{ID: "upload_native", WorkspaceID: aliceDefault, Status: UploadPending, Bytes: 10}}
	namesProvider := func(err error) bool {
		var pe *ParamError
		return errors.As(err, &pe) && pe.Param == "provider"
	}
	none := func() error { return nil }
	for name, call := range map[string]func() error{
		"anthropic create": func() error {
			_, err := r.u.Create(ctx, CreateUpload{Key: r.key, Bytes: 1, Filename: "a.txt", MimeType: "text/plain", Provider: ProviderAnthropic})
			return err
		},
		"anthropic part": func() error {
			_, err := r.u.AddPart(ctx, UploadRef{Key: r.key, ID: rec.ID, Provider: ProviderAnthropic}, strings.NewReader("x"), -1, none)
			return err
		},
		"forwarded upload without provider": func() error {
			_, err := r.u.AddPart(ctx, UploadRef{Key: r.key, ID: rec.ID}, strings.NewReader("x"), -1, none)
			return err
		},
		"forwarded upload completed without provider": func() error {
			_, err := r.u.Complete(ctx, CompleteUpload{Ref: UploadRef{Key: r.key, ID: rec.ID}, PartIDs: []string{"part_p"}})
			return err
		},
		"native upload with provider": func() error {
			_, err := r.u.Cancel(ctx, UploadRef{Key: r.key, ID: "upload_native", Provider: ProviderOpenAI})
			return err
		},
		"get with provider": func() error {
			_, err := r.u.Get(ctx, UploadRef{Key: r.key, ID: rec.ID, Provider: ProviderOpenAI})
			return err
		},
	} {
		if err := call(); !namesProvider(err) {
			t.Errorf("%s: %v, want a ParamError naming provider", name, err)
		}
	}
	// Bob's key: the upload is not found, as an unknown one.
	bob := &keys.APIKey{ID: "key-bob", UserID: "bob", Role: keys.RoleStandard}
	if _, err := r.u.AddPart(ctx, UploadRef{Key: bob, ID: rec.ID, Provider: ProviderOpenAI}, strings.NewReader("x"), -1, none); !errors.Is(err, ErrUploadNotFound) {
		t.Errorf("bob's part: %v", err)
	}
	// A service key reads only.
	svc := &keys.APIKey{ID: "key-svc", UserID: "alice", Role: keys.RoleService}
	if _, err := r.u.Create(ctx, CreateUpload{Key: svc, WorkspaceID: aliceDefault, Bytes: 1, Filename: "a.txt", MimeType: "text/plain", Provider: ProviderOpenAI}); !errors.Is(err, keys.ErrReadOnlyKey) {
		t.Errorf("service key: %v", err)
	}
	if _, err := r.u.Create(ctx, CreateUpload{Key: r.key, WorkspaceID: bobDefault, Bytes: 1, Filename: "a.txt", MimeType: "text/plain", Provider: ProviderOpenAI}); !errors.Is(err, ErrWorkspaceForbidden) {
		t.Errorf("bob's workspace: %v", err)
	}
	if got := r.prov.uploads["upload_p1"]; got != 0 || len(r.prov.uploads) != 1 {
		t.Errorf("refused calls reached the provider: %v", r.prov.uploads)
	}
}
