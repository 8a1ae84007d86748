package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
)

// TestKeysCreateService: --service makes a key of role service without a
// workspace; it cannot be combined with --management or --workspace.
func TestKeysCreateService(t *testing.T) {
	path := writeConfig(t, testConfig(t))
	ctx := context.Background()
	var out bytes.Buffer
	if err := run(ctx, []string{"keys", "create", "--config", path, "--name", "indexer", "--user", "alice", "--service"}, testGetenv, &out); err != nil {
		t.Fatalf("keys create --service: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if !strings.Contains(out.String(), "role: service\n") || strings.Contains(out.String(), "workspace:") ||
		!strings.HasPrefix(lines[len(lines)-1], "sk-gw-") {
		t.Errorf("output:\n%s", out.String())
	}
	for _, extra := range [][]string{{"--management"}, {"--workspace", "default"}} {
		args := append([]string{"keys", "create", "--config", path, "--name", "x", "--user", "alice", "--service"}, extra...)
		if err := run(ctx, args, testGetenv, &bytes.Buffer{}); err == nil {
			t.Errorf("keys create --service %v succeeded", extra)
		}
	}
}

// TestKeysListDisableDelete: the operator lists a user's keys of every role
// and disables, enables and deletes any of them by id; the secret is never
// printed by list.
func TestKeysListDisableDelete(t *testing.T) {
	path := writeConfig(t, testConfig(t))
	ctx := context.Background()
	create := func(role ...string) (id, token string) {
		t.Helper()
		var out bytes.Buffer
		args := append([]string{"keys", "create", "--config", path, "--name", "k", "--user", "alice"}, role...)
		if err := run(ctx, args, testGetenv, &out); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		token = lines[len(lines)-1]
		return strings.TrimPrefix(strings.SplitN(token, ".", 2)[0], "sk-gw-"), token
	}
	mgmt, mgmtToken := create("--management")
	std, _ := create()
	cmd := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := run(ctx, append(args[:1:1], append([]string{args[1], "--config", path}, args[2:]...)...), testGetenv, &out)
		return out.String(), err
	}
	if _, err := cmd("keys", "disable", "--id", mgmt); err != nil {
		t.Fatal(err)
	}
	if _, err := cmd("keys", "delete", "--id", std); err != nil {
		t.Fatal(err)
	}
	out, err := cmd("keys", "list", "--user", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, mgmt) || !strings.Contains(out, "disabled") || strings.Contains(out, std) ||
		strings.Contains(out, strings.SplitN(mgmtToken, ".", 2)[1]) {
		t.Errorf("list:\n%s", out)
	}
	if _, err := cmd("keys", "enable", "--id", mgmt); err != nil {
		t.Fatal(err)
	}
	if out, _ := cmd("keys", "list", "--user", "alice"); strings.Contains(out, "disabled") {
		t.Errorf("enabled key still listed disabled:\n%s", out)
	}
	if _, err := cmd("keys", "delete", "--id", std); err == nil || !strings.Contains(err.Error(), "no key") {
		t.Errorf("deleting a deleted key: %v", err)
	}
	if _, err := cmd("keys", "disable", "--id", "nothex"); err == nil {
		t.Error("a malformed id was accepted")
	}
}

// TestKeysCreateRefusals: the key's rules are the domain's, worded as the
// flags that break them, every problem at once, and nothing is stored.
func TestKeysCreateRefusals(t *testing.T) {
	path := writeConfig(t, testConfig(t))
	ctx := context.Background()
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--user", "alice"}, []string{"--name: must not be empty"}},
		{[]string{"--user", "alice", "--name", "a\tb"}, []string{"--name: must not contain control characters"}},
		{[]string{"--user", "alice", "--name", "my", "key"}, []string{`unexpected argument "key"`}},
		{[]string{"--name", "n", "--user", "al ice"}, []string{"--user: must be 1 to 128 characters"}},
		{[]string{"--name", strings.Repeat("n", 101)}, []string{"--name:", "--user:"}},
		{[]string{"--name", "n", "--user", "alice", "--management", "--workspace", "w"}, []string{"--workspace: applies to standard keys only"}},
		{[]string{"--name", "n", "--user", "alice", "--models", "nope"}, []string{`--models: "nope" is not a model id`}},
	} {
		args := append([]string{"keys", "create", "--config", path}, tc.args...)
		err := run(ctx, args, testGetenv, &bytes.Buffer{})
		for _, want := range tc.want {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("keys create %v: %v, want %q", tc.args, err, want)
			}
		}
	}
	var out bytes.Buffer
	if err := run(ctx, []string{"keys", "list", "--config", path, "--user", "alice"}, testGetenv, &out); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(out.String()), "\n"); len(lines) != 1 {
		t.Errorf("a refused key was stored:\n%s", out.String())
	}
}

// TestByokSet: the operator stores a workspace's provider key read from
// stdin, through the same rules as the domain's; refusals name the flag
// at fault, and an unknown workspace says so.
func TestByokSet(t *testing.T) {
	path := writeConfig(t, testConfig(t))
	ctx := context.Background()
	var out bytes.Buffer
	if err := run(ctx, []string{"keys", "create", "--config", path, "--name", "k", "--user", "alice"}, testGetenv, &out); err != nil {
		t.Fatal(err)
	}
	var ws string
	for _, line := range strings.Split(out.String(), "\n") {
		if v, ok := strings.CutPrefix(line, "workspace: "); ok {
			ws = v
		}
	}
	if ws == "" {
		t.Fatalf("no workspace in %q", out.String())
	}
	byok := func(stdin string, args ...string) (string, error) {
		var out bytes.Buffer
		err := runWith(ctx, append([]string{"byok", "set", "--config", path}, args...),
			env{getenv: testGetenv, stdin: strings.NewReader(stdin), stdout: &out, stderr: io.Discard})
		return out.String(), err
	}
	if out, err := byok("sk-proj-0123456789abcdef\n", "--workspace", ws, "--provider", "openai"); err != nil ||
		!strings.Contains(out, "stored the openai key of workspace "+ws) {
		t.Fatalf("byok set: %q %v", out, err)
	}
	for _, tc := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{"k\n", []string{"--workspace", "nope", "--provider", "openai"}, "--workspace: must be a workspace id"},
		{"k\n", []string{"--workspace", ws, "--provider", "mistral"}, "--provider must be openai or anthropic"},
		{"\n", []string{"--workspace", ws, "--provider", "openai"}, "no key on stdin"},
		{"k\n", []string{"--workspace", "0f8fad5b-d9cb-469f-a165-70867728950e", "--provider", "openai"}, "does not exist"},
	} {
		if _, err := byok(tc.stdin, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("byok set %v: %v, want %q", tc.args, err, tc.want)
		}
	}
}
