package redis

import (
	"bytes"
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/aigateway/gateway/policy/limits"
)

// TestClusterNeverRunsAScriptTwice: a Cluster node whose reply to a
// decision is lost (EOF after the script ran) has charged the limit once,
// and the limiter says it failed; go-redis, left to itself, sent the
// script again on a new connection and charged twice (a pipeline, every
// check of it twice). Against a node that is gone, a call fails at once
// rather than after go-redis's retries and their back-off.
func TestClusterNeverRunsAScriptTwice(t *testing.T) {
	node, proxy := startProxiedClusterNode(t)
	client, err := NewClient(ClientOptions{Addrs: []string{proxy.Addr()}, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	direct := goredis.NewClient(&goredis.Options{Addr: node.Addr(), MaxRetries: -1})
	defer direct.Close()
	ctx := context.Background()
	l := NewLimiter(client, "once:")
	// remaining reads a bucket straight from the node (cost 0 charges
	// nothing).
	remaining := func(key string) int {
		t.Helper()
		d, err := NewLimiter(direct, "once:").Allow(ctx, key, hourly, 0)
		if err != nil {
			t.Fatal(err)
		}
		return d.Remaining
	}
	// Warm: the script cached on the node, the slot map read.
	if _, err := l.Allow(ctx, "warm", hourly, 1); err != nil {
		t.Fatal(err)
	}

	proxy.loseNextScriptReply()
	if _, err := l.Allow(ctx, "a", hourly, 1); !errors.Is(err, limits.ErrLimiterUnavailable) {
		t.Errorf("Allow with its reply lost = %v, want ErrLimiterUnavailable", err)
	}
	if got := remaining("a"); got != hourly.Burst-1 {
		t.Errorf("after one Allow whose reply was lost, %d of %d remain, want %d: the script ran %d times",
			got, hourly.Burst, hourly.Burst-1, hourly.Burst-got)
	}

	proxy.loseNextScriptReply()
	checks := []limits.Check{{Key: "b1", Limit: hourly, Cost: 1}, {Key: "b2", Limit: hourly, Cost: 1}}
	if _, err := l.AllowAll(ctx, checks); !errors.Is(err, limits.ErrLimiterUnavailable) {
		t.Errorf("AllowAll with its replies lost = %v, want ErrLimiterUnavailable", err)
	}
	for _, c := range checks {
		if got := remaining(c.Key); got != hourly.Burst-1 {
			t.Errorf("after one AllowAll whose replies were lost, %d of %d remain on %s, want %d: the script ran %d times",
				got, hourly.Burst, c.Key, hourly.Burst-1, hourly.Burst-got)
		}
	}

	// A dead node: refused dials, each call's own.
	node.kill()
	proxy.close()
	var took []time.Duration
	for range 5 {
		start := time.Now()
		if _, err := l.Allow(ctx, "dead", hourly, 1); !errors.Is(err, limits.ErrLimiterUnavailable) {
			t.Fatalf("Allow on a dead node = %v, want ErrLimiterUnavailable", err)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	t.Logf("a call on a dead node fails after %v (median of %d)", took[len(took)/2], len(took))
	// go-redis's retries wait 10 ms to 1 s between attempts, three times.
	if med := took[len(took)/2]; med > 30*time.Millisecond {
		t.Errorf("a call on a dead node failed after %v (median), want at once", med)
	}
}

var hourly = limits.Limit{Rate: 1, Per: time.Hour, Burst: 10}

// startProxiedClusterNode starts a Cluster of one master holding every
// slot, which announces the address of a proxy in front of it: every
// connection of a Cluster client goes through the proxy.
func startProxiedClusterNode(t *testing.T) (*redisServer, *replyLoser) {
	t.Helper()
	p := startReplyLoser(t)
	node := startRedisServer(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
		"--cluster-announce-ip", "127.0.0.1", "--cluster-announce-port", strconv.Itoa(p.port()))
	p.target.Store(node.Addr())
	c := goredis.NewClient(&goredis.Options{Addr: node.Addr(), MaxRetries: -1})
	defer c.Close()
	ctx := context.Background()
	if err := c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := c.ClusterInfo(ctx).Result()
		if err == nil && bytes.Contains([]byte(info), []byte("cluster_state:ok")) {
			return node, p
		}
		if time.Now().After(deadline) {
			t.Fatalf("one-node cluster not ready: %q, %v", info, err)
		}
		time.Sleep(10 * time.Millisecond) // polling a child process, bounded by the deadline
	}
}

// replyLoser forwards TCP connections to target and, when armed, closes
// the connection that sent a script instead of passing its reply back: a
// reply lost after the command ran.
type replyLoser struct {
	ln     net.Listener
	target atomic.Value // string
	armed  atomic.Bool
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
}

func startReplyLoser(t *testing.T) *replyLoser {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &replyLoser{ln: ln}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(p.close)
	return p
}

func (p *replyLoser) Addr() string         { return p.ln.Addr().String() }
func (p *replyLoser) port() int            { return p.ln.Addr().(*net.TCPAddr).Port }
func (p *replyLoser) loseNextScriptReply() { p.armed.Store(true) }
func (p *replyLoser) track(cs ...net.Conn) {
	p.mu.Lock()
	p.conns = append(p.conns, cs...)
	p.mu.Unlock()
}
func (p *replyLoser) closeBoth(a, b net.Conn) { _ = a.Close(); _ = b.Close() }
func (p *replyLoser) script(chunk []byte) bool {
	return bytes.Contains(bytes.ToLower(chunk), []byte("eval"))
}

func (p *replyLoser) serve() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		target, _ := p.target.Load().(string)
		out, err := net.Dial("tcp", target)
		if err != nil {
			_ = in.Close()
			continue
		}
		p.track(in, out)
		var lose atomic.Bool
		p.wg.Add(2)
		go func() { // client to server
			defer p.wg.Done()
			defer p.closeBoth(in, out)
			buf := make([]byte, 32<<10)
			for {
				n, err := in.Read(buf)
				if n > 0 {
					if p.script(buf[:n]) && p.armed.CompareAndSwap(true, false) {
						lose.Store(true) // before the server can answer
					}
					if _, err := out.Write(buf[:n]); err != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
		go func() { // server to client
			defer p.wg.Done()
			defer p.closeBoth(in, out)
			buf := make([]byte, 32<<10)
			for {
				n, err := out.Read(buf)
				if n > 0 {
					if lose.Load() {
						return // the reply dropped, the client's connection closed
					}
					if _, err := in.Write(buf[:n]); err != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
	}
}

func (p *replyLoser) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
