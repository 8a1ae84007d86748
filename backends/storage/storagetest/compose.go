package storagetest

// The Compose cases of the contract suite.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aigateway/gateway/files/blob"
)

// runCompose runs the Compose cases.
func runCompose(t *testing.T, newBucket func(t *testing.T) blob.Bucket) {
	t.Run("Compose", func(t *testing.T) { testCompose(t, newBucket(t)) })
	t.Run("ComposeMissingSource", func(t *testing.T) { testComposeMissing(t, newBucket(t)) })
	t.Run("ComposeInvalid", func(t *testing.T) { testComposeInvalid(t, newBucket(t)) })
	t.Run("ComposeCancel", func(t *testing.T) { testComposeCancel(t, newBucket(t)) })
	t.Run("ComposeConcurrent", func(t *testing.T) { testComposeConcurrent(t, newBucket(t)) })
}

// source is one source of a Compose case: its key and content.
type source struct {
	key  string
	data []byte
}

// uploadSources uploads one source per size under ws, seeded from seed,
// and returns them in order.
func uploadSources(t testing.TB, b blob.Bucket, ws string, seed uint64, sizes ...int) []source {
	t.Helper()
	srcs := make([]source, len(sizes))
	var wg sync.WaitGroup
	slots := make(chan struct{}, 16) // uploads at once
	for i, size := range sizes {
		srcs[i] = source{key: fmt.Sprintf("ws/%s/part/%d-%04d", ws, seed, i), data: Data(seed*10000+uint64(i), size)}
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			if _, err := b.Upload(opContext(t), srcs[i].key, bytes.NewReader(srcs[i].data), int64(size), blob.UploadOptions{}); err != nil {
				t.Errorf("Upload(%s): %v", srcs[i].key, err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return srcs
}

// keysOf returns the keys of srcs, in order.
func keysOf(srcs []source) []string {
	keys := make([]string, len(srcs))
	for i, s := range srcs {
		keys[i] = s.key
	}
	return keys
}

// concat returns the content of srcs, in order.
func concat(srcs []source) []byte {
	var out []byte
	for _, s := range srcs {
		out = append(out, s.data...)
	}
	return out
}

// sortedKeys returns the keys of every group of sources and the extra
// keys, sorted, without duplicates: what the bucket must hold.
func sortedKeys(groups [][]source, extra ...string) []string {
	keys := slices.Clone(extra)
	for _, g := range groups {
		keys = append(keys, keysOf(g)...)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// manySmall returns n sizes of a few hundred bytes to a few KiB.
func manySmall(n int) []int {
	sizes := make([]int, n)
	for i := range sizes {
		sizes[i] = 1 + (i*7919)%3000
	}
	return sizes
}

// testCompose: the concatenation lands under dst in the order given, for
// one source and many, of every size S3 treats differently (under and over
// its 5 MiB part minimum, in every position, empty ones too) and more
// than GCS composes in one request (32); the sources stay, dst is
// replaced whole, and nothing else is left.
func testCompose(t *testing.T, b blob.Bucket) {
	ws := newWorkspace()
	const KiB = 1 << 10
	cases := []struct {
		name  string
		sizes []int
	}{
		{"one-small", []int{100 * KiB}},
		{"one-large", []int{6 * MiB}},
		{"one-empty", []int{0}},
		{"two-small", []int{1, 3 * KiB}},
		// Large then small, small then large, small runs crossing 5 MiB,
		// a large source one byte over the minimum, one exactly at it, and
		// empty sources between.
		{"mixed", []int{KiB, 6 * MiB, 3 * MiB, 3 * MiB, 0, partSize, 100, 2 * MiB, partSize + 1, 4 * MiB}},
		{"large-first-and-last", []int{partSize, 1000, 0, 2*MiB + 5, partSize + 7}},
		{"small-last", []int{6 * MiB, 6 * MiB, 10}},
		{"forty-one", manySmall(41)},
		{"seventy-mixed", append(manySmall(69), partSize+3)},
		{"1057", manySmall(32*32 + 33)},
	}
	var groups [][]source
	var dsts []string
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srcs := uploadSources(t, b, ws, uint64(i+1), tc.sizes...)
			groups = append(groups, srcs)
			dst := fmt.Sprintf("ws/%s/file-%d", ws, i)
			want := concat(srcs)
			obj, err := b.Compose(opContext(t), dst, keysOf(srcs), blob.UploadOptions{ContentType: "text/plain"})
			if err != nil {
				t.Fatalf("Compose: %v", err)
			}
			dsts = append(dsts, dst)
			if obj.Key != dst || obj.Size != int64(len(want)) {
				t.Errorf("Compose returned %+v, want key %s size %d", obj, dst, len(want))
			}
			st, err := b.Stat(opContext(t), dst)
			if err != nil || st.Size != int64(len(want)) {
				t.Errorf("Stat = %+v, %v; want size %d", st, err, len(want))
			}
			if st.ContentType != "" && st.ContentType != "text/plain" {
				t.Errorf("Stat content type = %q, want text/plain", st.ContentType)
			}
			MustContain(t, b, dst, want)
			for _, s := range []source{srcs[0], srcs[len(srcs)-1]} {
				MustContain(t, b, s.key, s.data)
			}
		})
	}
	t.Run("repeated-source", func(t *testing.T) {
		srcs := uploadSources(t, b, ws, 100, 1000, 6*MiB)
		groups = append(groups, srcs)
		dst := "ws/" + ws + "/repeated"
		order := []source{srcs[0], srcs[1], srcs[0], srcs[0]}
		if _, err := b.Compose(opContext(t), dst, keysOf(order), blob.UploadOptions{}); err != nil {
			t.Fatalf("Compose: %v", err)
		}
		dsts = append(dsts, dst)
		MustContain(t, b, dst, concat(order))
	})
	t.Run("overwrite", func(t *testing.T) {
		dst := "ws/" + ws + "/overwritten"
		MustUpload(t, b, dst, Data(7, 10*MiB))
		srcs := uploadSources(t, b, ws, 200, 2000, 3000)
		groups = append(groups, srcs)
		dsts = append(dsts, dst)
		if _, err := b.Compose(opContext(t), dst, keysOf(srcs), blob.UploadOptions{}); err != nil {
			t.Fatalf("Compose: %v", err)
		}
		MustContain(t, b, dst, concat(srcs))
	})
	checkLeftovers(t, b, sortedKeys(groups, dsts...)...)
}

// testComposeMissing: a missing source (never stored, or only a prefix of
// other keys) is a *MissingSourceError naming it, wherever it sits, and
// leaves dst as it was: absent, or its earlier object.
func testComposeMissing(t *testing.T, b blob.Bucket) {
	ws := newWorkspace()
	srcs := uploadSources(t, b, ws, 1, append(manySmall(40), 6*MiB)...)
	keys := keysOf(srcs)
	missing := "ws/" + ws + "/part/never"
	prefixOnly := "ws/" + ws + "/part"
	earlier := "ws/" + ws + "/earlier"
	MustUpload(t, b, earlier, Data(9, 1000))
	for _, tc := range []struct {
		name    string
		srcs    []string
		missing string
	}{
		{"only", []string{missing}, missing},
		{"first", append([]string{missing}, keys...), missing},
		{"middle", slices.Insert(slices.Clone(keys), 35, missing), missing},
		{"last", append(slices.Clone(keys), missing), missing},
		{"prefix-only", append(slices.Clone(keys[:3]), prefixOnly), prefixOnly},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, dst := range []string{"ws/" + ws + "/new", earlier} {
				_, err := b.Compose(opContext(t), dst, tc.srcs, blob.UploadOptions{})
				var me *blob.MissingSourceError
				if !errors.Is(err, blob.ErrNotFound) || !errors.As(err, &me) || me.Key != tc.missing {
					t.Fatalf("Compose into %s = %v; want a *MissingSourceError naming %s", dst, err, tc.missing)
				}
			}
			checkAbsent(t, b, "ws/"+ws+"/new")
			MustContain(t, b, earlier, Data(9, 1000))
		})
	}
	checkLeftovers(t, b, sortedKeys([][]source{srcs}, earlier)...)
}

