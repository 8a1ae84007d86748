package s3

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
)

// A part body reads as its bytes, again after a rewind (a retry sends the
// same bytes), and not at all once fenced: its buffer may then be another
// part's, or unmapped.
func TestPartReaderFence(t *testing.T) {
	p := newBufferPool(MinPartSize, 2*MinPartSize)
	buf, err := p.get(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	want := bytes.Clone(buf[:MinPartSize-3])
	r := newPartReader(buf[:MinPartSize-3])
	for attempt := range 2 {
		if _, err := r.Seek(0, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("attempt %d: read %d bytes (%v), want the %d of the part", attempt, len(got), err, len(want))
		}
	}
	if n, err := r.Seek(0, io.SeekEnd); err != nil || n != int64(len(want)) {
		t.Fatalf("Seek to the end: %d, %v; want %d", n, err, len(want))
	}
	r.Seek(0, io.SeekStart)
	r.fence()
	p.put(buf)
	if n, err := r.Read(make([]byte, 10)); n != 0 || !errors.Is(err, errFenced) {
		t.Errorf("Read after fence: %d, %v; want 0, errFenced", n, err)
	}
	if _, err := r.Seek(0, io.SeekStart); !errors.Is(err, errFenced) {
		t.Errorf("Seek after fence: %v; want errFenced", err)
	}
	if n := p.inUse.Load(); n != 0 {
		t.Errorf("%d bytes in use after the put", n)
	}
	p.close()
}

// Buffers are reused while the idle list has room and freed past it; a
// closed pool keeps none.
func TestBufferPoolReuse(t *testing.T) {
	p := newBufferPool(MinPartSize, 8*MinPartSize)
	var held [][]byte
	for range 6 {
		b, err := p.get(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != MinPartSize {
			t.Fatalf("buffer of %d bytes, want %d", len(b), MinPartSize)
		}
		b[0], b[len(b)-1] = 1, 2 // writable end to end
		held = append(held, b)
	}
	for _, b := range held {
		p.put(b)
	}
	if n := len(p.idle); n != maxIdleBuffers {
		t.Errorf("%d idle buffers kept, want %d", n, maxIdleBuffers)
	}
	b, err := p.get(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if b[0] != 1 {
		t.Errorf("a fresh buffer was made while %d were idle", maxIdleBuffers)
	}
	p.put(b)
	p.close()
	if n := len(p.idle); n != 0 {
		t.Errorf("%d idle buffers kept after close", n)
	}
	b, _ = p.get(t.Context())
	p.put(b)
	if n := len(p.idle); n != 0 {
		t.Errorf("a buffer was kept after close")
	}
	if peak := p.peak.Load(); peak != 6*MinPartSize {
		t.Errorf("peak %d, want %d", peak, 6*MinPartSize)
	}
}

// An upload's next buffer takes a free sure slot first; with both held,
// the spare only while the budget has room, and never ahead of an upload
// waiting for the budget; else it waits for a sure slot.
func TestNextBufferTakesTheSpareOnlyWithRoom(t *testing.T) {
	ctx := t.Context()
	b := &Bucket{bufs: newBufferPool(MinPartSize, 3*MinPartSize)}
	sure, spare := make(chan struct{}, partsInFlight), make(chan struct{}, spareParts)
	var held [][]byte
	for i := range partsInFlight {
		buf, slot, err := b.nextBuffer(ctx, sure, spare)
		if err != nil || slot != sure {
			t.Fatalf("buffer %d: %v, sure slot %v", i, err, slot == sure)
		}
		held = append(held, buf)
	}
	buf, slot, err := b.nextBuffer(ctx, sure, spare)
	if err != nil || slot != spare {
		t.Fatalf("third buffer with room: %v, spare slot %v", err, slot == spare)
	}
	held = append(held, buf)
	if got := b.bufs.inUse.Load(); got != 3*MinPartSize {
		t.Fatalf("%d bytes in use, want three parts", got)
	}

	// The budget is spent (another upload took what the spare gave back):
	// the next buffer is not the spare, but waits for a sure slot, here
	// until its context ends.
	b.bufs.put(held[2])
	<-spare
	other, err := b.bufs.get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := b.nextBuffer(cctx, sure, spare); !errors.Is(err, context.Canceled) {
		t.Fatalf("with the budget spent: %v, want to wait for a sure slot", err)
	}
	if len(spare) != 0 || b.bufs.inUse.Load() != 3*MinPartSize {
		t.Fatalf("spare held %d, %d bytes in use; want the spare free and nothing more taken", len(spare), b.bufs.inUse.Load())
	}
	for _, buf := range append(held[:2], other) {
		b.bufs.put(buf)
	}
}
