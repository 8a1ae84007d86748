package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aigateway/gateway/files/blob"
	"github.com/aigateway/gateway/files/sniff"
	"github.com/aigateway/gateway/internal/outage"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/workspace"
)

const (
	aliceDefault = "0b5d3c1e-0000-4000-8000-00000000000a"
	aliceOther   = "0b5d3c1e-0000-4000-8000-00000000000b"
	bobDefault   = "0b5d3c1e-0000-4000-8000-00000000000c"
	maxFile      = 1 << 10
	quota        = 1 << 20
)

var (
	aliceKey  = &keys.APIKey{ID: "key-alice", UserID: "alice", Role: keys.RoleStandard, WorkspaceID: aliceDefault}
	aliceMgmt = &keys.APIKey{ID: "key-alice-mgmt", UserID: "alice", Role: keys.RoleManagement}
	fixedNow  = time.Date(2026, 3, 1, 12, 30, 45, 123456789, time.FixedZone("X", 3600))
	hello     = "hello, world\n"
)

// rig is a Service wired to fakes, with everything it touched in view.
type rig struct {
	s         *Service
	store     *fakeStore
	bucket    *fakeBucket
	openai    *fakeProvider
	opener    *fakeOpener
	admission *fakeAdmission
	ws        *fakeWorkspaces
	logs      *logRecorder
}

func newRig(t *testing.T) *rig {
	t.Helper()
	logs := &logRecorder{}
	r := &rig{
		store:     newFakeStore(),
		bucket:    newFakeBucket(),
		openai:    &fakeProvider{},
		admission: &fakeAdmission{},
		ws:        aliceAndBob(),
		logs:      logs,
	}
	r.opener = &fakeOpener{providers: map[string]*fakeProvider{ProviderOpenAI: r.openai}}
	r.store.keys[aliceDefault+"/"+ProviderOpenAI] = []byte("sk-alice")
	r.s = NewService(Config{MaxFileBytes: maxFile, WorkspaceQuota: quota, Backend: "fs"}, Deps{
		Store: r.store, Keys: r.store, Bucket: r.bucket, Opener: r.opener,
		Workspaces: r.ws, Admission: r.admission, Log: slog.New(logs),
	})
	r.s.now = func() time.Time { return fixedNow }
	return r
}

// upload runs a whole upload the way the edge does, with Abort deferred.
func (r *rig) upload(ctx context.Context, p Params, filename string, body io.Reader) (Record, error) {
	up, err := r.s.Begin(ctx, p)
	if err != nil {
		return Record{}, err
	}
	defer up.Abort(ctx)
	if err := up.Write(ctx, filename, body); err != nil {
		return Record{}, err
	}
	return up.Commit(ctx, "")
}

// assertNothingHeld checks that a failed upload left no bytes, no record and
// no reservation, and settled the shared limits exactly once with 0.
func (r *rig) assertNothingHeld(t *testing.T) {
	t.Helper()
	if n := r.bucket.count(); n != 0 {
		t.Errorf("bucket holds %d objects after a failed upload", n)
	}
	if len(r.openai.files) != 0 {
		t.Errorf("provider holds %v after a failed upload", r.openai.files)
	}
	r.assertNothingReserved(t)
}

// assertNothingReserved fails t unless no record, reservation or
// admission is left, whatever the bytes.
func (r *rig) assertNothingReserved(t *testing.T) {
	t.Helper()
	if len(r.store.records) != 0 {
		t.Errorf("records %v after a failed upload", r.store.records)
	}
	if len(r.store.reserved) != 0 {
		t.Errorf("reservations %v still held", r.store.reserved)
	}
	if got := r.admission.releases(); len(r.admission.admitted) > 0 && !slices.Equal(got, []int64{0}) {
		t.Errorf("admission released %v, want exactly [0]", got)
	}
	r.s.Wait() // returns at once: nothing is in flight
}

