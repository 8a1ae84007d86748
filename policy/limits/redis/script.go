package redis

import (
	"context"
	"crypto/sha1"
	"encoding/hex"

	goredis "github.com/redis/go-redis/v9"
)

// script is a Lua script that no client sends twice.
//
// A Cluster client retries, up to ClusterOptions.MaxRedirects times and
// whatever MaxRetries says, every command that met EOF, a dial error, a
// pool timeout, TRYAGAIN or CLUSTERDOWN, and a pipeline is sent again whole
// to the node where one of its commands met such an error. An EOF may come
// after the script ran: a retry then charges a limit twice (a pipeline, every
// check sent to that node), and against a dead master the retries, with
// their back-off, only delay the failover limiter's local answer. The
// command is therefore marked NoRetry, go-redis's own mark of a command
// that must not be sent again. It stays out of the way of MOVED and ASK,
// which go-redis follows before it asks NoRetry: they mean the command did
// not run, and during a reshard they must be followed for the decision to
// land on the slot's new owner. TRYAGAIN (a multi-key command mid-migration)
// does not arise with one key per script; CLUSTERDOWN is answered locally
// like any other outage.
type script struct {
	src  string
	hash string
}

func newScript(src string) *script {
	sum := sha1.Sum([]byte(src))
	return &script{src: src, hash: hex.EncodeToString(sum[:])}
}

// sendOnce is a command that go-redis never retries.
type sendOnce struct{ *goredis.Cmd }

func (sendOnce) NoRetry() bool { return true }

// processor is a client or a pipeline.
type processor interface {
	Process(ctx context.Context, cmd goredis.Cmder) error
}

// cmd returns an EVAL or EVALSHA (by name) of s on keys with args.
func (s *script) cmd(ctx context.Context, name string, keys []string, args []any) *goredis.Cmd {
	payload := s.hash
	if name == "eval" {
		payload = s.src
	}
	a := make([]any, 0, 3+len(keys)+len(args))
	a = append(a, name, payload, len(keys))
	for _, k := range keys {
		a = append(a, k)
	}
	a = append(a, args...)
	c := goredis.NewCmd(ctx, a...)
	if len(keys) > 0 {
		c.SetFirstKeyPos(3)
	}
	return c
}

// run runs s with EVALSHA, then with EVAL if the server had not cached it
// (NOSCRIPT: nothing ran, so nothing is charged twice).
func (s *script) run(ctx context.Context, c processor, keys []string, args ...any) *goredis.Cmd {
	cmd := s.evalSha(ctx, c, keys, args...)
	if goredis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		cmd = s.eval(ctx, c, keys, args...)
	}
	return cmd
}

// evalSha sends, or queues on a pipeline, s by its hash.
func (s *script) evalSha(ctx context.Context, c processor, keys []string, args ...any) *goredis.Cmd {
	cmd := s.cmd(ctx, "evalsha", keys, args)
	_ = c.Process(ctx, sendOnce{cmd})
	return cmd
}

// eval sends, or queues on a pipeline, s with its source.
func (s *script) eval(ctx context.Context, c processor, keys []string, args ...any) *goredis.Cmd {
	cmd := s.cmd(ctx, "eval", keys, args)
	_ = c.Process(ctx, sendOnce{cmd})
	return cmd
}
