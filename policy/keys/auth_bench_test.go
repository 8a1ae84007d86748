package keys

import (
	"context"
	"testing"
	"time"
)

// BenchmarkAuthenticateCached is the hot path of every request: a token
// whose key is in the cache. It must not allocate.
func BenchmarkAuthenticateCached(b *testing.B) {
	token, k, err := NewKey()
	if err != nil {
		b.Fatal(err)
	}
	a := NewAuthenticator(&countingStore{keys: map[string]APIKey{k.ID: k}}, time.Hour)
	header := "Bearer " + token
	ctx := context.Background()
	if _, err := a.Authenticate(ctx, header); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Authenticate(ctx, header); err != nil {
			b.Fatal(err)
		}
	}
}
