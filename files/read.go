package files

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/aigateway/gateway/internal/invalid"

	"github.com/aigateway/gateway/files/blob"
	"github.com/aigateway/gateway/internal/outage"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/workspace"
)

// Errors of the read side.
var (
	// ErrNotDownloadable: the deployment does not let clients read back
	// what they uploaded (files.downloadable is false), and the key is not
	// a service key. 400 "File is not downloadable".
	ErrNotDownloadable = errors.New("file is not downloadable")
	// ErrContentMissing: the file's record is there but its object is not.
	ErrContentMissing = errors.New("file content is missing")
	// ErrInvalidParam: a query or path parameter is malformed; the error is
	// a *ParamError naming it.
	ErrInvalidParam = errors.New("invalid parameter")
)

// ParamError names the malformed parameter and what is wrong with it.
type ParamError struct {
	Param   string
	Problem string
}

func (e *ParamError) Error() string { return e.Param + ": " + e.Problem }
func (e *ParamError) Unwrap() error { return ErrInvalidParam }

// FieldProblems names the parameter.
func (e *ParamError) FieldProblems() []invalid.Field {
	return []invalid.Field{{Name: e.Param, Problem: e.Problem}}
}

func paramError(param, problem string) error { return &ParamError{Param: param, Problem: problem} }

// Page sizes of a listing.
const (
	DefaultListLimit = 100
	MaxListLimit     = 1000
)

// ReadConfig configures the read side.
type ReadConfig struct {
	// Downloadable lets every key read back the content of uploads
	// (files.downloadable); service keys always may.
	Downloadable bool
	// CursorKey signs listing cursors. Replicas must share it. At least 32
	// bytes.
	CursorKey []byte
	// LookupTTL is how long the service trusts, without asking the store
	// again, the workspaces it found for a key and the provider client it
	// bound to a workspace's stored key (what the store holds and the key
	// unsealed): a provider key replaced, disabled or deleted, or a
	// workspace deleted, through another replica or the CLI, takes effect
	// here within LookupTTL. Changes made through this replica take effect
	// at once when its owner calls Forget. Zero: the store is read on every
	// request.
	LookupTTL time.Duration

	// now is the clock of the lookups; nil: time.Now.
	now func() time.Time
}

// ReadDeps are the collaborators of a ReadService. Opener may be nil: the
// provider routes then answer ErrUnknownProvider.
type ReadDeps struct {
	Records    Records
	Keys       ProviderKeys
	Bucket     blob.Bucket
	Opener     Opener
	Workspaces Workspaces
	Log        *slog.Logger
}

// ReadService lists, describes, deletes and serves stored files, on the
// gateway's own storage and on the providers. It applies the access rules
// of uploads: a file of a workspace the key cannot use does not exist for
// it, and a workspace_id it cannot use is ErrWorkspaceForbidden. It is safe
// for concurrent use.
type ReadService struct {
	cfg     ReadConfig
	d       ReadDeps
	cursors cursorSigner
	// With a LookupTTL: the caches of d.Workspaces (which wraps the
	// given one) and of the provider clients bound to stored keys.
	workspaces *expiring[userRef, workspace.Workspace]
	providers  *expiring[providerUse, Provider]
}

