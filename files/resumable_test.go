package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/aigateway/gateway/files/blob"
	"github.com/aigateway/gateway/internal/outage"
)

func TestOrderParts(t *testing.T) {
	parts := []UploadPart{
		{ID: "part_a", Bytes: 5, ObjectKey: "up/w/u/part_a"},
		{ID: "part_b", Bytes: 3, ObjectKey: "up/w/u/part_b"},
		{ID: "part_c", Bytes: 2, ObjectKey: "up/w/u/part_c"},
	}
	listed, err := orderParts(parts, []string{"part_c", "part_a", "part_b"}, 10)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, p := range listed {
		keys = append(keys, p.ObjectKey)
	}
	if got := strings.Join(keys, ","); got != "up/w/u/part_c,up/w/u/part_a,up/w/u/part_b" {
		t.Errorf("keys = %s, want the order listed", got)
	}
	// A part left out is simply not in the file, when the rest add up.
	if _, err := orderParts(parts, []string{"part_a", "part_b"}, 8); err != nil {
		t.Errorf("a subset adding up: %v", err)
	}
	for name, tc := range map[string]struct {
		ids   []string
		bytes int64
	}{
		"none":          {nil, 10},
		"unknown":       {[]string{"part_a", "part_x"}, 10},
		"repeated":      {[]string{"part_a", "part_a"}, 10},
		"short":         {[]string{"part_a", "part_b"}, 10},
		"over":          {[]string{"part_a", "part_b", "part_c"}, 9},
		"another's key": {[]string{"up/w/u/part_a"}, 5},
	} {
		_, err := orderParts(parts, tc.ids, tc.bytes)
		var pe *ParamError
		if !errors.As(err, &pe) || pe.Param != "part_ids" {
			t.Errorf("%s: err = %v, want a ParamError naming part_ids", name, err)
		}
	}
}

func TestPartLimit(t *testing.T) {
	read := func(n int, max, left int64) (int64, error) {
		l := &partLimit{r: strings.NewReader(strings.Repeat("x", n)), max: max, left: left}
		got, err := io.Copy(io.Discard, l)
		return got, err
	}
	if n, err := read(10, 10, 100); err != nil || n != 10 {
		t.Errorf("exactly the part limit: %d, %v", n, err)
	}
	if n, err := read(10, 100, 10); err != nil || n != 10 {
		t.Errorf("exactly what the upload takes: %d, %v", n, err)
	}
	var tooLarge *PartTooLargeError
	if _, err := read(11, 10, 100); !errors.As(err, &tooLarge) || !errors.Is(err, ErrTooLarge) {
		t.Errorf("past the part limit: %v, want a PartTooLargeError", err)
	}
	if _, err := read(11, 100, 10); !errors.Is(err, ErrPartsExceedUpload) || errors.Is(err, ErrTooLarge) {
		t.Errorf("past what the upload takes: %v, want ErrPartsExceedUpload", err)
	}
	if _, err := read(11, 10, 10); !errors.As(err, &tooLarge) {
		t.Errorf("past both, equal: %v, want the part limit named", err)
	}
	// An empty buffer reads nothing and is no error.
	l := &partLimit{r: strings.NewReader("x"), max: 0, left: 0}
	if n, err := l.Read(nil); n != 0 || err != nil {
		t.Errorf("Read(nil) = %d, %v", n, err)
	}
}

func TestCompatibleType(t *testing.T) {
	for _, tc := range []struct {
		declared, detected string
		ok                 bool
	}{
		{"application/pdf", "application/pdf", true},
		{"Application/PDF; name=x", "application/pdf", true},
		{"application/octet-stream", "image/png", true},
		{"text/plain", "application/x-ndjson", true},
		{"application/jsonl", "text/plain", true},
		{"text/csv; charset=utf-8", "text/csv", true},
		{"audio/x-wav", "audio/wav", true},
		{"application/pdf", "image/png", false},
		{"image/png", "text/plain", false},
		{"text/plain", "application/pdf", false},
	} {
		if got := compatibleType(tc.declared, tc.detected); got != tc.ok {
			t.Errorf("compatibleType(%q, %q) = %v, want %v", tc.declared, tc.detected, got, tc.ok)
		}
	}
}

func TestPartObjectKeyIsApartFromFiles(t *testing.T) {
	k := PartObjectKey("ws1", "upload_x", "part_y")
	if strings.HasPrefix(k, ObjectPrefix) || !strings.HasPrefix(k, PartObjectPrefix) {
		t.Errorf("PartObjectKey = %q: must lie under %q, never under the files' %q", k, PartObjectPrefix, ObjectPrefix)
	}
}

// stateStore answers Upload with a fixed record; nothing else is asked of it.
type stateStore struct {
	UploadStore
	rec UploadRecord
}

func (s stateStore) Upload(context.Context, string, string) (UploadRecord, []UploadPart, error) {
	return s.rec, nil, nil
}

