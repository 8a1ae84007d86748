package fs

import "context"

// CrashMidCompose does what Compose does up to the copy of its first
// source into the temporary file, and stops there as a dying process
// would: the temporary file stays.
func (b *Bucket) CrashMidCompose(ctx context.Context, dst string, srcs []string) error {
	_, f, err := b.createTemp()
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = b.copySource(ctx, f, srcs[0])
	return err
}
