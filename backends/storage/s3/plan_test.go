package s3

import (
	"math/rand/v2"
	"testing"
)

// planParts obeys S3's rules whatever the sizes, and its parts cover the
// concatenation exactly, in order. Sizes are scaled down (a 5-byte part
// minimum) so that many shapes fit one test.
func TestPlanPartsRules(t *testing.T) {
	const minPart, maxCopy, maxStream = 5, 12, 7
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 5000 {
		sizes := make([]int64, 1+rng.IntN(12))
		for i := range sizes {
			switch rng.IntN(4) {
			case 0:
				sizes[i] = 0
			case 1:
				sizes[i] = int64(1 + rng.IntN(minPart-1))
			case 2:
				sizes[i] = int64(minPart + rng.IntN(3))
			default:
				sizes[i] = int64(1 + rng.IntN(3*maxCopy))
			}
		}
		parts := planParts(sizes, minPart, maxCopy, maxStream)
		var src int
		var off int64
		for k, p := range parts {
			if p.num != int32(k+1) {
				t.Fatalf("sizes %v: part %d numbered %d", sizes, k, p.num)
			}
			if k < len(parts)-1 && p.size < minPart {
				t.Fatalf("sizes %v: part %d of %d bytes, under the minimum and not last", sizes, p.num, p.size)
			}
			if p.copy && (len(p.segs) != 1 || p.size > maxCopy) {
				t.Fatalf("sizes %v: copied part %d: %+v", sizes, p.num, p)
			}
			if !p.copy && p.size > maxStream {
				t.Fatalf("sizes %v: streamed part %d of %d bytes, over the buffer", sizes, p.num, p.size)
			}
			var sum int64
			for _, s := range p.segs {
				for src < len(sizes) && off == sizes[src] {
					src, off = src+1, 0
				}
				if s.n < 1 || s.src != src || s.off != off {
					t.Fatalf("sizes %v: part %d segment %+v, want one starting at source %d offset %d", sizes, p.num, s, src, off)
				}
				off += s.n
				sum += s.n
			}
			if sum != p.size {
				t.Fatalf("sizes %v: part %d size %d, segments %d", sizes, p.num, p.size, sum)
			}
		}
		for src < len(sizes) && off == sizes[src] {
			src, off = src+1, 0
		}
		if src != len(sizes) {
			t.Fatalf("round %d, sizes %v: parts %+v stop at source %d offset %d", round, sizes, parts, src, off)
		}
	}
}

// A run of small sources before a large one takes from the large one only
// what fills it to the minimum: the rest is copied by the server.
func TestPlanPartsStreamsLittle(t *testing.T) {
	parts := planParts([]int64{MinPartSize - 10, 100 << 20}, MinPartSize, maxCopySize, DefaultPartSize)
	if len(parts) != 2 || parts[0].copy || parts[0].size != MinPartSize || !parts[1].copy || parts[1].size != 100<<20-10 {
		t.Fatalf("parts = %+v; want a streamed part of the minimum, then a copy of the rest", parts)
	}
	// A source over the copy limit is copied in ranges within it.
	parts = planParts([]int64{11 << 30}, MinPartSize, maxCopySize, DefaultPartSize)
	if len(parts) != 3 || !parts[0].copy || parts[0].size > maxCopySize {
		t.Fatalf("parts of an 11 GiB source = %+v; want 3 copied ranges", parts)
	}
}
