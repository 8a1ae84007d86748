// Package sweeper collects what crashed processes and lapsed records leave
// behind: objects in storage with no file record, unfinished uploads,
// expired quota reservations and idempotency records; and it reports file
// records whose object is missing (those are never removed silently: a
// record is what a client was told exists).
//
// Every replica runs one. Each pass does a bounded amount of work of each
// kind and every step is idempotent (deleting what another replica just
// deleted is not an error), so replicas sweeping at once only repeat each
// other's work.
package sweeper

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/files/blob"
	"github.com/prometheus/client_golang/prometheus"
)

// Store is the metadata the sweeper reads and trims.
type Store interface {
	// SweepReservations deletes at most limit expired quota reservations.
	SweepReservations(ctx context.Context, limit int) (int, error)
	// SweepIdempotency deletes at most limit expired idempotency records.
	SweepIdempotency(ctx context.Context, limit int) (int, error)
	// SweepKeyChanges deletes at most limit entries of the key change log
	// that every replica has read.
	SweepKeyChanges(ctx context.Context, limit int) (int, error)
	// SweepDeletedFiles deletes at most limit positions of files deleted
	// long enough ago that no client pages from them any more.
	SweepDeletedFiles(ctx context.Context, limit int) (int, error)
	// KnownObjects returns which of keys are the object of a file record
	// on backend.
	KnownObjects(ctx context.Context, backend string, keys []string) (map[string]bool, error)
	// FilesAfter returns at most limit records on backend with an id after
	// after, in id order.
	FilesAfter(ctx context.Context, backend, after string, limit int) ([]files.Record, error)
	// FileByID returns a record, or files.ErrNotFound.
	FileByID(ctx context.Context, workspaceID, id string) (files.Record, error)

	// What a resumable upload leaves (files.UploadStore).
	ExpireUploads(ctx context.Context, limit int) (int, error)
	RemovableParts(ctx context.Context, limit int) ([]files.UploadPart, error)
	DeleteParts(ctx context.Context, ids []string) error
	KnownParts(ctx context.Context, objectKeys []string) (map[string]bool, error)
	// SweepUploads deletes at most limit rows of settled uploads past
	// their retention whose parts are gone.
	SweepUploads(ctx context.Context, limit int) (int, error)
}

// Config are the knobs of a Sweeper.
type Config struct {
	// Interval between passes (each one jittered by up to a tenth, so
	// replicas started together drift apart).
	Interval time.Duration
	// Grace is how old an object without a record, or an unfinished
	// upload, must be before it is removed: longer than any upload lasts,
	// so nothing in progress is taken.
	Grace time.Duration
	// Batch bounds the items of each kind one pass handles.
	Batch int
	// Backend names the bucket's storage in file records ("fs", "s3", "gcs").
	Backend string
}

// Sweeper runs the passes. Sweep is not safe for concurrent use; Run
// calls it from one goroutine.
type Sweeper struct {
	cfg     Config
	store   Store
	bucket  blob.Bucket
	log     *slog.Logger
	now     func() time.Time
	removed *prometheus.CounterVec
	missing prometheus.Counter
	failed  *prometheus.CounterVec

	objectCursor string // last object key checked
	partCursor   string // last part object key checked
	fileCursor   string // last file id checked
}

// Kinds of what a pass removes, as the metric's kind label.
const (
	KindReservation = "reservation"
	KindIdempotency = "idempotency_record"
	KindKeyChange   = "key_change"
	KindDeletedFile = "deleted_file_position"
	KindObject      = "object_without_record"
	KindPending     = "unfinished_upload"
	KindMissing     = "record_without_object" // reported, never removed
	KindExpired     = "expired_upload"
	KindPart        = "upload_part"
	KindOrphanPart  = "part_without_record"
	KindUploadRow   = "upload_record"
)

