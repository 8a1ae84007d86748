// Command gateway runs the edge API gateway and its operator commands.
//
//	gateway serve  --config FILE
//	gateway keys create --config FILE --name N --user U [--management|--service] [--workspace ID|SLUG] [--models a/b,c/d]
//	gateway keys list --config FILE --user U
//	gateway keys disable|enable|delete --config FILE --id KEY_ID
//	gateway byok set --config FILE --workspace ID --provider openai|anthropic   (key on stdin)
//	gateway migrate --config FILE
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout); err != nil {
		// One line, whatever failed: an operator's log collector (and a
		// crash-looping pod's last message) shows it whole.
		fmt.Fprintln(os.Stderr, "gateway:", strings.ReplaceAll(err.Error(), "\n", "; "))
		os.Exit(1)
	}
}

// run is main without the process: arguments, environment and output are
// parameters so tests can drive every command in-process.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	return runWith(ctx, args, env{getenv: getenv, stdin: os.Stdin, stdout: stdout, stderr: os.Stderr})
}

// env is what a command may touch of the outside world.
type env struct {
	getenv func(string) string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer // logs
	// listening, when set (tests), is told the address serve listens on.
	listening func(addr string)
}

const usage = `usage:
  gateway serve [--config FILE]
  gateway keys create [--config FILE] --name NAME --user USER [--management|--service] [--workspace ID|SLUG] [--models a/b,c/d]
  gateway keys list [--config FILE] --user USER
  gateway keys disable|enable|delete [--config FILE] --id KEY_ID   (any role; every replica refuses it within seconds)
  gateway byok set [--config FILE] --workspace ID --provider openai|anthropic   (reads the key from stdin)
  gateway migrate [--config FILE]`

func runWith(ctx context.Context, args []string, e env) error {
	if len(args) == 0 {
		return fmt.Errorf("no command\n%s", usage)
	}
	switch cmd, rest := args[0], args[1:]; {
	case cmd == "serve":
		return serve(ctx, rest, e)
	case cmd == "keys" && len(rest) > 0 && rest[0] == "create":
		return keysCreate(ctx, rest[1:], e)
	case cmd == "keys" && len(rest) > 0 && rest[0] == "list":
		return keysList(ctx, rest[1:], e)
	case cmd == "keys" && len(rest) > 0 && (rest[0] == "disable" || rest[0] == "enable" || rest[0] == "delete"):
		return keysChange(ctx, rest[0], rest[1:], e)
	case cmd == "byok" && len(rest) > 0 && rest[0] == "set":
		return byokSet(ctx, rest[1:], e)
	case cmd == "migrate":
		return migrate(ctx, rest, e)
	case cmd == "help" || cmd == "-h" || cmd == "--help":
		fmt.Fprintln(e.stdout, usage)
		return nil
	default:
		return fmt.Errorf("unknown command %q\n%s", cmd, usage)
	}
}