func TestUploadToBucket(t *testing.T) {
	r := newRig(t)
	rec, err := r.upload(t.Context(), Params{Key: aliceKey, Declared: 300}, "notes/today.txt", strings.NewReader(hello))
	if err != nil {
		t.Fatal(err)
	}
	want := Record{
		ID: rec.ID, WorkspaceID: aliceDefault, KeyID: "key-alice", Filename: "notes/today.txt",
		MimeType: sniff.MimeText, Size: int64(len(hello)), Backend: "fs",
		ObjectKey: ObjectKey(aliceDefault, rec.ID), Purpose: DefaultPurpose, CreatedAt: fixedNow.UTC().Truncate(time.Microsecond),
	}
	if rec != want {
		t.Fatalf("record\n got %+v\nwant %+v", rec, want)
	}
	if !strings.HasPrefix(rec.ID, "file-") || len(rec.ID) != len("file-")+24 {
		t.Errorf("id %q is not file- and 24 characters", rec.ID)
	}
	if got := string(r.bucket.objects[rec.ObjectKey]); got != hello {
		t.Errorf("bucket holds %q, want %q", got, hello)
	}
	if got := r.bucket.types[rec.ObjectKey]; got != sniff.MimeText {
		t.Errorf("stored content type %q", got)
	}
	if !slices.Equal(r.store.records, []Record{rec}) || len(r.store.reserved) != 0 || len(r.store.released) != 0 {
		t.Errorf("store: records %v, reserved %v, released %v; want the record, the reservation settled by Commit",
			r.store.records, r.store.reserved, r.store.released)
	}
	if want := []admitted{{"key-alice", aliceDefault, 300}}; !slices.Equal(r.admission.admitted, want) {
		t.Errorf("admitted %v, want %v", r.admission.admitted, want)
	}
	if got := r.admission.releases(); !slices.Equal(got, []int64{int64(len(hello))}) {
		t.Errorf("admission released %v, want [%d]", got, len(hello))
	}
	if n := r.logs.withMessage("file stored"); n != 1 {
		t.Errorf("%d 'file stored' log lines, want 1", n)
	}
	r.s.Wait()
}

func TestUploadReservesTheDeclaredSize(t *testing.T) {
	tests := []struct {
		name     string
		declared int64
		want     int64
	}{
		{"declared", 300, 300},
		{"unknown", -1, maxFile},
		{"larger than a file may be", maxFile * 10, maxFile},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t)
			up, err := r.s.Begin(t.Context(), Params{Key: aliceKey, Declared: tt.declared})
			if err != nil {
				t.Fatal(err)
			}
			held := r.store.reserved
			if len(held) != 1 {
				t.Fatalf("reservations %v, want one", held)
			}
			for _, res := range held {
				if res.Bytes != tt.want || res.WorkspaceID != aliceDefault {
					t.Errorf("reserved %+v, want %d bytes of %s", res, tt.want, aliceDefault)
				}
			}
			if got := r.admission.admitted[0].declared; got != tt.want {
				t.Errorf("admitted %d bytes, want %d", got, tt.want)
			}
			up.Abort(t.Context())
			r.assertNothingHeld(t)
			if len(r.store.released) != 1 {
				t.Errorf("released %v, want the one reservation", r.store.released)
			}
		})
	}
}

func TestUploadToProvider(t *testing.T) {
	r := newRig(t)
	rec, err := r.upload(t.Context(), Params{Key: aliceKey, Provider: ProviderOpenAI, Declared: -1}, "a.txt", strings.NewReader(hello))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Backend != ProviderOpenAI || rec.ID != "file-provider-1" || rec.ObjectKey != rec.ID || rec.Size != int64(len(hello)) {
		t.Fatalf("record %+v: want the provider's id, backend openai", rec)
	}
	if want := []string{aliceDefault + "/openai/sk-alice"}; !slices.Equal(r.opener.opened, want) {
		t.Errorf("opened %v, want %v", r.opener.opened, want)
	}
	if want := []ProviderFile{{Name: "a.txt", ContentType: sniff.MimeText}}; !slices.Equal(r.openai.sent, want) {
		t.Errorf("sent %+v, want %+v", r.openai.sent, want)
	}
	if got := string(r.openai.files[rec.ID]); got != hello {
		t.Errorf("provider holds %q", got)
	}
	if r.bucket.count() != 0 {
		t.Error("a provider upload wrote to the bucket")
	}
	if len(r.store.records) != 1 || len(r.store.reserved) != 0 {
		t.Errorf("store: records %v, reserved %v; provider files count against the quota too", r.store.records, r.store.reserved)
	}
}

