// Package open builds the Bucket a deployment names. It is the one place
// that imports every concrete storage backend, so the rest of the gateway
// depends only on the backends.Bucket interface. It takes each backend's own
// option struct; the wiring fills them from the configuration.
package open

import (
	"context"
	"fmt"

	"github.com/aigateway/gateway/backends"
	"github.com/aigateway/gateway/backends/fs"
	"github.com/aigateway/gateway/backends/gcs"
	"github.com/aigateway/gateway/backends/s3"
	"go.uber.org/zap"
)

// Storage names a backend and carries the options of each; only the named
// backend's options are read.
type Storage struct {
	Backend string // fs | s3 | gcs
	FS      fs.Config
	S3      s3.Config
	GCS     gcs.Config
}

// Bucket opens the storage backend named by o.Backend. Each backend
// validates its own options (the one place its rules live) and reports
// problems as *backends.ConfigError naming the field.
func Bucket(ctx context.Context, o Storage, log *zap.Logger) (backends.Bucket, error) {
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