// testComposeInvalid: the arguments are checked before anything is done:
// invalid keys, no sources, too many, dst among them.
func testComposeInvalid(t *testing.T, b blob.Bucket) {
	ws := newWorkspace()
	srcs := uploadSources(t, b, ws, 1, 10, 20)
	keys := keysOf(srcs)
	dst := "ws/" + ws + "/dst"
	tooMany := make([]string, blob.MaxComposeSources+1)
	for i := range tooMany {
		tooMany[i] = keys[i%2]
	}
	for _, tc := range []struct {
		name string
		dst  string
		srcs []string
		want error
	}{
		{"dst-invalid", "../escape", keys, blob.ErrInvalidKey},
		{"dst-hidden", "ws/.tmp/x", keys, blob.ErrInvalidKey},
		{"source-invalid", dst, []string{keys[0], "ws//x"}, blob.ErrInvalidKey},
		{"source-hidden", dst, []string{".compose/x"}, blob.ErrInvalidKey},
		{"no-sources", dst, nil, blob.ErrInvalidCompose},
		{"too-many", dst, tooMany, blob.ErrInvalidCompose},
		{"dst-among-sources", keys[1], keys, blob.ErrInvalidCompose},
		{"dst-among-missing-sources", dst, []string{"ws/" + ws + "/never", dst}, blob.ErrInvalidCompose},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := b.Compose(opContext(t), tc.dst, tc.srcs, blob.UploadOptions{}); !errors.Is(err, tc.want) {
				t.Errorf("Compose = %v, want %v", err, tc.want)
			}
		})
	}
	checkLeftovers(t, b, keys...)
}

