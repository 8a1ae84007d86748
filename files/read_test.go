package files

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aigateway/gateway/internal/invalid"
	"github.com/aigateway/gateway/policy/keys"
)

// ListFiles and DeleteFile make fakeStore a Records with the ordering and
// the one-winner delete of the real stores.
func (s *fakeStore) ListFiles(_ context.Context, q ListQuery) (RecordPage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var rs []Record
	for _, r := range s.records {
		if r.WorkspaceID == q.WorkspaceID && (q.Purpose == "" || cmp.Or(r.Purpose, DefaultPurpose) == q.Purpose) {
			rs = append(rs, r)
		}
	}
	less := func(a Record, p Position) int {
		if c := a.CreatedAt.Compare(p.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, p.ID)
	}
	slices.SortFunc(rs, func(a, b Record) int { return less(a, Position{b.CreatedAt, b.ID}) })
	if !q.Ascending {
		slices.Reverse(rs)
	}
	var page RecordPage
	for _, r := range rs {
		if q.After != nil {
			c := less(r, *q.After)
			if q.Ascending && c <= 0 || !q.Ascending && c >= 0 {
				continue
			}
		}
		if len(page.Records) == q.Limit {
			page.HasMore = true
			break
		}
		page.Records = append(page.Records, r)
	}
	return page, nil
}

func (s *fakeStore) DeleteFile(_ context.Context, ws, id string) (Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, r := range s.records {
		if r.WorkspaceID == ws && r.ID == id {
			s.records = slices.Delete(s.records, i, i+1)
			s.stored[ws] -= r.Size
			if s.gone == nil {
				s.gone = map[string]Position{}
			}
			s.gone[ws+"/"+id] = Position{CreatedAt: r.CreatedAt, ID: r.ID}
			return r, nil
		}
	}
	return Record{}, ErrNotFound
}

func (s *fakeStore) FilePosition(_ context.Context, ws, id string) (Position, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.records {
		if r.WorkspaceID == ws && r.ID == id {
			return Position{CreatedAt: r.CreatedAt, ID: r.ID}, nil
		}
	}
	if p, ok := s.gone[ws+"/"+id]; ok {
		return p, nil
	}
	return Position{}, ErrNotFound
}