// NewReadService returns a ReadService. It fails when the cursor key is
// shorter than 32 bytes.
func NewReadService(cfg ReadConfig, d ReadDeps) (*ReadService, error) {
	if len(cfg.CursorKey) < 32 {
		return nil, errors.New("files: the cursor key must hold at least 32 bytes")
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	s := &ReadService{cfg: cfg, d: d, cursors: cursorSigner{key: cfg.CursorKey}}
	if cfg.LookupTTL > 0 {
		now := cfg.now
		if now == nil {
			now = time.Now
		}
		s.workspaces = newExpiring[userRef, workspace.Workspace](cfg.LookupTTL, now)
		s.providers = newExpiring[providerUse, Provider](cfg.LookupTTL, now)
		s.d.Workspaces = cachedWorkspaces{Workspaces: d.Workspaces, cache: s.workspaces}
	}
	return s, nil
}

// Forget drops the workspaces and provider clients the service remembers
// (ReadConfig.LookupTTL), and any being looked up now, so every request
// from now on reads the store again. Call it once a change of a provider
// key or a workspace's deletion is committed. Safe for concurrent use.
func (s *ReadService) Forget() {
	if s.providers != nil {
		s.workspaces.forget()
		s.providers.forget()
	}
}

// Target names the workspace and destination of a request, as the query
// parameters workspace_id and provider do.
type Target struct {
	Key         *keys.APIKey
	WorkspaceID string
	Provider    string // "" for the gateway's own storage
}

// ListParams are the paging parameters of a listing, read by the edge.
// At most one of Cursor, After, AfterID and BeforeID may be set.
type ListParams struct {
	Target
	Limit int   // 1 to MaxListLimit; 0 for DefaultListLimit
	Order Order // OrderDefault: newest first, or the cursor's order
	// Purpose keeps only the files uploaded for it (OpenAI's filter);
	// "" for all.
	Purpose Purpose
	// Cursor continues a previous page of ours; After (OpenAI) and AfterID
	// (Anthropic) continue after a file id; BeforeID pages back from one.
	Cursor, After, AfterID, BeforeID string
}

// Order is the order of a listing.
type Order string

// The orders of a listing.
const (
	OrderDefault Order = ""
	OrderAsc     Order = "asc"  // oldest first
	OrderDesc    Order = "desc" // newest first
)

// ParseOrder reads an order as the API names it: asc or desc.
func ParseOrder(s string) (Order, bool) {
	switch o := Order(s); o {
	case OrderAsc, OrderDesc:
		return o, true
	}
	return OrderDefault, false
}

// File is a file as the routes show it.
type File struct {
	Record
	// Downloadable says whether the file's content may be read by keys
	// other than service keys.
	Downloadable bool
}

// Page is one page of a listing, in the order asked for.
type Page struct {
	Files   []File
	HasMore bool
	// Cursor continues after the last file; "" on the last page.
	Cursor string
}

// List returns one page of the target's files.
//
// Errors: *ParamError for a malformed limit, order, cursor (also one made
// for another workspace, destination or order) or id parameter;
// ErrInvalidWorkspaceID, ErrWorkspaceForbidden; ErrUnknownProvider,
// ErrNoProviderKey; the provider's and the catalog's failures.
func (s *ReadService) List(ctx context.Context, p ListParams) (Page, error) {
	limit, asc, err := parsePaging(p)
	if err != nil {
		return Page{}, err
	}
	ws, err := s.workspace(ctx, p.Target, false)
	if err != nil {
		return Page{}, err
	}
	purpose := p.Purpose
	if purpose != "" {
		if _, err := ParsePurpose(string(purpose)); err != nil {
			return Page{}, paramError("purpose", purposeRule)
		}
		if p.Provider != "" {
			return Page{}, paramError("purpose", "filters the gateway's own files only; leave it out with provider")
		}
	}
	var start *Position
	backward := false
	switch {
	case p.Cursor != "":
		c, err := s.cursors.open(p.Cursor)
		if err != nil || c.Workspace != ws || c.Provider != p.Provider || c.Purpose != purpose {
			return Page{}, paramError("cursor", "not a cursor of this listing")
		}
		if p.Order != OrderDefault && c.Ascending != asc {
			return Page{}, paramError("order", "differs from the cursor's")
		}
		asc, start, backward = c.Ascending, &c.Position, c.Backward
	case p.After != "" || p.AfterID != "" || p.BeforeID != "":
		param, id := "after", p.After
		if p.AfterID != "" {
			param, id = "after_id", p.AfterID
		}
		if p.BeforeID != "" {
			param, id, backward = "before_id", p.BeforeID, true
		}
		if !ValidFileID(id) {
			return Page{}, paramError(param, "malformed file id")
		}
		if p.Provider != "" {
			start = &Position{ID: id}
			break
		}
		// The position, not the row: a file deleted between two pages
		// still anchors the next one.
		pos, err := s.d.Records.FilePosition(ctx, ws, id)
		if errors.Is(err, ErrNotFound) {
			return Page{}, paramError(param, "no such file")
		}
		if err != nil {
			return Page{}, err
		}
		start = &pos
	}
	if p.Provider != "" {
		return s.listProvider(ctx, ws, p.Provider, p.Key.ID, limit, asc, start, backward)
	}
	// Paging back from a file is paging forward in the other order, then
	// turning the page around.
	page, err := s.d.Records.ListFiles(ctx, ListQuery{WorkspaceID: ws, Limit: limit, Ascending: asc != backward, After: start, Purpose: purpose})
	if err != nil {
		return Page{}, err
	}
	out := Page{Files: make([]File, len(page.Records)), HasMore: page.HasMore}
	for i, r := range page.Records {
		j := i
		if backward {
			j = len(page.Records) - 1 - i
		}
		out.Files[j] = s.file(r)
	}
	if page.HasMore {
		// A page that has more always says how to get it: forward after its
		// last file, or, paging back, on back from the file furthest back
		// (the last one read, the first one shown).
		last := page.Records[len(page.Records)-1]
		out.Cursor = s.cursors.seal(cursor{Workspace: ws, Ascending: asc, Backward: backward, Purpose: purpose,
			Position: Position{CreatedAt: last.CreatedAt, ID: last.ID}})
	}
	return out, nil
}

func (s *ReadService) listProvider(ctx context.Context, ws, name, keyID string, limit int, asc bool, start *Position, backward bool) (Page, error) {
	prov, err := s.provider(ctx, ws, name, keyID)
	if err != nil {
		return Page{}, err
	}
	q := ProviderListQuery{Limit: limit, Ascending: asc}
	if start != nil {
		if backward {
			q.BeforeID = start.ID
		} else {
			q.AfterID = start.ID
		}
	}
	pp, err := prov.List(ctx, q)
	if err != nil {
		return Page{}, providerReadError(err)
	}
	out := Page{Files: make([]File, len(pp.Files)), HasMore: pp.HasMore}
	for i, f := range pp.Files {
		out.Files[i] = providerFile(ws, name, f)
	}
	if pp.HasMore && !backward && len(pp.Files) > 0 {
		out.Cursor = s.cursors.seal(cursor{Workspace: ws, Provider: name, Ascending: asc, Position: Position{ID: pp.Files[len(pp.Files)-1].ID}})
	}
	return out, nil
}

// LimitRule is what a listing's limit must be.
var LimitRule = fmt.Sprintf("must be an integer from 1 to %d", MaxListLimit)

// parsePaging checks limit, order and the one way to say where to start.
func parsePaging(p ListParams) (limit int, asc bool, err error) {
	limit = cmp.Or(p.Limit, DefaultListLimit)
	if limit < 1 || limit > MaxListLimit {
		return 0, false, paramError("limit", LimitRule)
	}
	switch p.Order {
	case OrderDefault, OrderDesc:
	case OrderAsc:
		asc = true
	default:
		return 0, false, paramError("order", "must be asc or desc")
	}
	// Of two ways to say where to start, the second one given is the one
	// at fault.
	set := 0
	for _, v := range []struct{ name, value string }{{"cursor", p.Cursor}, {"after", p.After}, {"after_id", p.AfterID}, {"before_id", p.BeforeID}} {
		if v.value == "" {
			continue
		}
		if set++; set > 1 {
			return 0, false, paramError(v.name, "use only one of cursor, after, after_id and before_id")
		}
	}
	return limit, asc, nil
}

// ValidFileID reports whether id can be a file id: ours (file-…) or a
// provider's (OpenAI's file-…, Anthropic's file_…), 1 to 128 letters,
// digits, '-' and '_'. Anything else cannot name a file and is refused
// before it reaches a store or a provider's URL.
func ValidFileID(id string) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for _, c := range []byte(id) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// FileParams name one file.
type FileParams struct {
	Target
	ID string
}

// Get describes one file. A file of another workspace, an unknown id and
// a deleted file are all ErrNotFound. Errors as List, and *ParamError
// naming file_id for a malformed id.
func (s *ReadService) Get(ctx context.Context, p FileParams) (File, error) {
	ws, err := s.fileWorkspace(ctx, p, false)
	if err != nil {
		return File{}, err
	}
	if p.Provider != "" {
		prov, err := s.provider(ctx, ws, p.Provider, p.Key.ID)
		if err != nil {
			return File{}, err
		}
		info, err := prov.Stat(ctx, p.ID)
		if err != nil {
			return File{}, providerReadError(err)
		}
		return providerFile(ws, p.Provider, info), nil
	}
	rec, err := s.d.Records.FileByID(ctx, ws, p.ID)
	if err != nil {
		return File{}, err
	}
	return s.file(rec), nil
}

// Delete removes one file and gives its bytes back to the workspace's
// quota. On our storage the record goes first, in one transaction with
// the quota, then the object: a crash between the two leaves an object
// without a record, which the storage sweeper collects, never a record
// without its object. A file at a provider goes at the provider first,
// then our record of it (if any); the provider not knowing it while we
// still hold a record counts as deleted, so a retry completes.
//
// Errors: keys.ErrReadOnlyKey for a service key; ErrNotFound (also for the
// loser of two concurrent deletes); errors as Get.
func (s *ReadService) Delete(ctx context.Context, p FileParams) error {
	ws, err := s.fileWorkspace(ctx, p, true)
	if err != nil {
		return err
	}
	provider := p.Provider
	if provider == "" {
		rec, err := s.d.Records.FileByID(ctx, ws, p.ID)
		if err != nil {
			return err
		}
		if IsProvider(rec.Backend) {
			provider = rec.Backend // uploaded with provider=: its bytes are there
		}
	} else {
		// A record the gateway keeps names where the file lives; a provider
		// named otherwise would be sent a DELETE for an id it never gave,
		// and the gateway's own object left behind.
		rec, err := s.d.Records.FileByID(ctx, ws, p.ID)
		switch {
		case err == nil && rec.Backend != provider:
			where := "the gateway's own storage"
			if IsProvider(rec.Backend) {
				where = rec.Backend
			}
			return paramError("provider", "the file is stored on "+where+", not "+provider+": delete it without provider")
		case err != nil && !errors.Is(err, ErrNotFound):
			return err
		}
	}
	if provider != "" {
		prov, err := s.provider(ctx, ws, provider, p.Key.ID)
		if err != nil {
			return err
		}
		provErr := prov.Delete(ctx, p.ID)
		if provErr != nil && !errors.Is(provErr, ErrNotFound) {
			return providerReadError(provErr)
		}
		_, err = s.d.Records.DeleteFile(ctx, ws, p.ID)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, ErrNotFound):
			return providerReadError(provErr) // nil when the provider deleted it
		default:
			return err
		}
	}
	rec, err := s.d.Records.DeleteFile(ctx, ws, p.ID)
	if err != nil {
		return err
	}
	// The record is gone and the quota given back: the answer is success
	// whatever happens to the object now.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := s.d.Bucket.Delete(ctx, rec.ObjectKey); err != nil {
		s.d.Log.Error("could not remove the object of a deleted file; the sweeper collects it",
			slog.String("file_id", rec.ID), slog.String("object", rec.ObjectKey), slog.Any("error", err))
	}
	s.d.Log.Info("file deleted", slog.String("file_id", rec.ID), slog.String("workspace_id", ws),
		slog.String("key_id", p.Key.ID), slog.Int64("size", rec.Size))
	return nil
}

