// Package open builds the Bucket a configuration names. It is the one place
// that imports every concrete storage backend, so the rest of the gateway
// depends only on the backends.Bucket interface.
package open

import (
	"context"
	"fmt"

	"github.com/aigateway/gateway/backends"
	"github.com/aigateway/gateway/backends/fs"
	"github.com/aigateway/gateway/backends/gcs"
	"github.com/aigateway/gateway/backends/s3"
	"github.com/aigateway/gateway/config"
	"go.uber.org/zap"
)

// Bucket opens the storage backend of cfg.Backend.
func Bucket(ctx context.Context, cfg config.Storage, log *zap.Logger) (backends.Bucket, error) {
	switch cfg.Backend {
	case "fs":
		return fs.New(fs.Config{Dir: cfg.FS.Dir}, log)
	case "s3":
		return s3.New(ctx, s3.Config{
			Bucket: cfg.S3.Bucket, Region: cfg.S3.Region, Endpoint: cfg.S3.Endpoint,
			PathStyle: cfg.S3.PathStyle, Prefix: cfg.S3.Prefix,
		}, log)
	case "gcs":
		return gcs.New(ctx, gcs.Config{Bucket: cfg.GCS.Bucket, Endpoint: cfg.GCS.Endpoint, Prefix: cfg.GCS.Prefix}, log)
	default:
		return nil, fmt.Errorf("storage.backend: %q is not supported", cfg.Backend)
	}
}
