package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/aigateway/gateway/cmd/gateway/app"
	"github.com/aigateway/gateway/internal/audit"
)

// TestCommandsRecordTheirActor: the key commands' changes are recorded as
// the command's ("cli keys disable"), with no key and no address, and are
// the user's whose key was changed.
func TestCommandsRecordTheirActor(t *testing.T) {
	cfg := testConfig(t)
	path := writeConfig(t, cfg)
	ctx := context.Background()
	var out bytes.Buffer
	if err := run(ctx, []string{"keys", "create", "--config", path, "--name", "k", "--user", "alice"}, testGetenv, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	id := strings.TrimPrefix(strings.SplitN(lines[len(lines)-1], ".", 2)[0], "sk-gw-")
	for _, verb := range []string{"disable", "enable", "delete"} {
		if err := run(ctx, []string{"keys", verb, "--config", path, "--id", id}, testGetenv, &bytes.Buffer{}); err != nil {
			t.Fatalf("keys %s: %v", verb, err)
		}
	}

	rt, err := app.Open(ctx, cfg, app.Env{Getenv: testGetenv})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	entries, err := rt.Audit().AuditEntries(ctx, audit.Query{UserID: "alice", Target: id, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		action audit.Action
		via    string
	}{{audit.KeyDelete, "cli keys delete"}, {audit.KeyEnable, "cli keys enable"}, {audit.KeyDisable, "cli keys disable"}, {audit.KeyCreate, "cli keys create"}}
	if len(entries) != len(want) {
		t.Fatalf("%d entries of the key, want %d: %+v", len(entries), len(want), entries)
	}
	for i, w := range want {
		e := entries[i]
		if e.Action != w.action || e.Actor != (audit.Actor{UserID: "alice", Via: w.via}) {
			t.Errorf("entry %d: %s by %+v, want %s by %s", i, e.Action, e.Actor, w.action, w.via)
		}
	}
	others, err := rt.Audit().AuditEntries(ctx, audit.Query{UserID: "bob", Limit: 10})
	if err != nil || len(others) != 0 {
		t.Errorf("another user's entries: %+v, %v", others, err)
	}
}