func TestResolveWorkspace(t *testing.T) {
	bobMgmt := &keys.APIKey{ID: "k", UserID: "bob", Role: keys.RoleManagement}
	aliceDefaultKey := &keys.APIKey{ID: "k", UserID: "alice", Role: keys.RoleStandard}
	tests := []struct {
		name    string
		key     *keys.APIKey
		ws      string
		want    string
		wantErr error
	}{
		{"standard key: its own workspace", aliceKey, "", aliceDefault, nil},
		{"standard key: its own workspace named", aliceKey, aliceDefault, aliceDefault, nil},
		{"standard key: upper-case id is the same workspace", aliceKey, strings.ToUpper(aliceDefault), aliceDefault, nil},
		{"standard key: another workspace of its user", aliceKey, aliceOther, "", ErrWorkspaceForbidden},
		{"standard key: another user's workspace", aliceKey, bobDefault, "", ErrWorkspaceForbidden},
		{"standard key without a workspace: the user's default", aliceDefaultKey, "", aliceDefault, nil},
		{"standard key without a workspace: another", aliceDefaultKey, aliceOther, "", ErrWorkspaceForbidden},
		{"management key: the user's default", aliceMgmt, "", aliceDefault, nil},
		{"management key: any workspace of its user", aliceMgmt, aliceOther, aliceOther, nil},
		{"management key: another user's workspace", aliceMgmt, bobDefault, "", ErrWorkspaceForbidden},
		{"management key: a missing workspace", bobMgmt, "0b5d3c1e-0000-4000-8000-0000000000ff", "", ErrWorkspaceForbidden},
		{"malformed id", aliceKey, "not-a-uuid", "", ErrInvalidWorkspaceID},
		{"malformed id, management key", aliceMgmt, "1234", "", ErrInvalidWorkspaceID},
		{"a UUID in another spelling", aliceMgmt, "urn:uuid:" + aliceOther, "", ErrInvalidWorkspaceID},
		{"a UUID in braces", aliceMgmt, "{" + aliceOther + "}", "", ErrInvalidWorkspaceID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t)
			up, err := r.s.Begin(t.Context(), Params{Key: tt.key, WorkspaceID: tt.ws, Declared: 10})
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || up != nil {
					t.Fatalf("Begin = %v, %v; want %v", up, err, tt.wantErr)
				}
				if len(r.admission.admitted) != 0 || len(r.store.released) != 0 {
					t.Errorf("a refused workspace reached admission %v or the store %v", r.admission.admitted, r.store.released)
				}
				r.assertNothingHeld(t)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer up.Abort(t.Context())
			if got := r.admission.admitted[0].workspaceID; got != tt.want {
				t.Errorf("workspace %s, want %s", got, tt.want)
			}
		})
	}
}

func TestResolveWorkspaceFailures(t *testing.T) {
	broken := errors.New("metadata store down")
	for _, key := range []*keys.APIKey{aliceMgmt, {ID: "k", UserID: "alice", Role: keys.RoleStandard}} {
		for _, ws := range []string{"", aliceOther} {
			if key.Role == keys.RoleStandard && ws != "" {
				continue // refused before asking: covered above
			}
			t.Run(string(key.Role)+"/"+ws, func(t *testing.T) {
				r := newRig(t)
				r.ws.err = broken
				if _, err := r.s.Begin(t.Context(), Params{Key: key, WorkspaceID: ws}); !errors.Is(err, broken) || errors.Is(err, ErrWorkspaceForbidden) {
					t.Fatalf("Begin = %v, want the store's failure, not a refusal", err)
				}
				r.assertNothingHeld(t)
			})
		}
	}
}

