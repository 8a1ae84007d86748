// Command standin serves the OpenAI (or Anthropic) Files API stand-in of
// backends/providers/providertest as a process of its own, holding -files files, so
// a load benchmark can point a real gateway at it and read the stand-in's
// CPU time apart from the gateway's. With -discard it keeps no upload's
// bytes, so it drains as fast as the connection allows. It prints its base URL (the value for
// providers.<name>.base_url) on the first line of stdout and serves until
// it is signalled.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"

	"github.com/aigateway/gateway/backends/providers/providertest"
)

func main() {
	provider := flag.String("provider", "openai", "openai or anthropic")
	n := flag.Int("files", 20, "files the stand-in holds")
	discard := flag.Bool("discard", false, "parse uploads as they arrive and keep none of their bytes")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *provider, *n, *discard, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, provider string, n int, discard bool, stdout io.Writer) error {
	dir, err := os.MkdirTemp("", "standin-*")
	if err != nil {
		return err
	}
	t := &process{dir: dir}
	defer t.close()
	var s *providertest.Server
	switch provider {
	case "openai":
		s = providertest.NewOpenAI(t)
	case "anthropic":
		s = providertest.NewAnthropic(t)
	default:
		return fmt.Errorf("unknown provider %q", provider)
	}
	// A load run would otherwise keep every request it made.
	s.DiscardRequests()
	if discard {
		s.DiscardUploads()
	}
	for i := range n {
		s.Seed(providertest.SeedFile{Filename: fmt.Sprintf("f%03d.jsonl", i), Size: 10,
			Open: func() io.Reader { return strings.NewReader("0123456789") }})
	}
	fmt.Fprintln(stdout, s.BaseURL)
	<-ctx.Done()
	return nil
}

// process is the testing.TB the stand-in's constructors take, for a
// process rather than a test: they only ask it for a temporary directory,
// for clean-ups and for Helper. Any other method panics on the nil TB.
type process struct {
	testing.TB
	dir      string
	cleanups []func()
}

func (p *process) Helper()          {}
func (p *process) TempDir() string  { return p.dir }
func (p *process) Cleanup(f func()) { p.cleanups = append(p.cleanups, f) }

// close runs the clean-ups last first, as a test would, and removes the
// directory.
func (p *process) close() {
	for i := len(p.cleanups) - 1; i >= 0; i-- {
		p.cleanups[i]()
	}
	_ = os.RemoveAll(p.dir)
}
