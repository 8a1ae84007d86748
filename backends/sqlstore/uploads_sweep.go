package sqlstore

import (
	"context"
	"fmt"

	"github.com/aigateway/gateway/files"
)

// SweepUploads deletes at most limit rows of uploads that are no longer
// pending, whose time ended files.UploadRowRetention ago and whose parts
// are all gone: without it the table would grow by a row per upload for
// ever. A completed upload's file is a row of its own and stays.
func (s *Store) SweepUploads(ctx context.Context, limit int) (_ int, err error) {
	defer s.classify(&err)
	if limit <= 0 {
		return 0, nil
	}
	cutoff := s.d.ts(micro(s.now()).Add(-files.UploadRowRetention))
	res, err := s.w.ExecContext(ctx, `DELETE FROM uploads WHERE id IN (
		SELECT u.id FROM uploads u
		WHERE u.status <> 'pending' AND u.expires_at <= $1
			AND NOT EXISTS (SELECT 1 FROM upload_parts p WHERE p.upload_id = u.id)
		ORDER BY u.expires_at LIMIT $2)`, cutoff, limit)
	if err != nil {
		return 0, fmt.Errorf("sqlstore: sweep uploads: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("sqlstore: sweep uploads: %w", err)
	}
	return int(n), nil
}