func TestBeginRefusals(t *testing.T) {
	denied := errors.New("too many uploads")
	broken := errors.New("metadata store down")
	tests := []struct {
		name    string
		p       Params
		setup   func(*rig)
		wantErr error
		admits  bool // whether admission was asked (and so must be released)
	}{
		{"unknown provider", Params{Provider: "mistral"}, nil, ErrUnknownProvider, false},
		{"provider without an opener", Params{Provider: ProviderOpenAI}, func(r *rig) { r.s.opener = nil }, ErrUnknownProvider, false},
		{"provider without a client", Params{Provider: ProviderAnthropic}, func(r *rig) {
			r.store.keys[aliceDefault+"/"+ProviderAnthropic] = []byte("sk-ant")
		}, ErrUnknownProvider, false},
		{"no key stored for the provider", Params{Provider: ProviderOpenAI, WorkspaceID: aliceOther, Key: aliceMgmt}, nil, ErrNoProviderKey, false},
		{"the key store fails", Params{Provider: ProviderOpenAI}, func(r *rig) { r.store.keyErr = broken }, broken, false},
		{"the key does not open", Params{Provider: ProviderOpenAI}, func(r *rig) { r.opener.err = broken }, broken, false},
		{"admission denies", Params{}, func(r *rig) { r.admission.err = denied }, denied, true},
		{"quota exceeded past any envelope", Params{Declared: 100 + MultipartAllowance}, func(r *rig) {
			r.s.cfg.MaxFileBytes = 1 << 20
			r.store.stored[aliceDefault] = quota - 99
		}, ErrQuotaExceeded, true},
		{"reservation fails", Params{}, func(r *rig) { r.store.reserveErr = broken }, broken, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t)
			if tt.setup != nil {
				tt.setup(r)
			}
			if tt.p.Key == nil {
				tt.p.Key = aliceKey
			}
			up, err := r.s.Begin(t.Context(), tt.p)
			if !errors.Is(err, tt.wantErr) || up != nil {
				t.Fatalf("Begin = %v, %v; want %v", up, err, tt.wantErr)
			}
			if tt.wantErr == broken && errors.Is(err, ErrUnknownProvider) {
				t.Errorf("%v reads as a client error", err)
			}
			if got := len(r.admission.admitted) > 0; got != tt.admits {
				t.Errorf("admission asked: %v, want %v", got, tt.admits)
			}
			if tt.wantErr == denied && len(r.admission.releases()) != 0 {
				t.Error("a denied admission was released")
			}
			if tt.wantErr != denied {
				r.assertNothingHeld(t)
			}
		})
	}
}

func TestWriteFailuresLeaveNothing(t *testing.T) {
	broken := errors.New("disk on fire")
	providerDown := errors.New("connection refused")
	tests := []struct {
		name     string
		provider string
		filename string
		body     io.Reader
		setup    func(*rig)
		check    func(*testing.T, error)
	}{
		{name: "invalid filename", filename: "../x.txt", body: strings.NewReader(hello), check: is(ErrInvalidFilename)},
		{name: "empty file", filename: "a.txt", body: strings.NewReader(""), check: is(sniff.ErrEmptyFile)},
		{name: "unsupported type", filename: "a.bin", body: strings.NewReader("\x00\x01\x02\x03binary"), check: is(sniff.ErrUnsupportedType)},
		{name: "too large while streaming", filename: "a.txt", body: strings.NewReader(strings.Repeat("x", maxFile+1)), check: tooLarge},
		{name: "too large far past the sniffing window", filename: "a.txt", body: strings.NewReader(strings.Repeat("x", sniff.WindowLen+11)),
			setup: func(r *rig) { r.s.cfg.MaxFileBytes = sniff.WindowLen + 10 }, check: tooLargeAt(sniff.WindowLen + 10)},
		{name: "body cut off", filename: "a.txt", body: io.MultiReader(strings.NewReader(hello), errReader{io.ErrUnexpectedEOF}), check: is(io.ErrUnexpectedEOF)},
		{name: "client went away", filename: "a.txt", body: io.MultiReader(strings.NewReader(hello), errReader{context.Canceled}), check: is(context.Canceled)},
		{name: "storage unavailable", filename: "a.txt", body: strings.NewReader(hello),
			setup: func(r *rig) { r.bucket.uploadErr = blob.ErrUnavailable }, check: is(ErrStorageUnavailable)},
		{name: "storage timed out", filename: "a.txt", body: strings.NewReader(hello),
			setup: func(r *rig) { r.bucket.uploadErr = context.DeadlineExceeded }, check: is(ErrStorageUnavailable)},
		{name: "storage fails otherwise", filename: "a.txt", body: strings.NewReader(hello),
			setup: func(r *rig) { r.bucket.uploadErr = broken }, check: all(is(broken), isNot(ErrStorageUnavailable))},
		{name: "provider fails", provider: ProviderOpenAI, filename: "a.txt", body: strings.NewReader(hello),
			setup: func(r *rig) { r.openai.uploadErr = providerDown }, check: all(is(ErrProvider), is(providerDown))},
		{name: "provider's own classification is kept", provider: ProviderOpenAI, filename: "a.txt", body: strings.NewReader(hello),
			setup: func(r *rig) { r.openai.uploadErr = ErrProviderTimeout }, check: all(is(ErrProviderTimeout), isNot(ErrProvider))},
		{name: "provider deadline", provider: ProviderOpenAI, filename: "a.txt", body: strings.NewReader(hello),
			setup: func(r *rig) { r.openai.uploadErr = context.DeadlineExceeded }, check: is(ErrProviderTimeout)},
		{name: "too large on the way to the provider", provider: ProviderOpenAI, filename: "a.txt",
			body: strings.NewReader(strings.Repeat("x", maxFile+1)), check: all(tooLarge, isNot(ErrProvider))},
		{name: "text turning binary on the way to the provider", provider: ProviderOpenAI, filename: "a.txt",
			body:  strings.NewReader(strings.Repeat("x", sniff.WindowLen+10) + "\x00"),
			setup: func(r *rig) { r.s.cfg.MaxFileBytes = 2 * sniff.WindowLen }, check: all(is(sniff.ErrUnsupportedType), isNot(ErrProvider))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t)
			if tt.setup != nil {
				tt.setup(r)
			}
			_, err := r.upload(t.Context(), Params{Key: aliceKey, Provider: tt.provider, Declared: -1}, tt.filename, tt.body)
			if err == nil {
				t.Fatal("upload succeeded")
			}
			tt.check(t, err)
			r.assertNothingHeld(t)
			if len(r.store.released) != 1 {
				t.Errorf("released %v, want the one reservation", r.store.released)
			}
		})
	}
}

