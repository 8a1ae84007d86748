package fs

import (
	"context"
	"path"
)

// CrashMidCompose does what Compose does up to the first segment made in
// its staging directory, and stops there as a dying process would: the
// directory stays.
func (b *Bucket) CrashMidCompose(ctx context.Context, dst string, srcs []string) error {
	segs, err := b.sources(ctx, srcs)
	if err != nil {
		return err
	}
	stage, err := b.createTempDir("compose")
	if err != nil {
		return err
	}
	_, _, err = b.assemble(ctx, stage, segs[:1])
	return err
}

// SetLinkMin sets the smallest Compose source linked rather than copied.
func (b *Bucket) SetLinkMin(n int64) { b.linkMin = n }

// ComposedDir is the directory of composed objects' segments.
const ComposedDir = composedDir

// SegmentDir returns the segment directory of the composed object at key
// (relative to the root), or "" for any other key.
func (b *Bucket) SegmentDir(key string) string {
	l, err := b.composedLayout(key)
	if err != nil {
		return ""
	}
	return path.Clean(l.dir)
}
