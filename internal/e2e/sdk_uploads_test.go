package e2e

import (
	"fmt"
	"testing"
)

// TestOfficialSDKUploads drives OpenAI's Uploads resource with the official
// Node SDK, unmodified: a file in parts sent at once, completed with its
// md5 and read back byte for byte; another upload cancelled.
func TestOfficialSDKUploads(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Node")
	}
	node, dir := sdkNode(t)
	g := sdkConfig(t)
	key := g.newKey(t, "sdk-uploads")
	const partBytes, parts = 1 << 20, 4
	steps := runSDKScript(t, node, dir, "uploads.mjs", "GATEWAY_URL="+g.URL, "GATEWAY_KEY="+key,
		fmt.Sprintf("PART_BYTES=%d", partBytes), fmt.Sprintf("PARTS=%d", parts))
	seen := map[string]int{}
	for _, s := range steps {
		seen[s.Op]++
		if !s.OK {
			t.Errorf("%s failed: %s (status %v)", s.Op, s.Error, s.Status)
			continue
		}
		m, _ := s.Result.(map[string]any)
		switch s.Op {
		case "create":
			if m["object"] != "upload" || m["status"] != "pending" || m["file"] != nil {
				t.Errorf("create = %v", m)
			}
		case "part":
			if m["object"] != "upload.part" {
				t.Errorf("part = %v", m)
			}
		case "complete":
			file, _ := m["file"].(map[string]any)
			// The SDK's own shape: OpenAI's file object.
			if m["status"] != "completed" || file["object"] != "file" || file["bytes"] != float64(partBytes*(parts-1)+100) {
				t.Errorf("complete = %v", m)
			}
		case "download":
			if m["same"] != true {
				t.Errorf("download = %v, want the bytes sent", m)
			}
		case "cancel":
			if m["status"] != "cancelled" {
				t.Errorf("cancel = %v", m)
			}
		}
	}
	if seen["create"] != 2 || seen["part"] != parts || seen["complete"] != 1 || seen["download"] != 1 || seen["cancel"] != 1 {
		t.Errorf("steps reported: %v", seen)
	}
}