// New returns a Sweeper whose metrics are registered on reg (nil: none).
func New(cfg Config, store Store, bucket blob.Bucket, log *slog.Logger, reg prometheus.Registerer) *Sweeper {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Sweeper{
		cfg: cfg, store: store, bucket: bucket, log: log, now: time.Now,
		removed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_sweeper_removed_total",
			Help: "What the sweeper removed, by kind: reservation, idempotency_record, key_change, deleted_file_position, object_without_record, unfinished_upload, expired_upload, upload_part, part_without_record, upload_record.",
		}, []string{"kind"}),
		missing: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gateway_sweeper_missing_objects_total",
			Help: "File records found whose object is missing from storage (reported and logged, not removed).",
		}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_sweeper_errors_total",
			Help: "Sweeper steps that failed, by kind; retried at the next pass.",
		}, []string{"kind"}),
	}
	if reg != nil {
		reg.MustRegister(s.removed, s.missing, s.failed)
	}
	return s
}

// Result counts what one pass did.
type Result struct {
	Reservations, IdempotencyRecords, KeyChanges, DeletedFiles, Objects, Pending, Missing int
	// Of resumable uploads: those that expired, the parts of settled ones
	// removed, and part objects without a row.
	ExpiredUploads, Parts, OrphanParts, UploadRows int
	Errors                                         int
}

// Run sweeps every Interval (jittered) until ctx ends.
func (s *Sweeper) Run(ctx context.Context) {
	for {
		wait := s.cfg.Interval + rand.N(s.cfg.Interval/10+1)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		r := s.Sweep(ctx)
		if r != (Result{}) {
			s.log.Info("sweep", slog.Int("reservations", r.Reservations), slog.Int("idempotency_records", r.IdempotencyRecords),
				slog.Int("objects_without_record", r.Objects), slog.Int("unfinished_uploads", r.Pending),
				slog.Int("records_without_object", r.Missing), slog.Int("expired_uploads", r.ExpiredUploads),
				slog.Int("upload_parts", r.Parts), slog.Int("parts_without_record", r.OrphanParts),
				slog.Int("upload_records", r.UploadRows), slog.Int("errors", r.Errors))
		}
	}
}

// Sweep makes one pass over every kind.
func (s *Sweeper) Sweep(ctx context.Context) Result {
	var r Result
	r.Reservations = s.count(KindReservation, &r, func() (int, error) { return s.store.SweepReservations(ctx, s.cfg.Batch) })
	r.IdempotencyRecords = s.count(KindIdempotency, &r, func() (int, error) { return s.store.SweepIdempotency(ctx, s.cfg.Batch) })
	r.KeyChanges = s.count(KindKeyChange, &r, func() (int, error) { return s.store.SweepKeyChanges(ctx, s.cfg.Batch) })
	r.DeletedFiles = s.count(KindDeletedFile, &r, func() (int, error) { return s.store.SweepDeletedFiles(ctx, s.cfg.Batch) })
	if p, ok := s.bucket.(blob.Pending); ok { // fs temporary files, S3 multipart uploads, GCS compose intermediates
		r.Pending = s.count(KindPending, &r, func() (int, error) {
			return p.AbortPending(ctx, s.now().Add(-s.cfg.Grace), s.cfg.Batch)
		})
	}
	r.Objects = s.count(KindObject, &r, func() (int, error) {
		return s.sweepUnknown(ctx, files.ObjectPrefix, &s.objectCursor, s.knownFiles, "removed an object without a file record")
	})
	// Expiring first lets the same pass remove the expired uploads' parts.
	r.ExpiredUploads = s.count(KindExpired, &r, func() (int, error) { return s.store.ExpireUploads(ctx, s.cfg.Batch) })
	r.Parts = s.count(KindPart, &r, func() (int, error) { return s.removeParts(ctx) })
	r.OrphanParts = s.count(KindOrphanPart, &r, func() (int, error) {
		return s.sweepUnknown(ctx, files.PartObjectPrefix, &s.partCursor, s.store.KnownParts, "removed an upload part without a record")
	})
	r.UploadRows = s.count(KindUploadRow, &r, func() (int, error) { return s.store.SweepUploads(ctx, s.cfg.Batch) })
	n, err := s.checkRecords(ctx)
	r.Missing = n
	if err != nil {
		s.fail(KindMissing, err, &r)
	}
	return r
}

// count runs one removal step, counting what it removed and its failure.
func (s *Sweeper) count(kind string, r *Result, step func() (int, error)) int {
	n, err := step()
	if n > 0 {
		s.removed.WithLabelValues(kind).Add(float64(n))
	}
	if err != nil {
		s.fail(kind, err, r)
	}
	return n
}