// Item 5 of the field report: a page anchored on a file deleted since the
// last one starts where that file stood.
func TestPagingFromADeletedFile(t *testing.T) {
	r := newReadRig(t, false)
	ctx := context.Background()
	for i := range 6 {
		r.put(t, aliceKey, "", fmt.Sprint("file ", i))
	}
	all, err := r.r.List(ctx, ListParams{Target: Target{Key: aliceKey}})
	if err != nil || len(all.Files) != 6 {
		t.Fatalf("list: %v", err)
	}
	first, err := r.r.List(ctx, ListParams{Target: Target{Key: aliceKey}, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	anchor := first.Files[1].ID
	if err := r.r.Delete(ctx, FileParams{Target: Target{Key: aliceKey}, ID: anchor}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []ListParams{{After: anchor}, {AfterID: anchor}} {
		p.Target, p.Limit = Target{Key: aliceKey}, 2
		next, err := r.r.List(ctx, p)
		if err != nil {
			t.Fatalf("%+v after its anchor was deleted: %v", p, err)
		}
		if len(next.Files) != 2 || next.Files[0].ID != all.Files[2].ID || next.Files[1].ID != all.Files[3].ID {
			t.Errorf("%+v: %v, want the 3rd and 4th files", p, next.Files)
		}
	}
	back, err := r.r.List(ctx, ListParams{Target: Target{Key: aliceKey}, BeforeID: anchor})
	if err != nil || len(back.Files) != 1 || back.Files[0].ID != all.Files[0].ID {
		t.Errorf("before_id a deleted file: %v, %v", back.Files, err)
	}
}

var (
	aliceService = &keys.APIKey{ID: "key-alice-svc", UserID: "alice", Role: keys.RoleService}
	bobKey       = &keys.APIKey{ID: "key-bob", UserID: "bob", Role: keys.RoleStandard, WorkspaceID: bobDefault}
	testCursors  = bytes.Repeat([]byte{7}, 32)
)

// readRig is an upload rig with a ReadService over the same fakes.
type readRig struct {
	*rig
	r *ReadService
}

func newReadRig(t *testing.T, downloadable bool) *readRig {
	t.Helper()
	base := newRig(t)
	rs, err := NewReadService(ReadConfig{Downloadable: downloadable, CursorKey: testCursors}, ReadDeps{
		Records: base.store, Keys: base.store, Bucket: base.bucket, Opener: base.opener, Workspaces: base.ws,
		Log: slog.New(base.logs),
	})
	if err != nil {
		t.Fatal(err)
	}
	return &readRig{rig: base, r: rs}
}

// put uploads a file into ws with key k.
func (r *readRig) put(t *testing.T, k *keys.APIKey, ws, body string) Record {
	t.Helper()
	rec, err := r.upload(context.Background(), Params{Key: k, WorkspaceID: ws, Declared: -1}, "notes.txt", strings.NewReader(body))
	if err != nil {
		t.Fatalf("upload: %v", err)
	}
	return rec
}

func TestNewReadServiceNeedsAKey(t *testing.T) {
	if _, err := NewReadService(ReadConfig{CursorKey: []byte("short")}, ReadDeps{}); err == nil {
		t.Error("NewReadService accepted a 5-byte cursor key")
	}
}

// TestReadAccess is the access rule of every route at the service: whose
// key reaches which workspace, and what it may do there.
func TestReadAccess(t *testing.T) {
	r := newReadRig(t, false)
	own := r.put(t, aliceKey, "", hello)
	other := r.put(t, aliceMgmt, aliceOther, hello)
	bobs := r.put(t, bobKey, "", hello)
	ctx := context.Background()
	cases := []struct {
		name    string
		key     *keys.APIKey
		ws, id  string
		get     error // nil: the file is found
		del     error
		content error
	}{
		{"standard, own file", aliceKey, "", own.ID, nil, nil, ErrNotDownloadable},
		{"standard, file of another workspace", aliceKey, "", other.ID, ErrNotFound, ErrNotFound, ErrNotFound},
		{"standard, other workspace named", aliceKey, aliceOther, other.ID, ErrWorkspaceForbidden, ErrWorkspaceForbidden, ErrWorkspaceForbidden},
		{"management, default workspace", aliceMgmt, "", own.ID, nil, nil, ErrNotDownloadable},
		{"management, other workspace named", aliceMgmt, aliceOther, other.ID, nil, nil, ErrNotDownloadable},
		{"management, another user's workspace", aliceMgmt, bobDefault, bobs.ID, ErrWorkspaceForbidden, ErrWorkspaceForbidden, ErrWorkspaceForbidden},
		{"service, default workspace", aliceService, "", own.ID, nil, keys.ErrForbidden, nil},
		{"service, other workspace", aliceService, aliceOther, other.ID, nil, keys.ErrForbidden, nil},
		{"service, another user's file", aliceService, "", bobs.ID, ErrNotFound, keys.ErrForbidden, ErrNotFound},
		{"other user", bobKey, "", own.ID, ErrNotFound, ErrNotFound, ErrNotFound},
		{"malformed workspace id", aliceMgmt, "nope", own.ID, ErrInvalidWorkspaceID, ErrInvalidWorkspaceID, ErrInvalidWorkspaceID},
		{"malformed file id", aliceKey, "", "../x", ErrInvalidParam, ErrInvalidParam, ErrInvalidParam},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := FileParams{Target: Target{Key: tc.key, WorkspaceID: tc.ws}, ID: tc.id}
			f, err := r.r.Get(ctx, p)
			if !errors.Is(err, tc.get) || tc.get == nil && err != nil {
				t.Errorf("Get = %v, want %v", err, tc.get)
			}
			if err == nil && f.ID != tc.id {
				t.Errorf("Get = %s, want %s", f.ID, tc.id)
			}
			c, err := r.r.Open(ctx, p)
			if !errors.Is(err, tc.content) || tc.content == nil && err != nil {
				t.Errorf("Open = %v, want %v", err, tc.content)
			}
			if err == nil {
				c.Close()
			}
			// Delete last, and only where it is refused, so the other
			// cases still find the files.
			if tc.del != nil {
				if err := r.r.Delete(ctx, p); !errors.Is(err, tc.del) {
					t.Errorf("Delete = %v, want %v", err, tc.del)
				}
			}
		})
	}
	if len(r.store.records) != 3 || len(r.bucket.deleted) != 0 {
		t.Errorf("refused deletes removed something: %d records, deleted %v", len(r.store.records), r.bucket.deleted)
	}
	// The refused service key still lists every workspace of its user.
	for _, ws := range []string{"", aliceOther} {
		page, err := r.r.List(ctx, ListParams{Target: Target{Key: aliceService, WorkspaceID: ws}})
		if err != nil || len(page.Files) != 1 {
			t.Errorf("service key List(%q) = %d files, %v; want 1", ws, len(page.Files), err)
		}
	}
}

func TestListPaging(t *testing.T) {
	r := newReadRig(t, true)
	ctx := context.Background()
	var ids []string // upload order; all share fixedNow, so the id orders them
	for i := range 7 {
		ids = append(ids, r.put(t, aliceKey, "", fmt.Sprintf("file %d\n", i)).ID)
	}
	slices.Sort(ids)
	newestFirst := slices.Clone(ids)
	slices.Reverse(newestFirst)
	target := Target{Key: aliceKey}

	walk := func(p ListParams) []string {
		var got []string
		for range 10 {
			page, err := r.r.List(ctx, p)
			if err != nil {
				t.Fatalf("List(%+v): %v", p, err)
			}
			for _, f := range page.Files {
				got = append(got, f.ID)
				if !f.Downloadable {
					t.Errorf("file %s not downloadable with files.downloadable on", f.ID)
				}
			}
			if (page.Cursor == "") == page.HasMore {
				t.Fatalf("cursor %q with has_more %v", page.Cursor, page.HasMore)
			}
			if !page.HasMore {
				return got
			}
			p.Cursor = page.Cursor
		}
		t.Fatal("the walk does not end")
		return nil
	}
	if got := walk(ListParams{Target: target, Limit: 3}); !slices.Equal(got, newestFirst) {
		t.Errorf("cursor walk = %v, want %v", got, newestFirst)
	}
	if got := walk(ListParams{Target: target, Limit: 2, Order: "asc"}); !slices.Equal(got, ids) {
		t.Errorf("ascending walk = %v, want %v", got, ids)
	}
	// The SDKs' own parameters.
	page, err := r.r.List(ctx, ListParams{Target: target, Limit: 2, After: newestFirst[1]})
	if got := fileIDs(page.Files); err != nil || !slices.Equal(got, newestFirst[2:4]) || !page.HasMore {
		t.Errorf("after = %v, %v, has_more %v; want %v", got, err, page.HasMore, newestFirst[2:4])
	}
	page, err = r.r.List(ctx, ListParams{Target: target, Limit: 10, AfterID: newestFirst[4]})
	if got := fileIDs(page.Files); err != nil || !slices.Equal(got, newestFirst[5:]) || page.HasMore {
		t.Errorf("after_id = %v, %v; want %v", got, err, newestFirst[5:])
	}
	page, err = r.r.List(ctx, ListParams{Target: target, Limit: 2, BeforeID: newestFirst[4]})
	if got := fileIDs(page.Files); err != nil || !slices.Equal(got, newestFirst[2:4]) || !page.HasMore {
		t.Errorf("before_id = %v, %v, has_more %v; want %v", got, err, page.HasMore, newestFirst[2:4])
	}
}

func fileIDs(fs []File) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.ID
	}
	return out
}

