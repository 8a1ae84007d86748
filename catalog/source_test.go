package catalog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// versionYAML is a valid catalog whose two models carry version in their
// names, so that a reader can tell which file an answer came from.
func versionYAML(version int) string {
	model := func(id string) string {
		return fmt.Sprintf(`
  - id: %s
    canonical_slug: %s
    name: "v%d"
    created: 1700000000
    context_length: 1000
    pricing: {prompt: "0.00000%d", completion: "0.000002"}
    architecture: {modality: text->text, input_modalities: [text], output_modalities: [text]}
    top_provider: {is_moderated: false}
    per_request_limits: null
    supported_parameters: [max_tokens]
    default_parameters: null
    supported_voices: null`, id, id, version, version%10)
	}
	return "models:" + model("v/one") + model("v/two") + "\n"
}

const badYAML = "models:\n  - id: v/one\n    created: yesterday\n"

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func nameOf(t *testing.T, c *Catalog, id string) string {
	t.Helper()
	e, ok := c.LookupID(id)
	if !ok {
		t.Fatalf("%s not found", id)
	}
	return e.Model.Name
}

// reloads collects OnReload calls.
type reloads chan error

func (r reloads) fn(err error) { r <- err }

// next waits for the next reload attempt.
func (r reloads) next(t *testing.T) error {
	t.Helper()
	select {
	case err := <-r:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("no reload within 10s")
		return nil
	}
}

// nextOK waits for a successful reload, skipping failures (a file caught
// half-written by an in-place write fails once, then loads).
func (r reloads) nextOK(t *testing.T) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case err := <-r:
			if err == nil {
				return
			}
		case <-deadline:
			t.Fatal("no successful reload within 10s")
		}
	}
}

func TestSourceReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "models.yaml")
	writeFile(t, path, versionYAML(1))
	logs := &recordedLogs{}
	events := make(reloads, 10)
	s, err := Open(path, slog.New(logs), WithOnReload(events.fn))
	if err != nil {
		t.Fatal(err)
	}
	first := s.Current()
	if nameOf(t, first, "v/one") != "v1" || s.Path() != path {
		t.Fatal("wrong initial catalog")
	}

	// good -> bad: refused, listed, the old catalog keeps serving.
	writeFile(t, path, badYAML)
	err = s.Reload()
	var le *LoadError
	if !errors.As(err, &le) || len(le.Problems) == 0 {
		t.Fatalf("Reload of a bad file: %v, want a *LoadError", err)
	}
	if got := events.next(t); !errors.Is(got, ErrInvalid) {
		t.Errorf("OnReload got %v", got)
	}
	if s.Current() != first {
		t.Error("a bad file replaced the catalog")
	}
	entries := logs.withMessage("catalog reload refused; the previous catalog keeps serving")
	if len(entries) != 1 {
		t.Fatalf("logged %d refusals, want 1", len(entries))
	}
	if got := entries[0]["problems"]; got != int64(len(le.Problems)) {
		t.Errorf("logged problems = %v, want %d", got, len(le.Problems))
	}

	// bad -> good.
	writeFile(t, path, versionYAML(2))
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := events.next(t); got != nil {
		t.Errorf("OnReload got %v", got)
	}
	if nameOf(t, s.Current(), "v/one") != "v2" {
		t.Error("the good file was not loaded")
	}
	if nameOf(t, first, "v/one") != "v1" {
		t.Error("the old catalog changed under its readers")
	}

	// A missing file is refused the same way.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := s.Reload(); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Reload of a missing file: %v", err)
	}
	if nameOf(t, s.Current(), "v/one") != "v2" {
		t.Error("a missing file replaced the catalog")
	}
}

func TestOpenRefusesBadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "models.yaml")
	writeFile(t, path, badYAML)
	if _, err := Open(path, slog.New(slog.DiscardHandler)); !errors.Is(err, ErrInvalid) {
		t.Errorf("Open of a bad file: %v", err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "none.yaml"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open of a missing file: %v", err)
	}
}

// watchedSource opens path and runs Watch until the test ends, returning once
// the watch is in place.
func watchedSource(t *testing.T, path string) (*Source, reloads) {
	t.Helper()
	events := make(reloads, 100)
	s, err := Open(path, slog.New(slog.DiscardHandler), WithOnReload(events.fn), WithDebounce(20*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	s.watching = func() { close(ready) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Watch(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Watch: %v", err)
		}
	})
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		t.Fatal("Watch did not start")
	}
	return s, events
}