// Content is a file's bytes, ready to be served.
type Content struct {
	File File
	// Size is the length in bytes; -1 when a provider did not say.
	Size        int64
	ContentType string

	open func(ctx context.Context, offset, length int64) (io.ReadCloser, error)
	body io.ReadCloser
}

// RangedContent is content of a known size whose parts open can read.
func RangedContent(f File, contentType string, size int64, open func(ctx context.Context, offset, length int64) (io.ReadCloser, error)) *Content {
	return &Content{File: f, Size: size, ContentType: contentType, open: open}
}

// StreamContent is content read once from body, of length bytes (-1:
// unknown).
func StreamContent(f File, contentType string, length int64, body io.ReadCloser) *Content {
	return &Content{File: f, Size: length, ContentType: contentType, body: body}
}

// Ranged reports whether parts of the content can be read (OpenRange).
func (c *Content) Ranged() bool { return c.open != nil }

// OpenRange reads [offset, offset+length) of a Ranged content; offset
// within the content and length at least 1.
func (c *Content) OpenRange(ctx context.Context, offset, length int64) (io.ReadCloser, error) {
	if c.open == nil {
		return nil, errors.New("files: content cannot be read in ranges")
	}
	rc, err := c.open(ctx, offset, length)
	if err != nil {
		return nil, storageReadError(err)
	}
	return rc, nil
}

