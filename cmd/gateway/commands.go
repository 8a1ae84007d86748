package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/aigateway/gateway/cmd/gateway/app"
	"github.com/aigateway/gateway/configs"
	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/internal/audit"
	"github.com/aigateway/gateway/internal/invalid"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/policy/keys/seal"
	"github.com/aigateway/gateway/workspace"
)

// newFlags makes a flag set whose errors are returned, not printed.
func newFlags(name string) (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	path := fs.String("config", configs.DefaultConfigPath, "configuration file")
	return fs, path
}

// parseFlags parses args into fs and refuses what is left over: a value
// with a space that was not quoted (--name my key) must not be cut short
// silently.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (quote a value that has spaces)", fs.Arg(0))
	}
	return nil
}

// openRuntime loads the configuration at path and opens the runtime every command
// works on. Configuration errors are returned before anything is opened.
func openRuntime(ctx context.Context, path string, e env) (*app.Runtime, error) {
	cfg, err := app.LoadConfig(path, e.getenv)
	if err != nil {
		return nil, err
	}
	return app.Open(ctx, cfg, app.Env{Getenv: e.getenv, Logs: e.stderr})
}

// asCommand is ctx carrying the actor of the changes a command makes:
// Via "cli keys disable", and user, the user it acts for, when the
// command names one. A command acts with the operator's access to the
// database, with no key and from no address; the store records a change
// with no user as its target's owner's, so that user sees it.
func asCommand(ctx context.Context, command, user string) context.Context {
	return audit.WithActor(ctx, audit.Actor{UserID: user, Via: "cli " + command})
}

// listenEnv overrides server.listen from the environment; --listen
// overrides both.
const listenEnv = "GATEWAY_LISTEN"

// serve runs the gateway until ctx ends, then drains (see app.App.Serve).
func serve(ctx context.Context, args []string, e env) error {
	fs, path := newFlags("serve")
	listen := fs.String("listen", "", "address to listen on, host:port (default: server.listen, or $"+listenEnv+")")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := app.LoadConfig(*path, e.getenv)
	if err != nil {
		return err
	}
	switch {
	case *listen != "":
		cfg.Server.Listen = *listen
	case e.getenv(listenEnv) != "":
		cfg.Server.Listen = e.getenv(listenEnv)
	}
	rt, err := app.Open(ctx, cfg, app.Env{Getenv: e.getenv, Logs: e.stderr, Traces: true})
	if err != nil {
		return err
	}
	defer rt.Close()
	a, err := app.Build(ctx, rt)
	if err != nil {
		return err
	}
	defer a.Close()
	listening := func(addr string) {
		// Plain lines on stdout, apart from the JSON logs on stderr: where
		// to go, every time, and the one bootstrap step of an empty
		// embedded store (as notebook servers print theirs), whose link
		// carries a one-time token that creates the first management key.
		fmt.Fprintln(e.stdout, a.Welcome(addr))
		if link := a.FirstRunLink(addr); link != "" {
			fmt.Fprintf(e.stdout, "No API key exists yet. Open this link within 10 minutes to create the first management key (it works once):\n  %s\n", link)
		}
		if e.listening != nil {
			e.listening(addr)
		}
	}
	return a.Serve(ctx, listening)
}

func migrate(ctx context.Context, args []string, e env) error {
	fs, path := newFlags("migrate")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	rt, err := openRuntime(ctx, *path, e) // opening the store applies the migrations
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, "migrations applied")
	return rt.Close()
}

// keysCreate makes a key and prints its secret as the last line of stdout;
// the secret is shown this once and only its hash is stored.
func keysCreate(ctx context.Context, args []string, e env) error {
	fs, path := newFlags("keys create")
	name := fs.String("name", "", "a label for the key")
	user := fs.String("user", "", "the id of the user the key belongs to")
	management := fs.Bool("management", false, "make a management key (workspaces)")
	service := fs.Bool("service", false, "make a service key (for other gateway components: model lookups, reading the files of every workspace of the user)")
	ws := fs.String("workspace", "", "workspace id or slug of a standard key (default: the user's default workspace)")
	models := fs.String("models", "", "comma-separated model ids the key may look up (default: all)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var problems []string
	if *management && *service {
		problems = append(problems, "--management and --service exclude each other")
	}
	allow, err := parseModels(*models)
	if err != nil {
		problems = append(problems, err.Error())
	}
	req := keys.NewKeyRequest{Name: *name, User: *user, Role: keys.RoleStandard, Workspace: *ws, Models: allow}
	switch {
	case *management:
		req.Role = keys.RoleManagement
	case *service:
		req.Role = keys.RoleService
	}
	// The key's own rules are the domain's; they are checked here too, so
	// that a mistyped command is told before the store is opened.
	problems = append(problems, flagProblems(req.Check())...)
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}

	rt, err := openRuntime(ctx, *path, e)
	if err != nil {
		return err
	}
	defer rt.Close()
	token, key, err := rt.CreateKey(asCommand(ctx, "keys create", req.User), req)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "key id: %s\nrole: %s\nuser: %s\n", key.ID, key.Role, key.UserID)
	if key.WorkspaceID != "" {
		fmt.Fprintf(e.stdout, "workspace: %s\n", key.WorkspaceID)
	}
	fmt.Fprintln(e.stdout, token)
	return nil
}

// byokSet stores a workspace's own key for a provider, sealed with the BYOK
// encryption key; the plaintext comes from stdin so it never sits in shell
// history or the process list.
func byokSet(ctx context.Context, args []string, e env) error {
	fs, path := newFlags("byok set")
	wsID := fs.String("workspace", "", "workspace id (UUID)")
	provider := fs.String("provider", "", "openai or anthropic")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if !files.IsProvider(*provider) {
		return errors.New("--provider must be openai or anthropic")
	}
	line, err := bufio.NewReader(io.LimitReader(e.stdin, 4096)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read key from stdin: %w", err)
	}
	secret := seal.NewSecret(strings.TrimSpace(line))
	if secret.Reveal() == "" {
		return errors.New("no key on stdin")
	}
	rt, err := openRuntime(ctx, *path, e)
	if err != nil {
		return err
	}
	defer rt.Close()
	err = rt.Keys().SetProviderKey(asCommand(ctx, "byok set", ""), *wsID, *provider, secret)
	if problems := flagProblems(err); len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	if errors.Is(err, workspace.ErrNotFound) {
		return fmt.Errorf("workspace %s does not exist", *wsID)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "stored the %s key of workspace %s\n", *provider, *wsID)
	return nil
}

// flagProblems words the field problems of err as the flags that set
// those fields ("--user: must be ...").
func flagProblems(err error) []string {
	var out []string
	for _, f := range invalid.Fields(err) {
		out = append(out, "--"+f.Name+": "+f.Problem)
	}
	return out
}

// parseModels splits --models; empty means no allowlist (nil).
func parseModels(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []string
	for _, m := range strings.Split(s, ",") {
		m = strings.TrimSpace(m)
		if m == "" || !strings.Contains(m, "/") {
			return nil, fmt.Errorf("--models: %q is not a model id (author/slug)", m)
		}
		out = append(out, m)
	}
	return out, nil
}
