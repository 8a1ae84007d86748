// Package storage builds the Bucket a deployment names. It is the one place
// that imports every concrete storage backend, so the rest of the gateway
// depends only on the blob.Bucket interface. It takes each backend's own
// option struct; the wiring fills them from the configuration.
package storage

import (
	"context"
	"fmt"

	"github.com/aigateway/gateway/backends/storage/fs"
	"github.com/aigateway/gateway/backends/storage/gcs"
	"github.com/aigateway/gateway/backends/storage/s3"
	"github.com/aigateway/gateway/files/blob"
	"go.uber.org/zap"
)

// Options names a backend and carries the options of each; only the named
// backend's options are read.
type Options struct {
	Backend string // fs | s3 | gcs
	FS      fs.Config
	S3      s3.Config
	GCS     gcs.Config
}

// Open opens the storage backend named by o.Backend. Each backend
// validates its own options (the one place its rules live) and reports
// problems as *blob.ConfigError naming the field.
func Open(ctx context.Context, o Options, log *zap.Logger) (blob.Bucket, error) {
	switch o.Backend {
	case "fs":
		return fs.New(o.FS, log)
	case "s3":
		return s3.New(ctx, o.S3, log)
	case "gcs":
		return gcs.New(ctx, o.GCS, log)
	default:
		return nil, fmt.Errorf("backend %q is not supported (want fs, s3 or gcs)", o.Backend)
	}
}
