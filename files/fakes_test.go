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
	"time"

	"github.com/aigateway/gateway/files/blob"
	"github.com/aigateway/gateway/workspace"
)

// fakeStore is a Store and ProviderKeys in memory, with the quota rule of
// the real one and knobs to fail each call.
type fakeStore struct {
	mu       sync.Mutex
	stored   map[string]int64 // workspace -> bytes of its records
	reserved map[string]Reservation
	records  []Record
	released []Reservation
	keys     map[string][]byte // workspace/provider -> sealed key
	next     int
	// gone are the positions of deleted records, by workspace/id.
	gone map[string]Position

	reserveErr, commitErr, releaseErr, keyErr, renewErr error
	renewals                                            [][]string // ids of each Renew call
}

func newFakeStore() *fakeStore {
	return &fakeStore{stored: map[string]int64{}, reserved: map[string]Reservation{}, keys: map[string][]byte{}}
}

func (s *fakeStore) Reserve(_ context.Context, ws string, n, limit int64, ttl time.Duration) (Reservation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reserveErr != nil {
		return Reservation{}, s.reserveErr
	}
	held := s.held(ws)
	if held+n > limit {
		return Reservation{}, ErrQuotaExceeded
	}
	return s.add(ws, n, ttl), nil
}

// held is what ws stores and has reserved; s.mu must be held.
func (s *fakeStore) held(ws string) int64 {
	held := s.stored[ws]
	for _, r := range s.reserved {
		if r.WorkspaceID == ws {
			held += r.Bytes
		}
	}
	return held
}

func (s *fakeStore) add(ws string, n int64, ttl time.Duration) Reservation {
	s.next++
	r := Reservation{ID: fmt.Sprintf("res-%d", s.next), WorkspaceID: ws, Bytes: n, ExpiresAt: time.Unix(0, 0).Add(ttl)}
	s.reserved[r.ID] = r
	return r
}

func (s *fakeStore) ReserveUpTo(_ context.Context, ws string, n, limit int64, ttl time.Duration) (Reservation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reserveErr != nil {
		return Reservation{}, s.reserveErr
	}
	held := s.held(ws)
	if held >= limit {
		return Reservation{}, ErrQuotaExceeded
	}
	return s.add(ws, min(n, limit-held), ttl), nil
}

func (s *fakeStore) Renew(_ context.Context, ids []string, _ time.Duration) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.renewals = append(s.renewals, slices.Clone(ids))
	if s.renewErr != nil {
		return nil, s.renewErr
	}
	var alive []string
	for _, id := range ids {
		if _, ok := s.reserved[id]; ok {
			alive = append(alive, id)
		}
	}
	return alive, nil
}

func (s *fakeStore) Commit(_ context.Context, res Reservation, rec Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.commitErr != nil {
		return s.commitErr
	}
	if _, ok := s.reserved[res.ID]; !ok {
		return ErrReservationNotFound
	}
	delete(s.reserved, res.ID)
	s.records = append(s.records, rec)
	s.stored[rec.WorkspaceID] += rec.Size
	return nil
}

func (s *fakeStore) Release(_ context.Context, res Reservation) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.released = append(s.released, res)
	if s.releaseErr != nil {
		return s.releaseErr
	}
	if _, ok := s.reserved[res.ID]; !ok {
		return ErrReservationNotFound
	}
	delete(s.reserved, res.ID)
	return nil
}

func (s *fakeStore) StoredBytes(_ context.Context, ws string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stored[ws], nil
}

func (s *fakeStore) FileByID(_ context.Context, ws, id string) (Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.records {
		if r.WorkspaceID == ws && r.ID == id {
			return r, nil
		}
	}
	return Record{}, ErrNotFound
}

func (s *fakeStore) PutProviderKey(_ context.Context, ws, provider string, sealed []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys[ws+"/"+provider] = sealed
	return nil
}

func (s *fakeStore) ProviderKey(_ context.Context, ws, provider, _ string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keyErr != nil {
		return nil, s.keyErr
	}
	k, ok := s.keys[ws+"/"+provider]
	if !ok {
		return nil, ErrNoProviderKey
	}
	return k, nil
}

// fakeBucket keeps objects in memory. Like every real bucket, a failed
// upload leaves nothing behind and the reader's error comes back wrapped.
type fakeBucket struct {
	mu        sync.Mutex
	objects   map[string][]byte
	types     map[string]string
	deleted   []string
	uploadErr error // returned after reading the whole body
	deleteErr error
}

var _ blob.Bucket = (*fakeBucket)(nil)

func newFakeBucket() *fakeBucket {
	return &fakeBucket{objects: map[string][]byte{}, types: map[string]string{}}
}