func (s *Sweeper) fail(kind string, err error, r *Result) {
	r.Errors++
	s.failed.WithLabelValues(kind).Inc()
	s.log.Warn("sweep step failed; retried at the next pass", slog.String("kind", kind), slog.Any("error", err))
}

// sweepUnknown checks the next Batch objects under prefix after *cursor
// (from the start again once the end is reached) and removes those that
// known does not know and that are older than Grace. The object's own time
// is when it was finished, and its row is written right after that, so an
// object without one that old was left by a process that died in between.
func (s *Sweeper) sweepUnknown(ctx context.Context, prefix string, cursor *string,
	known func(context.Context, []string) (map[string]bool, error), what string) (int, error) {
	batch, err := s.bucket.ListAfter(ctx, prefix, *cursor, s.cfg.Batch)
	if err != nil {
		return 0, err
	}
	last := len(batch) < s.cfg.Batch
	if len(batch) == 0 {
		*cursor = ""
		return 0, nil
	}
	kept, err := known(ctx, batch)
	if err != nil {
		return 0, err
	}
	cutoff := s.now().Add(-s.cfg.Grace)
	removed := 0
	var errs []error
	for _, key := range batch {
		if kept[key] {
			continue
		}
		obj, err := s.bucket.Stat(ctx, key)
		if errors.Is(err, blob.ErrNotFound) {
			continue // removed meanwhile
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !obj.Modified.Before(cutoff) {
			continue // maybe a step about to write its row
		}
		if err := s.bucket.Delete(ctx, key); err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
		s.log.Info(what, slog.String("object", key), slog.Int64("size", obj.Size), slog.Time("modified", obj.Modified))
	}
	*cursor = batch[len(batch)-1]
	if last {
		*cursor = "" // the next pass starts over
	}
	return removed, errors.Join(errs...)
}

// knownFiles is KnownObjects of the sweeper's backend.
func (s *Sweeper) knownFiles(ctx context.Context, keys []string) (map[string]bool, error) {
	return s.store.KnownObjects(ctx, s.cfg.Backend, keys)
}

// removeParts removes the objects, then the rows, of the next Batch parts
// of uploads that are no longer pending (completed, cancelled, expired):
// what the request that settled them could not remove, or a crash left.
func (s *Sweeper) removeParts(ctx context.Context) (int, error) {
	parts, err := s.store.RemovableParts(ctx, s.cfg.Batch)
	if err != nil || len(parts) == 0 {
		return 0, err
	}
	var errs []error
	ids := make([]string, 0, len(parts))
	for _, p := range parts {
		if err := s.bucket.Delete(ctx, p.ObjectKey); err != nil {
			errs = append(errs, err)
			continue
		}
		ids = append(ids, p.ID)
	}
	if err := s.store.DeleteParts(ctx, ids); err != nil {
		return 0, errors.Join(append(errs, err)...)
	}
	return len(ids), errors.Join(errs...)
}

// checkRecords checks that the objects of the next Batch file records
// exist, and reports (logs at error level and counts) those that do not.
func (s *Sweeper) checkRecords(ctx context.Context) (int, error) {
	recs, err := s.store.FilesAfter(ctx, s.cfg.Backend, s.fileCursor, s.cfg.Batch)
	if err != nil {
		return 0, err
	}
	if len(recs) < s.cfg.Batch {
		s.fileCursor = ""
	} else {
		s.fileCursor = recs[len(recs)-1].ID
	}
	missing := 0
	var errs []error
	for _, rec := range recs {
		_, err := s.bucket.Stat(ctx, rec.ObjectKey)
		if errors.Is(err, blob.ErrNotFound) {
			// A file deleted meanwhile loses its object first or just
			// after: only a record that is still there is missing its object.
			if _, err := s.store.FileByID(ctx, rec.WorkspaceID, rec.ID); errors.Is(err, files.ErrNotFound) {
				continue
			} else if err != nil {
				errs = append(errs, err)
				continue
			}
			missing++
			s.missing.Inc()
			s.log.Error("a file record's object is missing from storage",
				slog.String("file_id", rec.ID), slog.String("workspace_id", rec.WorkspaceID),
				slog.String("object", rec.ObjectKey), slog.Int64("size", rec.Size))
			continue
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return missing, errors.Join(errs...)
}