func TestWatch(t *testing.T) {
	tests := []struct {
		name string
		// setup writes version 1 and returns the path to open.
		setup func(t *testing.T, dir string) string
		// replace makes the file read content.
		replace func(t *testing.T, dir, content string)
	}{
		{
			name: "write in place",
			setup: func(t *testing.T, dir string) string {
				p := filepath.Join(dir, "models.yaml")
				writeFile(t, p, versionYAML(1))
				return p
			},
			replace: func(t *testing.T, dir, content string) { writeFile(t, filepath.Join(dir, "models.yaml"), content) },
		},
		{
			name: "write and rename",
			setup: func(t *testing.T, dir string) string {
				p := filepath.Join(dir, "models.yaml")
				writeFile(t, p, versionYAML(1))
				return p
			},
			replace: func(t *testing.T, dir, content string) {
				tmp := filepath.Join(dir, ".models.yaml.tmp")
				writeFile(t, tmp, content)
				if err := os.Rename(tmp, filepath.Join(dir, "models.yaml")); err != nil {
					t.Fatal(err)
				}
			},
		},
		{
			// What the kubelet does for a mounted ConfigMap: models.yaml ->
			// ..data/models.yaml, ..data -> ..<timestamp>; an update writes a
			// new timestamped directory and renames a new ..data over the
			// old one.
			name: "configmap symlink swap",
			setup: func(t *testing.T, dir string) string {
				swapConfigMap(t, dir, versionYAML(1))
				if err := os.Symlink(filepath.Join("..data", "models.yaml"), filepath.Join(dir, "models.yaml")); err != nil {
					t.Fatal(err)
				}
				return filepath.Join(dir, "models.yaml")
			},
			replace: swapConfigMap,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, events := watchedSource(t, tc.setup(t, dir))
			first := s.Current()

			tc.replace(t, dir, versionYAML(2))
			events.nextOK(t)
			if got := nameOf(t, s.Current(), "v/one"); got != "v2" {
				t.Fatalf("after the change: %s, want v2", got)
			}

			good := s.Current()
			tc.replace(t, dir, badYAML)
			if err := events.next(t); err == nil {
				t.Fatal("a bad file reloaded without error")
			}
			if s.Current() != good {
				t.Error("a bad file replaced the catalog")
			}

			tc.replace(t, dir, versionYAML(3))
			events.nextOK(t)
			if got := nameOf(t, s.Current(), "v/one"); got != "v3" {
				t.Errorf("after the fix: %s, want v3", got)
			}
			if nameOf(t, first, "v/one") != "v1" {
				t.Error("an old catalog changed")
			}
		})
	}
}

var swapN int

func swapConfigMap(t *testing.T, dir, content string) {
	t.Helper()
	swapN++
	ts := fmt.Sprintf("..2026_08_18_00_00_%02d.%d", swapN, swapN)
	if err := os.Mkdir(filepath.Join(dir, ts), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, ts, "models.yaml"), content)
	tmp := filepath.Join(dir, "..data_tmp")
	if err := os.Symlink(ts, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
}

// TestSwapNeverMixes reads two models per "request" from one Current() while
// the file flips between versions: both answers must come from one version.
// Run with -race, it also checks that catalogs are never written after
// publication.
func TestSwapNeverMixes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "models.yaml")
	writeFile(t, path, versionYAML(1))
	s, err := Open(path, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				c := s.Current()
				a, okA := c.LookupID("v/one")
				b, okB := c.LookupID("v/two")
				if !okA || !okB || a.Model.Name != b.Model.Name {
					errs <- fmt.Errorf("mixed answer: %v %v", a.Model.Name, b.Model.Name)
					return
				}
			}
		}()
	}
	for v := 2; v <= 20; v++ {
		writeFile(t, path, versionYAML(v))
		if err := s.Reload(); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := nameOf(t, s.Current(), "v/two"); got != "v20" {
		t.Errorf("final version %s, want v20", got)
	}
}

func TestStaticSource(t *testing.T) {
	c := loadTestCatalog(t)
	s := NewStatic(c, nil)
	if s.Current() != c || s.Path() != "" {
		t.Fatal("static source does not serve its catalog")
	}
	if err := s.Reload(); err != nil {
		t.Errorf("Reload: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Watch(ctx); err != nil {
		t.Errorf("Watch: %v", err)
	}
}

// recordedLogs is a slog.Handler that keeps every record's attributes by
// message, for tests that check what was logged.
type recordedLogs struct {
	mu      sync.Mutex
	records []recordedLog
}

type recordedLog struct {
	msg   string
	attrs map[string]any
}

func (h *recordedLogs) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordedLogs) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *recordedLogs) WithGroup(string) slog.Handler            { return h }

func (h *recordedLogs) Handle(_ context.Context, r slog.Record) error {
	attrs := map[string]any{}
	r.Attrs(func(a slog.Attr) bool {
		attrs[a.Key] = a.Value.Any()
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, recordedLog{msg: r.Message, attrs: attrs})
	return nil
}

// withMessage returns the attributes of every record logged with msg.
func (h *recordedLogs) withMessage(msg string) []map[string]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []map[string]any
	for _, r := range h.records {
		if r.msg == msg {
			out = append(out, r.attrs)
		}
	}
	return out
}

// TestPrimaryModalityIsANote: modality is the primary modality (the spec),
// so one naming fewer inputs than input_modalities is accepted, with a
// warning naming the model; one naming a modality the lists lack is not.
func TestPrimaryModalityIsANote(t *testing.T) {
	path := filepath.Join(t.TempDir(), "models.yaml")
	primary := strings.Replace(versionYAML(1), "input_modalities: [text]", "input_modalities: [text, image]", 1)
	writeFile(t, path, primary)
	logs := &recordedLogs{}
	s, err := Open(path, slog.New(logs))
	if err != nil {
		t.Fatalf("a primary modality was refused: %v", err)
	}
	notes := s.Current().Notes()
	if len(notes) != 1 || notes[0].Model != "v/one" || notes[0].Field != "architecture.modality" {
		t.Fatalf("notes = %+v, want one on v/one's architecture.modality", notes)
	}
	warned := logs.withMessage("catalog entry accepted with a note")
	if len(warned) != 1 || warned[0]["model"] != "v/one" {
		t.Errorf("warnings = %v, want one naming v/one", warned)
	}

	missing := strings.Replace(versionYAML(1), "modality: text->text", "modality: text+audio->text", 1)
	writeFile(t, path, missing)
	if _, err := Open(path, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("a modality missing from the lists: %v, want ErrInvalid", err)
	}
}