func (b *fakeBucket) Upload(_ context.Context, key string, r io.Reader, _ int64, opts blob.UploadOptions) (blob.Object, error) {
	if err := blob.ValidateKey(key); err != nil {
		return blob.Object{}, err
	}
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, r); err != nil {
		return blob.Object{}, fmt.Errorf("fake bucket: upload %s: %w", key, err)
	}
	if b.uploadErr != nil {
		return blob.Object{}, b.uploadErr
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.objects[key] = buf.Bytes()
	b.types[key] = opts.ContentType
	return blob.Object{Key: key, Size: int64(buf.Len()), ContentType: opts.ContentType}, nil
}

func (b *fakeBucket) Compose(_ context.Context, dst string, srcs []string, opts blob.UploadOptions) (blob.Object, error) {
	if err := blob.ValidateCompose(dst, srcs); err != nil {
		return blob.Object{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var data []byte
	for _, src := range srcs {
		part, ok := b.objects[src]
		if !ok {
			return blob.Object{}, fmt.Errorf("fake bucket: compose %s: %w", dst, &blob.MissingSourceError{Key: src})
		}
		data = append(data, part...)
	}
	b.objects[dst] = data
	b.types[dst] = opts.ContentType
	return blob.Object{Key: dst, Size: int64(len(data)), ContentType: opts.ContentType}, nil
}

func (b *fakeBucket) Open(_ context.Context, key string) (io.ReadCloser, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	data, ok := b.objects[key]
	if !ok {
		return nil, blob.ErrNotFound
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

func (b *fakeBucket) OpenRange(_ context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	if offset < 0 || length < 1 {
		return nil, fmt.Errorf("fake bucket: open %s: invalid range %d+%d", key, offset, length)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	data, ok := b.objects[key]
	if !ok {
		return nil, blob.ErrNotFound
	}
	data = data[min(offset, int64(len(data))):]
	return io.NopCloser(bytes.NewReader(data[:min(length, int64(len(data)))])), nil
}

func (b *fakeBucket) Stat(_ context.Context, key string) (blob.Object, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	data, ok := b.objects[key]
	if !ok {
		return blob.Object{}, blob.ErrNotFound
	}
	return blob.Object{Key: key, Size: int64(len(data))}, nil
}

func (b *fakeBucket) Delete(_ context.Context, key string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.deleted = append(b.deleted, key)
	if b.deleteErr != nil {
		return b.deleteErr
	}
	delete(b.objects, key)
	return nil
}

func (b *fakeBucket) List(_ context.Context, prefix string) ([]string, error) {
	return b.keysAfter(prefix, ""), nil
}

func (b *fakeBucket) ListAfter(_ context.Context, prefix, after string, limit int) ([]string, error) {
	keys := b.keysAfter(prefix, after)
	return keys[:min(limit, len(keys))], nil
}

// keysAfter returns the keys starting with prefix that sort after after,
// sorted.
func (b *fakeBucket) keysAfter(prefix, after string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var keys []string
	for k := range b.objects {
		if strings.HasPrefix(k, prefix) && k > after {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

func (b *fakeBucket) Check(context.Context) error { return nil }

func (b *fakeBucket) Close() error { return nil }

func (b *fakeBucket) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.objects)
}

// fakeProvider is a provider's Files API in memory, bound to one key.
type fakeProvider struct {
	mu        sync.Mutex
	key       string
	files     map[string][]byte
	sent      []ProviderFile // Body is nil: it was consumed
	deleted   []string
	uploadErr error // returned after reading the whole body
	deleteErr error
	listErr   error
	listed    []ProviderListQuery
	next      int
}

var _ Provider = (*fakeProvider)(nil)

func (p *fakeProvider) Upload(_ context.Context, f ProviderFile) (string, error) {
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, f.Body); err != nil {
		return "", fmt.Errorf("fake provider: sending the file: %w", err)
	}
	if p.uploadErr != nil {
		return "", p.uploadErr
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next++
	id := fmt.Sprintf("file-provider-%d", p.next)
	if p.files == nil {
		p.files = map[string][]byte{}
	}
	p.files[id] = buf.Bytes()
	p.sent = append(p.sent, ProviderFile{Name: f.Name, ContentType: f.ContentType})
	return id, nil
}

func (p *fakeProvider) Delete(_ context.Context, id string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.deleted = append(p.deleted, id)
	if p.deleteErr != nil {
		return p.deleteErr
	}
	if _, ok := p.files[id]; !ok {
		return fmt.Errorf("fake provider: %w", ErrNotFound)
	}
	delete(p.files, id)
	return nil
}

// List pages through the provider's files by id (ids grow with uploads,
// so id order is upload order).
func (p *fakeProvider) List(_ context.Context, q ProviderListQuery) (ProviderPage, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.listErr != nil {
		return ProviderPage{}, p.listErr
	}
	ids := make([]string, 0, len(p.files))
	for id := range p.files {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return cmp.Compare(len(a), len(b))*2 + cmp.Compare(a, b) })
	if !q.Ascending {
		slices.Reverse(ids)
	}
	if q.AfterID != "" {
		i := slices.Index(ids, q.AfterID)
		ids = ids[i+1:]
	}
	var page ProviderPage
	for _, id := range ids {
		if len(page.Files) == q.Limit {
			page.HasMore = true
			break
		}
		page.Files = append(page.Files, p.info(id))
	}
	p.listed = append(p.listed, q)
	return page, nil
}

func (p *fakeProvider) info(id string) ProviderFileInfo {
	return ProviderFileInfo{ID: id, Filename: id + ".txt", Size: int64(len(p.files[id])), CreatedAt: time.Unix(1700000000, 0).UTC(), Downloadable: true}
}

func (p *fakeProvider) Stat(_ context.Context, id string) (ProviderFileInfo, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.files[id]; !ok {
		return ProviderFileInfo{}, fmt.Errorf("fake provider: %w", ErrNotFound)
	}
	return p.info(id), nil
}

func (p *fakeProvider) Content(_ context.Context, id string) (ProviderContent, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	data, ok := p.files[id]
	if !ok {
		return ProviderContent{}, fmt.Errorf("fake provider: %w", ErrNotFound)
	}
	return ProviderContent{Body: io.NopCloser(bytes.NewReader(data)), ContentType: "text/plain", Length: int64(len(data))}, nil
}

// fakeOpener "unseals" a key by reading it as plain text, for the
// providers it was given.
type fakeOpener struct {
	providers map[string]*fakeProvider
	opened    []string // workspace/provider/key
	err       error
}

func (o *fakeOpener) Open(ws, provider string, sealed []byte) (Provider, error) {
	o.opened = append(o.opened, ws+"/"+provider+"/"+string(sealed))
	if o.err != nil {
		return nil, o.err
	}
	p, ok := o.providers[provider]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownProvider, provider)
	}
	p.key = string(sealed)
	return p, nil
}

// fakeWorkspaces knows workspaces by id and owner, and each user's default.
type fakeWorkspaces struct {
	owner         map[string]string // workspace id -> user id
	defaults      map[string]string // user id -> workspace id
	err           error
	getCalled     int
	defaultCalled int
}

// aliceAndBob: alice has two workspaces (aliceDefault her default), bob one.
func aliceAndBob() *fakeWorkspaces {
	return &fakeWorkspaces{
		owner:    map[string]string{aliceDefault: "alice", aliceOther: "alice", bobDefault: "bob"},
		defaults: map[string]string{"alice": aliceDefault, "bob": bobDefault},
	}
}

func (w *fakeWorkspaces) Get(_ context.Context, userID, id string) (workspace.Workspace, error) {
	w.getCalled++
	if w.err != nil {
		return workspace.Workspace{}, w.err
	}
	if w.owner[id] != userID {
		return workspace.Workspace{}, workspace.ErrNotFound
	}
	return workspace.Workspace{ID: id}, nil
}

func (w *fakeWorkspaces) Default(_ context.Context, userID string) (workspace.Workspace, error) {
	w.defaultCalled++
	if w.err != nil {
		return workspace.Workspace{}, w.err
	}
	id, ok := w.defaults[userID]
	if !ok {
		return workspace.Workspace{}, errors.New("fake workspaces: no default")
	}
	return workspace.Workspace{ID: id}, nil
}

// fakeAdmission records what it admitted and every release.
type fakeAdmission struct {
	mu       sync.Mutex
	admitted []admitted
	released []int64
	err      error
}

type admitted struct {
	keyID, workspaceID string
	declared           int64
}

func (a *fakeAdmission) Admit(_ context.Context, keyID, ws string, declared int64) (func(int64), error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.admitted = append(a.admitted, admitted{keyID, ws, declared})
	if a.err != nil {
		return nil, a.err
	}
	return func(actual int64) {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.released = append(a.released, actual)
	}, nil
}

func (a *fakeAdmission) releases() []int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]int64(nil), a.released...)
}

// logRecorder is a slog.Handler keeping every record, so tests can assert
// what the service logged.
type logRecorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logRecorder) WithGroup(string) slog.Handler            { return l }

func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = append(l.records, r.Clone())
	return nil
}

// count returns how many records match keep.
func (l *logRecorder) count(keep func(slog.Record) bool) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.records {
		if keep(r) {
			n++
		}
	}
	return n
}

func (l *logRecorder) withMessage(msg string) int {
	return l.count(func(r slog.Record) bool { return r.Message == msg })
}

func (l *logRecorder) atLevel(level slog.Level) int {
	return l.count(func(r slog.Record) bool { return r.Level == level })
}

// String lists the messages, for failure output.
func (l *logRecorder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	msgs := make([]string, len(l.records))
	for i, r := range l.records {
		msgs[i] = r.Level.String() + " " + r.Message
	}
	return strings.Join(msgs, "; ")
}