func TestListRefusesBadParameters(t *testing.T) {
	r := newReadRig(t, false)
	ctx := context.Background()
	for range 3 {
		r.put(t, aliceMgmt, "", hello)
	}
	r.put(t, aliceMgmt, aliceOther, hello)
	first, err := r.r.List(ctx, ListParams{Target: Target{Key: aliceMgmt}, Limit: 1})
	if err != nil || first.Cursor == "" {
		t.Fatalf("List = %+v, %v", first, err)
	}
	tampered := []byte(first.Cursor)
	tampered[len(tampered)/2] ^= 1
	cases := []struct {
		name  string
		p     ListParams
		param string
	}{
		{"negative limit", ListParams{Limit: -1}, "limit"},
		{"limit 1001", ListParams{Limit: 1001}, "limit"},
		{"order", ListParams{Order: "newest"}, "order"},
		{"tampered cursor", ListParams{Cursor: string(tampered)}, "cursor"},
		{"garbage cursor", ListParams{Cursor: "abc"}, "cursor"},
		{"cursor of another workspace", ListParams{Target: Target{WorkspaceID: aliceOther}, Cursor: first.Cursor}, "cursor"},
		{"cursor of another destination", ListParams{Target: Target{Provider: ProviderOpenAI}, Cursor: first.Cursor}, "cursor"},
		{"cursor with another order", ListParams{Order: "asc", Cursor: first.Cursor}, "order"},
		// The second way to say where to start is the one named.
		{"two positions", ListParams{Cursor: first.Cursor, After: first.Files[0].ID}, "after"},
		{"after and before_id", ListParams{After: first.Files[0].ID, BeforeID: first.Files[0].ID}, "before_id"},
		{"unknown purpose", ListParams{Purpose: "homework"}, "purpose"},
		{"purpose with a provider", ListParams{Purpose: "batch", Target: Target{Key: aliceKey, Provider: ProviderOpenAI}}, "purpose"},
		{"malformed after", ListParams{After: "a b"}, "after"},
		{"unknown after_id", ListParams{AfterID: "file-unknown"}, "after_id"},
		{"malformed before_id", ListParams{BeforeID: strings.Repeat("x", 200)}, "before_id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.p.Key = aliceMgmt
			_, err := r.r.List(ctx, tc.p)
			var pe *ParamError
			if !errors.As(err, &pe) || pe.Param != tc.param {
				t.Errorf("List = %v, want a *ParamError naming %s", err, tc.param)
			}
		})
	}
}