func TestWriteOnlyOnce(t *testing.T) {
	r := newRig(t)
	up, err := r.s.Begin(t.Context(), Params{Key: aliceKey, Declared: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer up.Abort(t.Context())
	if err := up.Write(t.Context(), "a.txt", strings.NewReader(hello)); err != nil {
		t.Fatal(err)
	}
	if err := up.Write(t.Context(), "b.txt", strings.NewReader(hello)); err == nil {
		t.Fatal("a second Write succeeded")
	}
	if r.bucket.count() != 1 {
		t.Errorf("bucket holds %d objects, want the first write's", r.bucket.count())
	}
}

func TestCommitFailureRemovesTheBytes(t *testing.T) {
	broken := errors.New("metadata store down")
	for _, provider := range []string{"", ProviderOpenAI} {
		t.Run("provider="+provider, func(t *testing.T) {
			r := newRig(t)
			r.store.commitErr = broken
			_, err := r.upload(t.Context(), Params{Key: aliceKey, Provider: provider, Declared: -1}, "a.txt", strings.NewReader(hello))
			if !errors.Is(err, broken) {
				t.Fatalf("upload = %v, want the store's failure", err)
			}
			if provider == "" && len(r.bucket.deleted) != 1 {
				t.Errorf("bucket deletes %v, want the stored object", r.bucket.deleted)
			}
			if provider != "" && !slices.Equal(r.openai.deleted, []string{"file-provider-1"}) {
				t.Errorf("provider deletes %v, want the uploaded file", r.openai.deleted)
			}
			r.assertNothingHeld(t)
		})
	}
}

// A commit whose answer was lost may have been made: a record may name the
// bytes, so they stay (the sweeper removes native bytes no record names).
func TestCommitOfUnknownOutcomeKeepsTheBytes(t *testing.T) {
	lost := fmt.Errorf("connection reset at COMMIT: %w: %w", outage.ErrOutcomeUnknown, outage.ErrUnavailable)
	for _, provider := range []string{"", ProviderOpenAI} {
		t.Run("provider="+provider, func(t *testing.T) {
			r := newRig(t)
			r.store.commitErr = lost
			_, err := r.upload(t.Context(), Params{Key: aliceKey, Provider: provider, Declared: -1}, "a.txt", strings.NewReader(hello))
			if !errors.Is(err, outage.ErrUnavailable) {
				t.Fatalf("upload = %v, want the store's failure", err)
			}
			if len(r.bucket.deleted) != 0 || len(r.openai.deleted) != 0 {
				t.Errorf("deleted %v and %v at the provider, want the bytes kept", r.bucket.deleted, r.openai.deleted)
			}
			if provider == "" && r.bucket.count() != 1 {
				t.Errorf("bucket holds %d objects, want the upload's", r.bucket.count())
			}
			if provider != "" && len(r.openai.files) != 1 {
				t.Errorf("provider holds %d files, want the upload's", len(r.openai.files))
			}
			r.assertNothingReserved(t)
		})
	}
}

func TestCommitWithoutAFile(t *testing.T) {
	r := newRig(t)
	up, err := r.s.Begin(t.Context(), Params{Key: aliceKey, Declared: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer up.Abort(t.Context())
	if _, err := up.Commit(t.Context(), ""); !errors.Is(err, ErrNoFile) {
		t.Fatalf("Commit = %v, want ErrNoFile", err)
	}
	if len(r.store.records) != 0 {
		t.Error("a record without bytes")
	}
}

func TestCommitStoresThePurpose(t *testing.T) {
	r := newRig(t)
	up, err := r.s.Begin(t.Context(), Params{Key: aliceKey, Declared: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer up.Abort(t.Context())
	if err := up.Write(t.Context(), "a.txt", strings.NewReader(hello)); err != nil {
		t.Fatal(err)
	}
	rec, err := up.Commit(t.Context(), PurposeBatch)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := r.s.store.FileByID(t.Context(), aliceDefault, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Purpose != PurposeBatch || stored.Purpose != PurposeBatch {
		t.Errorf("purpose answered %q, stored %q; want %q", rec.Purpose, stored.Purpose, PurposeBatch)
	}
}

func TestAbortAfterCommitDoesNothing(t *testing.T) {
	r := newRig(t)
	up, err := r.s.Begin(t.Context(), Params{Key: aliceKey, Declared: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := up.Write(t.Context(), "a.txt", strings.NewReader(hello)); err != nil {
		t.Fatal(err)
	}
	rec, err := up.Commit(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	up.Abort(t.Context())
	up.Abort(t.Context())
	if len(r.bucket.deleted) != 0 || len(r.store.released) != 0 {
		t.Errorf("Abort after Commit deleted %v, released %v", r.bucket.deleted, r.store.released)
	}
	if _, err := r.s.store.FileByID(t.Context(), aliceDefault, rec.ID); err != nil {
		t.Errorf("the committed record is gone: %v", err)
	}
	if got := r.admission.releases(); !slices.Equal(got, []int64{int64(len(hello))}) {
		t.Errorf("admission released %v, want once with the size", got)
	}
}

func TestAbortTwiceReleasesOnce(t *testing.T) {
	r := newRig(t)
	up, err := r.s.Begin(t.Context(), Params{Key: aliceKey, Declared: -1})
	if err != nil {
		t.Fatal(err)
	}
	up.Abort(t.Context())
	up.Abort(t.Context())
	if len(r.store.released) != 1 {
		t.Errorf("released %v, want once", r.store.released)
	}
	r.assertNothingHeld(t)
}

func TestAbortCleansUpOnACancelledContext(t *testing.T) {
	r := newRig(t)
	ctx, cancel := context.WithCancel(t.Context())
	up, err := r.s.Begin(ctx, Params{Key: aliceKey, Declared: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := up.Write(ctx, "a.txt", strings.NewReader(hello)); err != nil {
		t.Fatal(err)
	}
	cancel()
	up.Abort(ctx)
	if len(r.bucket.deleted) != 1 {
		t.Errorf("deleted %v, want the object despite the cancelled request", r.bucket.deleted)
	}
	r.assertNothingHeld(t)
}

func TestAbortLogsWhatItCouldNotUndo(t *testing.T) {
	tests := []struct {
		name     string
		provider string
		setup    func(*rig)
		message  string
	}{
		{"object left behind", "", func(r *rig) { r.bucket.deleteErr = blob.ErrUnavailable }, "could not remove the bytes of a failed upload"},
		{"provider file left behind", ProviderOpenAI, func(r *rig) { r.openai.deleteErr = ErrProvider }, "could not remove the bytes of a failed upload"},
		{"reservation not released", "", func(r *rig) { r.store.releaseErr = errors.New("store down") }, "could not release a quota reservation; it expires by itself"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t)
			tt.setup(r)
			up, err := r.s.Begin(t.Context(), Params{Key: aliceKey, Provider: tt.provider, Declared: -1})
			if err != nil {
				t.Fatal(err)
			}
			if err := up.Write(t.Context(), "a.txt", strings.NewReader(hello)); err != nil {
				t.Fatal(err)
			}
			up.Abort(t.Context())
			if n := r.logs.withMessage(tt.message); n != 1 {
				t.Errorf("%d log lines %q, want 1; logs: %v", n, tt.message, r.logs)
			}
			if got := r.admission.releases(); !slices.Equal(got, []int64{0}) {
				t.Errorf("admission released %v, want [0] even when the cleanup failed", got)
			}
		})
	}
}

func TestAbortOfAnExpiredReservationIsQuiet(t *testing.T) {
	r := newRig(t)
	up, err := r.s.Begin(t.Context(), Params{Key: aliceKey, Declared: -1})
	if err != nil {
		t.Fatal(err)
	}
	clear(r.store.reserved) // expired meanwhile
	up.Abort(t.Context())
	if n := r.logs.atLevel(slog.LevelWarn); n != 0 {
		t.Errorf("%d warnings for a reservation that expired by itself", n)
	}
}

func TestWaitReturnsOnceEveryUploadIsOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		first, err := r.s.Begin(t.Context(), Params{Key: aliceKey, Declared: 100})
		if err != nil {
			t.Fatal(err)
		}
		second, err := r.s.Begin(t.Context(), Params{Key: aliceKey, Declared: 100})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { r.s.Wait(); close(done) }()
		waiting := func() bool {
			synctest.Wait() // Wait's goroutine has run as far as it can
			select {
			case <-done:
				return false
			default:
				return true
			}
		}
		if !waiting() {
			t.Fatal("Wait returned with two uploads in flight")
		}
		if err := first.Write(t.Context(), "a.txt", strings.NewReader(hello)); err != nil {
			t.Fatal(err)
		}
		if _, err := first.Commit(t.Context(), ""); err != nil {
			t.Fatal(err)
		}
		if !waiting() {
			t.Fatal("Wait returned with one upload in flight")
		}
		second.Abort(t.Context())
		if waiting() {
			t.Fatal("Wait still blocks after every upload finished")
		}
	})
}

func TestNoAdmission(t *testing.T) {
	r := newRig(t)
	r.s.admission = nil
	if _, err := r.upload(t.Context(), Params{Key: aliceKey, Declared: -1}, "a.txt", strings.NewReader(hello)); err != nil {
		t.Fatalf("upload without shared limits: %v", err)
	}
	if got := r.s.MaxFileBytes(); got != maxFile {
		t.Errorf("MaxFileBytes = %d", got)
	}
}

func TestNewServiceDefaults(t *testing.T) {
	s := NewService(Config{MaxFileBytes: 1}, Deps{})
	if s.cfg.ReservationTTL != time.Minute || s.RenewInterval() != 20*time.Second || s.log == nil {
		t.Errorf("ReservationTTL %v, log %v: want a minute, renewed every 20s, and a logger", s.cfg.ReservationTTL, s.log)
	}
}

func TestTooLargeErrorText(t *testing.T) {
	err := &TooLargeError{Limit: 42}
	if !errors.Is(err, ErrTooLarge) || err.Error() != "file exceeds 42 bytes" {
		t.Errorf("TooLargeError: %v", err)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func is(target error) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		t.Helper()
		if !errors.Is(err, target) {
			t.Errorf("error %v is not %v", err, target)
		}
	}
}

func isNot(target error) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		t.Helper()
		if errors.Is(err, target) {
			t.Errorf("error %v is %v", err, target)
		}
	}
}

func all(checks ...func(*testing.T, error)) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		t.Helper()
		for _, c := range checks {
			c(t, err)
		}
	}
}

func tooLarge(t *testing.T, err error) { t.Helper(); tooLargeAt(maxFile)(t, err) }

// quotaRefused checks a *QuotaError naming the workspace's quota and what
// was left of it for the upload.
func quotaRefused(available int64) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		t.Helper()
		var qe *QuotaError
		if !errors.As(err, &qe) || !errors.Is(err, ErrQuotaExceeded) || qe.Limit != quota || qe.Available != available {
			t.Errorf("error %v is not a *QuotaError of the %d-byte quota with %d left", err, int64(quota), available)
		}
	}
}

func tooLargeAt(limit int64) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		t.Helper()
		var tl *TooLargeError
		if !errors.As(err, &tl) || tl.Limit != limit {
			t.Errorf("error %v is not a *TooLargeError with limit %d", err, limit)
		}
	}
}

