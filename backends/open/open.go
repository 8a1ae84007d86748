// Package open builds the Bucket a configuration names. It is the one place
// that imports every concrete storage backend, so the rest of the gateway
// depends only on the backends.Bucket interface.
package open

import (
	"context"
	"fmt"

	"github.com/aigateway/gateway/backends"
	"github.com/aigateway/gateway/backends/fs"
	"github.com/aigateway/gateway/config"
	"go.uber.org/zap"
)

// Bucket opens the storage backend of cfg.Backend.
func Bucket(ctx context.Context, cfg config.Storage, log *zap.Logger) (backends.Bucket, error) {
	switch cfg.Backend {
	case "fs":
		return fs.New(fs.Config{Dir: cfg.FS.Dir}, log)
	default:
		return nil, fmt.Errorf("storage.backend: %q is not supported", cfg.Backend)
	}
}