func TestDeleteOrderAndQuota(t *testing.T) {
	r := newReadRig(t, false)
	ctx := context.Background()
	keep := r.put(t, aliceKey, "", hello)
	gone := r.put(t, aliceKey, "", "bye\n")
	p := FileParams{Target: Target{Key: aliceKey}, ID: gone.ID}
	// The object cannot be removed: the record still goes, the quota comes
	// back, and the object is left for the sweeper, logged.
	r.bucket.deleteErr = errors.New("storage down")
	if err := r.r.Delete(ctx, p); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if n, _ := r.store.StoredBytes(ctx, aliceDefault); n != keep.Size {
		t.Errorf("stored bytes = %d, want %d", n, keep.Size)
	}
	if !slices.Equal(r.bucket.deleted, []string{gone.ObjectKey}) {
		t.Errorf("bucket deletes = %v, want %s", r.bucket.deleted, gone.ObjectKey)
	}
	if r.logs.atLevel(slog.LevelError) != 1 {
		t.Errorf("the object left behind was not logged as an error")
	}
	if err := r.r.Delete(ctx, p); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Delete = %v, want ErrNotFound", err)
	}
	if _, err := r.r.Get(ctx, p); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after Delete = %v, want ErrNotFound", err)
	}
}

func TestConcurrentDeletesOneWins(t *testing.T) {
	r := newReadRig(t, false)
	ctx := context.Background()
	rec := r.put(t, aliceKey, "", hello)
	errs := make([]error, 8)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { errs[i] = r.r.Delete(ctx, FileParams{Target: Target{Key: aliceKey}, ID: rec.ID}) })
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
		} else if !errors.Is(err, ErrNotFound) {
			t.Errorf("Delete = %v", err)
		}
	}
	if won != 1 {
		t.Errorf("%d deletes won, want 1", won)
	}
	if n, _ := r.store.StoredBytes(ctx, aliceDefault); n != 0 {
		t.Errorf("stored bytes = %d, want 0", n)
	}
}