// Body is the whole content. For a provider file it is the stream already
// opened; the caller closes it.
func (c *Content) Body(ctx context.Context) (io.ReadCloser, error) {
	if c.body != nil {
		return c.body, nil
	}
	if c.Size == 0 {
		return io.NopCloser(eofReader{}), nil
	}
	return c.OpenRange(ctx, 0, c.Size)
}

// Close releases a provider's stream that was not read.
func (c *Content) Close() error {
	if c.body != nil {
		return c.body.Close()
	}
	return nil
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// Open prepares the content of one file. Only a service key may read the
// content of an upload when the deployment's files.downloadable is false
// (ErrNotDownloadable). The caller closes the Content.
func (s *ReadService) Open(ctx context.Context, p FileParams) (*Content, error) {
	ws, err := s.fileWorkspace(ctx, p, false)
	if err != nil {
		return nil, err
	}
	provider, rec := p.Provider, Record{}
	if provider == "" {
		if rec, err = s.d.Records.FileByID(ctx, ws, p.ID); err != nil {
			return nil, err
		}
		if !s.cfg.Downloadable && p.Key.Role != keys.RoleService {
			return nil, ErrNotDownloadable
		}
		if IsProvider(rec.Backend) {
			provider = rec.Backend
		}
	}
	if provider != "" {
		prov, err := s.provider(ctx, ws, provider, p.Key.ID)
		if err != nil {
			return nil, err
		}
		pc, err := prov.Content(ctx, p.ID)
		if err != nil {
			return nil, providerReadError(err)
		}
		f := File{Record: Record{ID: p.ID, WorkspaceID: ws, Backend: provider, MimeType: pc.ContentType}}
		if rec.ID != "" {
			f.Record = rec
		}
		return StreamContent(f, cmp.Or(pc.ContentType, rec.MimeType, "application/octet-stream"), pc.Length, pc.Body), nil
	}
	key := rec.ObjectKey
	open := func(ctx context.Context, offset, length int64) (io.ReadCloser, error) {
		rc, err := s.d.Bucket.OpenRange(ctx, key, offset, length)
		if errors.Is(err, blob.ErrNotFound) {
			// The record outlived its object (removed behind the gateway,
			// or lost by the store): the operator must hear of it; the
			// client gets a clear answer, not a 500.
			s.d.Log.Error("file record without its object", "file_id", rec.ID, "workspace_id", rec.WorkspaceID,
				"backend", rec.Backend, "object_key", key)
			return nil, fmt.Errorf("%w: file %s", ErrContentMissing, rec.ID)
		}
		return rc, err
	}
	return RangedContent(s.file(rec), rec.MimeType, rec.Size, open), nil
}

// file is rec as shown, with the deployment's downloadable flag.
func (s *ReadService) file(rec Record) File {
	return File{Record: rec, Downloadable: s.cfg.Downloadable && !IsProvider(rec.Backend)}
}

// Describe is the file rec as the read routes show it, so an upload's answer
// says what a later GET of it says.
func (s *ReadService) Describe(rec Record) File { return s.file(rec) }

// providerFile is a provider's description of one of its files as shown.
func providerFile(ws, provider string, f ProviderFileInfo) File {
	return File{
		Record: Record{
			ID: f.ID, WorkspaceID: ws, Filename: f.Filename, MimeType: f.MimeType, Size: f.Size,
			Backend: provider, ObjectKey: f.ID, Purpose: Purpose(f.Purpose), CreatedAt: f.CreatedAt,
		},
		Downloadable: f.Downloadable,
	}
}

// fileWorkspace checks the id and resolves the workspace of a one-file
// request.
func (s *ReadService) fileWorkspace(ctx context.Context, p FileParams, write bool) (string, error) {
	if !ValidFileID(p.ID) {
		return "", paramError("file_id", "malformed file id")
	}
	return s.workspace(ctx, p.Target, write)
}

// workspace checks the provider name and resolves the workspace of a
// request (resolveWorkspace). Service keys only read: a write is
// keys.ErrReadOnlyKey.
func (s *ReadService) workspace(ctx context.Context, t Target, write bool) (string, error) {
	k := t.Key
	if write && k.Role == keys.RoleService {
		return "", keys.ErrReadOnlyKey
	}
	if t.Provider != "" && !IsProvider(t.Provider) {
		return "", ErrUnknownProvider
	}
	return resolveWorkspace(ctx, s.d.Workspaces, k, t.WorkspaceID)
}

// provider opens the client of provider name with the key of ws that the
// calling key keyID uses.
func (s *ReadService) provider(ctx context.Context, ws, name, keyID string) (Provider, error) {
	if s.providers == nil {
		return openProvider(ctx, s.d.Keys, s.d.Opener, ws, name, keyID)
	}
	k := providerUse{ws, name, keyID}
	p, ok, t := s.providers.get(k)
	if ok {
		return p, nil
	}
	p, err := openProvider(ctx, s.d.Keys, s.d.Opener, ws, name, keyID)
	if err == nil {
		s.providers.put(k, p, t)
	}
	return p, err
}

// providerReadError classifies a provider's failure on the read routes: its
// not-found, rate limit and rejection of the request are the client's
// answers; anything else is the
// provider's error (502) or timeout (504).
func providerReadError(err error) error {
	// A *RateLimitedError keeps its Retry-After for the edge.
	if err == nil || errors.Is(err, ErrNotFound) || errors.Is(err, ErrProviderRateLimited) ||
		errors.Is(err, ErrProviderRejected) || errors.Is(err, context.Canceled) {
		return err
	}
	return providerError(err)
}

// storageReadError classifies a failure to read our own storage. An object
// missing while its record exists is the storage's fault, not the client's.
func storageReadError(err error) error {
	switch {
	case errors.Is(err, context.Canceled):
		return err
	case errors.Is(err, outage.ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%w: %w", ErrStorageUnavailable, err)
	default:
		return fmt.Errorf("files: read object: %w", err)
	}
}
