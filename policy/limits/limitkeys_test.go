package limits

import "testing"

// TestLimitKeys pins the key formats: they name buckets in Redis that
// outlive a release, so a change here splits every key's state in two.
func TestLimitKeys(t *testing.T) {
	tests := []struct {
		name, got, want string
	}{
		{"default requests", RequestsKey(ClassDefault, "k1"), "default:key:k1"},
		{"file requests", RequestsKey(ClassFiles, "k1"), "files:key:k1"},
		{"usage reports", RequestsKey(ClassUsage, "k1"), "usage:key:k1"},
		{"uploads", UploadsKey("w1"), "files:ws:w1"},
		{"upload bytes", UploadBytesKey("w1"), "upload_bytes:ws:w1"},
		{"uploads in flight", UploadsInFlightKey("k1"), "uploads:key:k1"},
	}
	seen := map[string]string{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("key = %q, want %q", tc.got, tc.want)
			}
		})
		if other, dup := seen[tc.got]; dup {
			t.Errorf("%s and %s share the key %q", tc.name, other, tc.got)
		}
		seen[tc.got] = tc.name
	}
}