// testComposeCancel: a ctx that ends before or during a Compose makes it
// fail with ctx's error, leaving nothing new and an earlier dst intact.
// "During" is caught by watching for the compose's pending state
// (temporary file, multipart upload, intermediate object) and cancelling
// as soon as it shows; a compose that finishes first is tried again, and
// the case fails unless one was cut off mid-way.
func testComposeCancel(t *testing.T, b blob.Bucket) {
	ws := newWorkspace()
	// Enough sources and bytes to take a while everywhere: GCS composes in
	// steps, S3 streams and sends several parts, fs copies and syncs.
	srcs := uploadSources(t, b, ws, 1, append(manySmall(60), 6*MiB, 3*MiB, 3*MiB, 6*MiB)...)
	keys := keysOf(srcs)
	dst := "ws/" + ws + "/dst"
	old := Data(5, 1000)
	MustUpload(t, b, dst, old)

	ctx, cancel := context.WithCancel(opContext(t))
	cancel()
	if _, err := b.Compose(ctx, dst, keys, blob.UploadOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Compose with ctx already cancelled = %v, want context.Canceled", err)
	}
	MustContain(t, b, dst, old)
	checkLeftovers(t, b, sortedKeys([][]source{srcs}, dst)...)

	p, ok := b.(blob.Pending)
	if !ok {
		t.Fatal("the bucket does not implement blob.Pending: a cancelled compose's leftovers cannot be seen")
	}
	cut := false
	for attempt := 0; attempt < 10 && !cut; attempt++ {
		ctx, cancel := context.WithCancel(opContext(t))
		done := make(chan error, 1)
		go func() {
			_, err := b.Compose(ctx, dst, keys, blob.UploadOptions{})
			done <- err
		}()
		var err error
		finished := false
		for !finished {
			select {
			case err = <-done:
				finished = true
				continue
			default:
			}
			if pending, perr := p.PendingUploads(opContext(t)); perr == nil && len(pending) > 0 {
				cancel()
				err = <-done
				finished = true
				continue
			}
			time.Sleep(time.Millisecond) // poll interval; the compose's end bounds the loop
		}
		cancel()
		switch {
		case err == nil:
			// Finished before the cancellation: dst is the whole new object.
			MustContain(t, b, dst, concat(srcs))
			MustUpload(t, b, dst, old)
		case !errors.Is(err, context.Canceled):
			t.Fatalf("Compose cancelled mid-way = %v, want context.Canceled", err)
		default:
			cut = true
			MustContain(t, b, dst, old)
		}
		checkLeftovers(t, b, sortedKeys([][]source{srcs}, dst)...)
	}
	if !cut {
		t.Errorf("no compose of 10 was cancelled mid-way: each finished before its pending state showed")
	}
}

// testComposeConcurrent: composes of one dst at once leave one of them
// whole; composes of other dsts from shared sources all succeed.
func testComposeConcurrent(t *testing.T, b blob.Bucket) {
	ws := newWorkspace()
	const same = 4
	dst := "ws/" + ws + "/shared"
	groups := make([][]source, same)
	for i := range same {
		sizes := manySmall(34 + i)
		if i%2 == 1 {
			sizes = append(sizes, 6*MiB, 100)
		}
		groups[i] = uploadSources(t, b, ws, uint64(i+1), sizes...)
	}
	var wg sync.WaitGroup
	var others []string
	for i := range same {
		other := fmt.Sprintf("ws/%s/own-%d", ws, i)
		others = append(others, other)
		wg.Go(func() {
			if _, err := b.Compose(opContext(t), dst, keysOf(groups[i]), blob.UploadOptions{}); err != nil {
				t.Errorf("Compose #%d of %s: %v", i, dst, err)
			}
		})
		wg.Go(func() {
			if _, err := b.Compose(opContext(t), other, keysOf(groups[i]), blob.UploadOptions{}); err != nil {
				t.Errorf("Compose of %s: %v", other, err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	got := MustRead(t, b, dst)
	found := false
	for i := range same {
		found = found || bytes.Equal(got, concat(groups[i]))
		MustContain(t, b, others[i], concat(groups[i]))
	}
	if !found {
		t.Errorf("%s holds %d bytes matching none of the concurrent composes", dst, len(got))
	}
	checkLeftovers(t, b, sortedKeys(groups, append(others, dst)...)...)
}