func TestOpenContent(t *testing.T) {
	data := strings.Repeat("0123456789", 50) + "\n"
	for _, tc := range []struct {
		name         string
		downloadable bool
		key          *keys.APIKey
		want         error
	}{
		{"not downloadable", false, aliceKey, ErrNotDownloadable},
		{"not downloadable, service key", false, aliceService, nil},
		{"downloadable", true, aliceKey, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newReadRig(t, tc.downloadable)
			ctx := context.Background()
			rec := r.put(t, aliceKey, "", data)
			c, err := r.r.Open(ctx, FileParams{Target: Target{Key: tc.key}, ID: rec.ID})
			if !errors.Is(err, tc.want) || tc.want == nil && err != nil {
				t.Fatalf("Open = %v, want %v", err, tc.want)
			}
			if err != nil {
				return
			}
			defer c.Close()
			if c.Size != int64(len(data)) || c.ContentType != rec.MimeType || !c.Ranged() {
				t.Errorf("Content = %+v", c)
			}
			body, err := c.Body(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(body)
			body.Close()
			if string(got) != data {
				t.Errorf("body = %q", got)
			}
			// The fake bucket cannot seek: the range is read by skipping.
			part, err := c.OpenRange(ctx, 95, 10)
			if err != nil {
				t.Fatal(err)
			}
			got, _ = io.ReadAll(part)
			if string(got) != data[95:105] {
				t.Errorf("range = %q, want %q", got, data[95:105])
			}
		})
	}
}

