package files

import (
	"strings"
	"testing"
)

// The sweeper trusts that every object the service stores lies under
// ObjectPrefix; an object outside it would never be collected.
func TestObjectKeyLiesUnderThePrefix(t *testing.T) {
	key := ObjectKey("0b9c3a52-8f0e-4c8e-9d55-5d1f0c2b7a11", "file-abc")
	if want := "ws/0b9c3a52-8f0e-4c8e-9d55-5d1f0c2b7a11/file-abc"; key != want {
		t.Fatalf("ObjectKey = %q, want %q", key, want)
	}
	if !strings.HasPrefix(key, ObjectPrefix) {
		t.Fatalf("%q is not under %q", key, ObjectPrefix)
	}
}