// A body of unknown length into a nearly full workspace reserves what is
// left, not a whole file: it is stored when it fits, and refused with the
// quota error (not 413) only when its bytes really pass the quota.
func TestUnknownSizeReservesWhatIsLeft(t *testing.T) {
	const left = 100
	fits := strings.Repeat("x", left-1) + "\n"
	tests := []struct {
		name string
		body string
		want func(*testing.T, error)
	}{
		{"fits", fits, func(t *testing.T, err error) {
			if err != nil {
				t.Fatalf("upload of %d bytes with %d left: %v", len(fits), left, err)
			}
		}},
		{"passes the quota", fits + "y\n", all(quotaRefused(left), isNot(ErrTooLarge))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t)
			r.store.stored[aliceDefault] = quota - left
			_, err := r.upload(t.Context(), Params{Key: aliceKey, Declared: -1}, "a.txt", strings.NewReader(tt.body))
			tt.want(t, err)
			if len(r.store.reserved) != 0 {
				t.Errorf("reservations %v still held", r.store.reserved)
			}
			if err != nil && r.bucket.count() != 0 {
				t.Errorf("a refused upload left %d objects", r.bucket.count())
			}
		})
	}
	t.Run("a declared body far past what is left is refused at once", func(t *testing.T) {
		r := newRig(t)
		r.s.cfg.MaxFileBytes = 1 << 20
		r.store.stored[aliceDefault] = quota - left
		_, err := r.s.Begin(t.Context(), Params{Key: aliceKey, Declared: left + MultipartAllowance + 1})
		quotaRefused(left)(t, err)
	})
	// Item 10 of the field report: the body declared is the file and its
	// envelope; the file is judged by its own size.
	t.Run("a file that exactly fills the quota, declared with its envelope", func(t *testing.T) {
		r := newRig(t)
		r.store.stored[aliceDefault] = quota - left
		body := strings.Repeat("x", int(left))
		if _, err := r.upload(t.Context(), Params{Key: aliceKey, Declared: left + 300}, "a.txt", strings.NewReader(body)); err != nil {
			t.Fatalf("a file of exactly the %d bytes left: %v", left, err)
		}
	})
	t.Run("one byte past, declared with its envelope", func(t *testing.T) {
		r := newRig(t)
		r.store.stored[aliceDefault] = quota - left
		body := strings.Repeat("x", int(left)+1)
		_, err := r.upload(t.Context(), Params{Key: aliceKey, Declared: left + 300}, "a.txt", strings.NewReader(body))
		quotaRefused(left)(t, err)
		if len(r.store.reserved) != 0 || r.bucket.count() != 0 {
			t.Errorf("refused upload left reservations %v, %d objects", r.store.reserved, r.bucket.count())
		}
	})
	t.Run("nothing left", func(t *testing.T) {
		r := newRig(t)
		r.store.stored[aliceDefault] = quota
		if _, err := r.s.Begin(t.Context(), Params{Key: aliceKey, Declared: -1}); !errors.Is(err, ErrQuotaExceeded) {
			t.Errorf("Begin into a full workspace = %v", err)
		}
	})
}

// Item 11 of the field report: an upload whose workspace is deleted between
// its resolution and its reservation is refused as an upload into a
// workspace already gone is (ErrWorkspaceForbidden, 403), never a 404.
func TestUploadRacingItsWorkspacesDeletion(t *testing.T) {
	r := newRig(t)
	r.store.reserveErr = workspace.ErrNotFound
	_, err := r.upload(context.Background(), Params{Key: aliceKey, Declared: -1}, "notes.txt", strings.NewReader(hello))
	if !errors.Is(err, ErrWorkspaceForbidden) {
		t.Fatalf("upload = %v, want ErrWorkspaceForbidden", err)
	}
}
