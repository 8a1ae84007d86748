package catalog

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultDebounce is how long Watch waits after the last change in the
// catalog's directory before re-reading the file: editors and ConfigMap
// updates touch several files in a burst.
const DefaultDebounce = 250 * time.Millisecond

// Source holds the catalog currently served and replaces it when the file
// changes. Current is a single atomic load: a request that reads it once
// sees one whole catalog version from start to end, however many reloads
// happen meanwhile. A file that fails to load never replaces the catalog
// being served.
//
// All methods are safe for concurrent use.
type Source struct {
	path     string // "" for a static source
	log      *slog.Logger
	onReload func(error)
	debounce time.Duration

	cur atomic.Pointer[Catalog]

	mu       sync.Mutex // serialises reloads
	lastSeen [sha256.Size]byte

	// watching, when set (tests), is called once Watch is watching.
	watching func()
}

// Option configures a Source.
type Option func(*Source)

// WithOnReload registers fn, called after every reload attempt of the file
// (by Reload or Watch) with nil or the error that kept the previous catalog,
// e.g. to count reloads in metrics. fn runs on the reloading goroutine and
// must not block.
func WithOnReload(fn func(err error)) Option { return func(s *Source) { s.onReload = fn } }

// WithDebounce sets the quiet period Watch waits for (DefaultDebounce).
func WithDebounce(d time.Duration) Option { return func(s *Source) { s.debounce = d } }

// Open loads the catalog file at path and returns a Source serving it. A
// missing or invalid file is an error (a *LoadError lists every problem):
// the caller decides whether to stop or to serve the embedded catalog.
func Open(path string, log *slog.Logger, opts ...Option) (*Source, error) {
	s := newSource(path, log, opts)
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	c, err := build(data, path)
	if err != nil {
		return nil, err
	}
	s.lastSeen = sha256.Sum256(data)
	s.serve(c)
	return s, nil
}

// NewStatic returns a Source that always serves c, such as the catalog
// embedded in the binary (see FromBytes): Reload and Watch have nothing to
// re-read and return nil.
func NewStatic(c *Catalog, log *slog.Logger, opts ...Option) *Source {
	s := newSource("", log, opts)
	s.serve(c)
	return s
}

// serve makes c the catalog served, warning of what it was accepted with.
func (s *Source) serve(c *Catalog) {
	for _, n := range c.Notes() {
		s.log.Warn("catalog entry accepted with a note", "path", s.path, "model", n.Model, "field", n.Field, "line", n.Line, "note", n.Message)
	}
	s.cur.Store(c)
}

func newSource(path string, log *slog.Logger, opts []Option) *Source {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Source{path: path, log: log, debounce: DefaultDebounce}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Current returns the catalog being served. Read it once per request.
func (s *Source) Current() *Catalog { return s.cur.Load() }

// Path returns the file the source reads ("" for a static source).
func (s *Source) Path() string { return s.path }

// Reload re-reads the file now (the wiring calls it on SIGHUP). When the file
// is good it replaces the catalog; when not, the previous catalog keeps
// serving, the problems are logged, and the error (a *LoadError for an
// invalid file) is returned.
func (s *Source) Reload() error {
	if s.path == "" {
		return nil
	}
	return s.reload(true)
}

// reload loads the file; unless force, a file identical to the last one
// read (good or bad) is skipped, so that bursts of events cost one parse.
func (s *Source) reload(force bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, err := readFile(s.path)
	if err != nil {
		s.report(err)
		return err
	}
	sum := sha256.Sum256(data)
	if !force && sum == s.lastSeen {
		return nil
	}
	s.lastSeen = sum
	c, err := build(data, s.path)
	if err != nil {
		s.report(err)
		return err
	}
	s.serve(c)
	s.log.Info("catalog loaded", "path", s.path, "models", c.Len(), "digest", c.Digest())
	if s.onReload != nil {
		s.onReload(nil)
	}
	return nil
}

func (s *Source) report(err error) {
	attrs := []any{slog.String("path", s.path)}
	if le := (*LoadError)(nil); errors.As(err, &le) {
		attrs = append(attrs, slog.Int("problems", len(le.Problems)), slog.Any("problem", le.Strings()))
	} else {
		attrs = append(attrs, slog.Any("error", err))
	}
	if c := s.cur.Load(); c != nil {
		attrs = append(attrs, slog.String("serving_digest", c.Digest()))
	}
	s.log.Error("catalog reload refused; the previous catalog keeps serving", attrs...)
	if s.onReload != nil {
		s.onReload(err)
	}
}

// readFile reads a catalog file, one byte past MaxFileBytes at most, so an
// oversized file is refused by compile without being read whole.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("catalog: read %s: %w", path, err)
	}
	return data, nil
}

// Watch reloads the file whenever it changes, until ctx is done (then it
// returns nil). It watches the file's directory rather than the file, so
// that replacements are seen however they are made: in-place writes, an
// editor's write-and-rename, or a Kubernetes ConfigMap update (which swaps a
// "..data" symlink beside the file). After a burst of events has been quiet
// for the debounce period the file is re-read and, when its content differs
// from the last version read, loaded as Reload does. A file that is briefly
// missing or invalid is reported and retried on the next change.
//
// Watch returns an error only when the watch cannot be set up. On a static
// source it just waits for ctx.
func (s *Source) Watch(ctx context.Context) error {
	if s.path == "" {
		<-ctx.Done()
		return nil
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("catalog: watch: %w", err)
	}
	defer w.Close()
	dir := filepath.Dir(s.path)
	if err := w.Add(dir); err != nil {
		return fmt.Errorf("catalog: watch %s: %w", dir, err)
	}
	if s.watching != nil {
		s.watching()
	}
	// A change made between Open and now would have no event.
	_ = s.reload(false)

	timer := time.NewTimer(s.debounce)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			if ev.Op == fsnotify.Chmod {
				continue
			}
			timer.Reset(s.debounce)
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			// Overflow and similar: re-read to be sure nothing was missed.
			s.log.Warn("catalog watch error", "path", s.path, "error", err)
			timer.Reset(s.debounce)
		case <-timer.C:
			_ = s.reload(false)
		}
	}
}