func TestProviderReads(t *testing.T) {
	r := newReadRig(t, false)
	ctx := context.Background()
	target := Target{Key: aliceKey, Provider: ProviderOpenAI}
	var recs []Record
	for range 3 {
		rec, err := r.upload(ctx, Params{Key: aliceKey, Provider: ProviderOpenAI, Declared: -1}, "notes.txt", strings.NewReader(hello))
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	page, err := r.r.List(ctx, ListParams{Target: target, Limit: 2})
	if err != nil || !slices.Equal(fileIDs(page.Files), []string{"file-provider-3", "file-provider-2"}) || page.Cursor == "" {
		t.Fatalf("List = %+v, %v", page, err)
	}
	page, err = r.r.List(ctx, ListParams{Target: target, Limit: 2, Cursor: page.Cursor})
	if err != nil || !slices.Equal(fileIDs(page.Files), []string{"file-provider-1"}) || page.HasMore {
		t.Errorf("second page = %+v, %v", page, err)
	}
	if got := r.openai.listed[1].AfterID; got != "file-provider-2" {
		t.Errorf("the cursor asked the provider for after_id %q", got)
	}
	f, err := r.r.Get(ctx, FileParams{Target: target, ID: recs[0].ID})
	if err != nil || f.Size != int64(len(hello)) || !f.Downloadable {
		t.Errorf("Get = %+v, %v", f, err)
	}
	if _, err := r.r.Get(ctx, FileParams{Target: target, ID: "file-unknown"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get of an unknown provider file = %v, want ErrNotFound", err)
	}
	// Content of a provider upload through our own route comes from the
	// provider, under the same downloadable rule.
	if _, err := r.r.Open(ctx, FileParams{Target: Target{Key: aliceKey}, ID: recs[0].ID}); !errors.Is(err, ErrNotDownloadable) {
		t.Errorf("Open without files.downloadable = %v", err)
	}
	c, err := r.r.Open(ctx, FileParams{Target: Target{Key: aliceService}, ID: recs[0].ID})
	if err != nil {
		t.Fatalf("Open(service key) = %v", err)
	}
	body, _ := c.Body(ctx)
	if got, _ := io.ReadAll(body); string(got) != hello || c.Ranged() {
		t.Errorf("provider content = %q, ranged %v", got, c.Ranged())
	}
	c.Close()
	// Deleting a provider file removes our record and its quota charge.
	if err := r.r.Delete(ctx, FileParams{Target: target, ID: recs[0].ID}); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := r.store.FileByID(ctx, aliceDefault, recs[0].ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("our record survived the provider delete: %v", err)
	}
	if n, _ := r.store.StoredBytes(ctx, aliceDefault); n != 2*int64(len(hello)) {
		t.Errorf("stored bytes = %d, want %d", n, 2*len(hello))
	}
	// Already gone at the provider while we hold a record: the record goes.
	delete(r.openai.files, recs[1].ID)
	if err := r.r.Delete(ctx, FileParams{Target: Target{Key: aliceKey}, ID: recs[1].ID}); err != nil {
		t.Errorf("Delete of a file gone at the provider = %v", err)
	}
	if err := r.r.Delete(ctx, FileParams{Target: target, ID: recs[1].ID}); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Delete = %v, want ErrNotFound", err)
	}
	r.openai.listErr = &RateLimitedError{Provider: "openai"}
	if _, err := r.r.List(ctx, ListParams{Target: target}); !errors.Is(err, ErrProviderRateLimited) {
		t.Errorf("List when throttled = %v, want ErrProviderRateLimited", err)
	}
	r.openai.listErr = errors.New("boom")
	if _, err := r.r.List(ctx, ListParams{Target: target}); !errors.Is(err, ErrProvider) {
		t.Errorf("List when the provider fails = %v, want ErrProvider", err)
	}
	if _, err := r.r.List(ctx, ListParams{Target: Target{Key: aliceKey, Provider: ProviderAnthropic}}); !errors.Is(err, ErrNoProviderKey) {
		t.Errorf("List without a stored key = %v, want ErrNoProviderKey", err)
	}
}

func TestServiceKeysDoNotUpload(t *testing.T) {
	r := newReadRig(t, false)
	_, err := r.upload(context.Background(), Params{Key: aliceService, Declared: -1}, "notes.txt", strings.NewReader(hello))
	if !errors.Is(err, keys.ErrForbidden) {
		t.Errorf("upload with a service key = %v, want keys.ErrForbidden", err)
	}
	r.assertNothingHeld(t)
}

// TestRefusalsNameTheParameter: a workspace_id that is not a UUID, a
// provider without a client, and a provider whose key the workspace never
// stored are 400s that name the parameter, on uploads and reads alike.
func TestRefusalsNameTheParameter(t *testing.T) {
	check := func(t *testing.T, err error, sentinel error, param string) {
		t.Helper()
		fields := invalid.Fields(err)
		if !errors.Is(err, sentinel) || fields == nil {
			t.Fatalf("err = %v, want %v naming its field", err, sentinel)
		}
		if !slices.ContainsFunc(fields, func(f invalid.Field) bool { return f.Name == param && f.Problem != "" }) {
			t.Errorf("%v: field problems %v do not name %s", err, fields, param)
		}
	}
	r := newRig(t)
	_, err := r.s.Begin(context.Background(), Params{Key: aliceMgmt, WorkspaceID: "not-a-uuid"})
	check(t, err, ErrInvalidWorkspaceID, "workspace_id")
	_, err = openProvider(context.Background(), r.store, r.opener, aliceDefault, "gemini", aliceKey.ID)
	check(t, err, ErrUnknownProvider, "provider")
	_, err = openProvider(context.Background(), r.store, r.opener, aliceOther, ProviderOpenAI, aliceKey.ID)
	check(t, err, ErrNoProviderKey, "provider")
}

// A record whose object is gone is ErrContentMissing, logged once with the
// file's id, never an unexplained failure.
func TestOpenContentOfAMissingObject(t *testing.T) {
	r := newReadRig(t, true)
	var logs bytes.Buffer
	r.r.d.Log = slog.New(slog.NewJSONHandler(&logs, nil))
	ctx := context.Background()
	rec := r.put(t, aliceKey, "", "some bytes")
	r.bucket.mu.Lock()
	delete(r.bucket.objects, rec.ObjectKey)
	r.bucket.mu.Unlock()
	c, err := r.r.Open(ctx, FileParams{Target: Target{Key: aliceKey}, ID: rec.ID})
	if err != nil {
		t.Fatalf("Open = %v: the record is there", err)
	}
	defer c.Close()
	if _, err := c.Body(ctx); !errors.Is(err, ErrContentMissing) {
		t.Fatalf("Body = %v, want ErrContentMissing", err)
	}
	if n := strings.Count(logs.String(), "\n"); n != 1 || !strings.Contains(logs.String(), `"file_id":"`+rec.ID+`"`) ||
		!strings.Contains(logs.String(), `"level":"ERROR"`) {
		t.Errorf("logged %d times with the id, want once at error level:\n%s", n, logs.String())
	}
}

// Item 9 of the field report: a page that has more always carries its
// cursor, also when paging back from a file; following it pages on back.
func TestBackwardPagesCarryTheirCursor(t *testing.T) {
	r := newReadRig(t, false)
	ctx := context.Background()
	for i := range 7 {
		r.put(t, aliceKey, "", fmt.Sprint("file ", i))
	}
	all, err := r.r.List(ctx, ListParams{Target: Target{Key: aliceKey}})
	if err != nil || len(all.Files) != 7 {
		t.Fatalf("list: %d files, %v", len(all.Files), err)
	}
	// Before the last file of the listing are the six others.
	last := all.Files[6].ID
	page, err := r.r.List(ctx, ListParams{Target: Target{Key: aliceKey}, BeforeID: last, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for range 10 {
		for _, f := range page.Files {
			seen = append(seen, f.ID)
		}
		if !page.HasMore {
			break
		}
		if page.Cursor == "" {
			t.Fatalf("a page with more has no cursor (after %v)", seen)
		}
		if page, err = r.r.List(ctx, ListParams{Target: Target{Key: aliceKey}, Cursor: page.Cursor, Limit: 2}); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(seen)
	var want []string
	for _, f := range all.Files[:6] {
		want = append(want, f.ID)
	}
	slices.Sort(want)
	if !slices.Equal(seen, want) {
		t.Errorf("paging back saw %v, want every file newer than the oldest once: %v", seen, want)
	}
}

// Item 12: purpose filters the gateway's own files; its cursor keeps the
// filter.
func TestListByPurpose(t *testing.T) {
	r := newReadRig(t, false)
	ctx := context.Background()
	for i := range 5 {
		up, err := r.s.Begin(ctx, Params{Key: aliceKey, Declared: -1})
		if err != nil {
			t.Fatal(err)
		}
		if err := up.Write(ctx, "notes.txt", strings.NewReader(fmt.Sprint("file ", i))); err != nil {
			t.Fatal(err)
		}
		purpose := PurposeUserData
		if i%2 == 0 {
			purpose = PurposeBatch
		}
		if _, err := up.Commit(ctx, purpose); err != nil {
			t.Fatal(err)
		}
	}
	page, err := r.r.List(ctx, ListParams{Target: Target{Key: aliceKey}, Purpose: "batch", Limit: 2})
	if err != nil || len(page.Files) != 2 || !page.HasMore {
		t.Fatalf("first page: %+v, %v", page, err)
	}
	next, err := r.r.List(ctx, ListParams{Target: Target{Key: aliceKey}, Purpose: "batch", Cursor: page.Cursor, Limit: 2})
	if err != nil || len(next.Files) != 1 || next.HasMore {
		t.Fatalf("second page: %+v, %v", next, err)
	}
	for _, f := range append(page.Files, next.Files...) {
		if f.Purpose != PurposeBatch {
			t.Errorf("%s has purpose %q", f.ID, f.Purpose)
		}
	}
	if _, err := r.r.List(ctx, ListParams{Target: Target{Key: aliceKey}, Cursor: page.Cursor, Limit: 2}); err == nil {
		t.Error("a cursor of the batch listing continued the unfiltered one")
	}
}

// Item 4 of the field report: DELETE with provider= of a file the gateway
// stores itself is refused naming provider; nothing is removed and the
// provider hears nothing of it.
func TestDeleteWithTheWrongProvider(t *testing.T) {
	r := newReadRig(t, false)
	ctx := context.Background()
	rec := r.put(t, aliceKey, "", "ours")
	err := r.r.Delete(ctx, FileParams{Target: Target{Key: aliceKey, Provider: ProviderOpenAI}, ID: rec.ID})
	var pe *ParamError
	if !errors.As(err, &pe) || pe.Param != "provider" {
		t.Fatalf("Delete = %v, want a *ParamError naming provider", err)
	}
	if _, err := r.r.Get(ctx, FileParams{Target: Target{Key: aliceKey}, ID: rec.ID}); err != nil {
		t.Fatalf("the record went: %v", err)
	}
	if len(r.bucket.deleted) != 0 {
		t.Fatalf("objects deleted: %v", r.bucket.deleted)
	}
	if err := r.r.Delete(ctx, FileParams{Target: Target{Key: aliceKey}, ID: rec.ID}); err != nil {
		t.Fatalf("the delete without provider: %v", err)
	}
}