// An assembly that failed on a missing part answers what happened to the
// upload meanwhile: its new status when a racing completion or a cancel
// settled it, a storage failure when it is still pending.
func TestComposeError(t *testing.T) {
	missing := &blob.MissingSourceError{Key: "up/w/u/part_a"}
	for _, tc := range []struct {
		status UploadStatus
		want   error
	}{
		{UploadCompleted, ErrUploadNotPending},
		{UploadCancelled, ErrUploadNotPending},
		{UploadPending, ErrStorageUnavailable},
	} {
		u := NewResumable(ResumableConfig{}, NewService(Config{}, Deps{}), stateStore{rec: UploadRecord{Status: tc.status}})
		err := u.composeError(t.Context(), "w", "u", fmt.Errorf("compose: %w", missing))
		var se *UploadStateError
		if !errors.Is(err, tc.want) || (tc.status != UploadPending) != errors.As(err, &se) {
			t.Errorf("%s: %v, want %v", tc.status, err, tc.want)
		}
	}
	// Any other failure is the storage's, classified as for an upload.
	u := NewResumable(ResumableConfig{}, NewService(Config{}, Deps{}), stateStore{})
	if err := u.composeError(t.Context(), "w", "u", blob.ErrUnavailable); !errors.Is(err, ErrStorageUnavailable) {
		t.Errorf("unavailable: %v", err)
	}
}

// lostCommitStore holds one pending upload; recording a part or its
// completion fails with err.
type lostCommitStore struct {
	UploadStore
	rec   UploadRecord
	parts []UploadPart
	err   error
}

func (s lostCommitStore) Upload(context.Context, string, string) (UploadRecord, []UploadPart, error) {
	return s.rec, s.parts, nil
}

func (s lostCommitStore) UploadTally(context.Context, string, string) (UploadRecord, PartsTally, error) {
	return s.rec, PartsTally{Count: len(s.parts)}, nil
}

func (s lostCommitStore) AddPart(context.Context, string, UploadPart, int) error { return s.err }

func (s lostCommitStore) CompleteUpload(context.Context, string, string, Record) error { return s.err }

// A part or a completion whose record's commit went unanswered keeps its
// object (the record may exist; the sweeper removes objects no record
// names); one refused outright leaves nothing.
func TestResumableKeepsObjectsOfAnUnknownOutcome(t *testing.T) {
	lost := fmt.Errorf("connection reset at COMMIT: %w: %w", outage.ErrOutcomeUnknown, outage.ErrUnavailable)
	refused := fmt.Errorf("database down before the commit: %w", outage.ErrUnavailable)
	pdf := "%PDF-1.7\n" + strings.Repeat("x", 100)
	for _, tc := range []struct {
		name string
		err  error
		kept bool
	}{{"unknown", lost, true}, {"refused", refused, false}} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			part := UploadPart{ID: "part_a", UploadID: "upload_u", Bytes: int64(len(pdf)), ObjectKey: PartObjectKey(aliceDefault, "upload_u", "part_a")}
			if _, err := r.bucket.Upload(t.Context(), part.ObjectKey, strings.NewReader(pdf), part.Bytes, blob.UploadOptions{}); err != nil {
				t.Fatal(err)
			}
			store := lostCommitStore{
				rec:   UploadRecord{ID: "upload_u", WorkspaceID: aliceDefault, Filename: "a.pdf", MimeType: "application/pdf", Bytes: 2 * part.Bytes, Status: UploadPending},
				parts: []UploadPart{part},
				err:   tc.err,
			}
			u := NewResumable(ResumableConfig{MaxBytes: 1 << 20, MaxPartBytes: 1 << 20, MaxParts: 10}, r.s, store)
			ref := UploadRef{Key: aliceKey, ID: "upload_u"}

			before := r.bucket.count()
			if _, err := u.AddPart(t.Context(), ref, strings.NewReader(pdf), int64(len(pdf)), func() error { return nil }); !errors.Is(err, outage.ErrUnavailable) {
				t.Fatalf("AddPart = %v, want the store's failure", err)
			}
			if got := r.bucket.count() - before; (got == 1) != tc.kept || got > 1 {
				t.Errorf("AddPart left %d new objects, want kept=%v", got, tc.kept)
			}

			store.rec.Bytes = part.Bytes
			u = NewResumable(ResumableConfig{MaxBytes: 1 << 20, MaxPartBytes: 1 << 20, MaxParts: 10}, r.s, store)
			before = r.bucket.count()
			if _, err := u.Complete(t.Context(), CompleteUpload{Ref: ref, PartIDs: []string{"part_a"}}); !errors.Is(err, outage.ErrUnavailable) {
				t.Fatalf("Complete = %v, want the store's failure", err)
			}
			if got := r.bucket.count() - before; (got == 1) != tc.kept || got > 1 {
				t.Errorf("Complete left %d new objects, want kept=%v", got, tc.kept)
			}
		})
	}
}
