package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/aigateway/gateway/backends/byok"
	"github.com/aigateway/gateway/files"
	"github.com/aigateway/gateway/workspace"
	"github.com/google/uuid"
)

// byokSet stores a workspace's own key for a provider, sealed with the BYOK
// encryption key; the plaintext comes from stdin so it never sits in shell
// history or the process list.
func byokSet(ctx context.Context, args []string, e env) error {
	fs, path := newFlags("byok set")
	wsID := fs.String("workspace", "", "workspace id (UUID)")
	provider := fs.String("provider", "", "openai or anthropic")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if _, err := uuid.Parse(*wsID); err != nil {
		return errors.New("--workspace must be a workspace UUID")
	}
	if !files.IsProvider(*provider) {
		return errors.New("--provider must be openai or anthropic")
	}
	line, err := bufio.NewReader(io.LimitReader(e.stdin, 4096)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read key from stdin: %w", err)
	}
	secret := byok.NewSecret(strings.TrimSpace(line))
	if secret.Reveal() == "" {
		return errors.New("no key on stdin")
	}

	cfg, err := loadConfig(*path, e.getenv)
	if err != nil {
		return err
	}
	log, flush := newLogger(cfg.Log, e.stderr)
	defer flush()
	sealer, err := openSealer(cfg, e.getenv, log)
	if err != nil {
		return err
	}
	st, err := openStore(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer st.Close()
	id := uuid.MustParse(*wsID).String()
	sealed, err := sealer.Seal(id, *provider, secret)
	if err != nil {
		return err
	}
	err = st.PutProviderKey(ctx, id, *provider, sealed)
	switch {
	case errors.Is(err, workspace.ErrNotFound):
		return fmt.Errorf("workspace %s does not exist", id)
	case err != nil:
		return fmt.Errorf("store key: %w", err)
	}
	fmt.Fprintf(e.stdout, "stored the %s key of workspace %s\n", *provider, id)
	return nil
}
