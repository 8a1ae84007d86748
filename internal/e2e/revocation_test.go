package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aigateway/gateway/cmd/gateway/app"
	"github.com/aigateway/gateway/configs"
	"github.com/aigateway/gateway/internal/testenv"
	"github.com/aigateway/gateway/policy/keys"
	"gopkg.in/yaml.v3"
)

// TestFleetRevocation: three gateway processes on PostgreSQL and Redis. A
// key disabled through one replica, one deleted through another and one
// reaching its expires_at are refused by every replica within 5 s, while
// they are used at over 100 requests/s through all three; Redis is killed
// and restarted in between, which revocation does not depend on.
func TestFleetRevocation(t *testing.T) {
	t.Parallel() // its own processes, Redis and database; mostly waiting on polls
	server := testenv.Require(t, testenv.RedisServerVar)
	rd := startRedisServer(t, server)
	bin := buildGatewayBinary(t)

	cfg := fleetConfig(t)
	dir := filepath.Dir(cfg.Metadata.DSN)
	cfg.Metadata = configs.Metadata{Driver: "postgres", DSN: freshPostgresDB(t)}
	cfg.Redis.URL = fmt.Sprintf("redis://%s/0", rd.addr)
	cfg.Redis.KeyPrefix = uniqueKeyPrefix()
	cfg.Redis.ReplicasHint = 3
	cfg.Redis.Timeout = 200 * time.Millisecond
	cfg.Limits.Rate.Default = configs.Rate{Requests: 100_000, Per: time.Minute, Burst: 10_000}
	// Refused keys keep coming from one address: that is the test, not an
	// attack to slow down.
	cfg.Limits.Rate.AuthFailures = configs.Rate{Requests: 100_000, Per: time.Minute, Burst: 10_000}
	path := writeConfigIn(t, dir, cfg)
	admin := fleetManagementKey(t, path, "alice")
	procs := startFleet(t, bin, path, 3)
	client := fleetClient(t)

	disabled := createKeyOver(t, client, procs[0], admin, `{"name":"to-disable"}`)
	deleted := createKeyOver(t, client, procs[1], admin, `{"name":"to-delete"}`)
	// Whole seconds (the spec's form), at least 4 s ahead so that the load
	// has warmed every replica's cache before it comes.
	expiry := time.Now().Add(5 * time.Second).Truncate(time.Second).UTC()
	expiring := createKeyOver(t, client, procs[2], admin,
		fmt.Sprintf(`{"name":"to-expire","expires_at":%q}`, expiry.Format(time.RFC3339)))

	// Load: every key through every replica, together over 100 requests/s,
	// so each replica answers them from its authentication cache.
	load := newRevocationLoad(client, procs, []string{disabled.token, deleted.token, expiring.token})
	defer load.stop()
	waitFor(t, 10*time.Second, "every key admitted by every replica", func() bool {
		return load.admittedEverywhere()
	})

	// Disable through replica 0.
	changed := time.Now()
	if res, body := sendJSON(t, client, "PATCH", procs[0].base+"/api/v1/keys/"+disabled.hash, admin, `{"disabled":true}`); res.StatusCode != http.StatusOK {
		t.Fatalf("disable: %d %s", res.StatusCode, body)
	}
	load.expectRefusedEverywhere(t, disabled.token, changed, 5*time.Second)

	// Redis dies and comes back; revocation never needed it.
	rd.kill(t)
	rd.restart(t)

	changed = time.Now()
	if res, body := sendJSON(t, client, "DELETE", procs[1].base+"/api/v1/keys/"+deleted.hash, admin, ""); res.StatusCode != http.StatusOK {
		t.Fatalf("delete: %d %s", res.StatusCode, body)
	}
	load.expectRefusedEverywhere(t, deleted.token, changed, 5*time.Second)

	load.expectRefusedEverywhere(t, expiring.token, expiry, 5*time.Second)

	load.stop()
	if rps := load.rate(); rps < 100 {
		t.Errorf("load ran at %.0f requests/s, want at least 100 for the test to mean something", rps)
	}
	if f := load.failures(); f != "" {
		t.Errorf("a request failed during the run: %s", f)
	}
}

// writeConfigIn writes cfg as the fleet's configuration file in dir (where
// the processes write their logs), for a fleet whose metadata is not a file.
func writeConfigIn(t testing.TB, dir string, cfg configs.Config) string {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("fleet config: %v", err)
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "gateway.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// fleetManagementKey creates a management key in the fleet's store.
func fleetManagementKey(t *testing.T, cfgPath, user string) string {
	t.Helper()
	return fleetRoleKey(t, cfgPath, user, keys.RoleManagement)
}

// fleetRoleKey creates a key of role in the fleet's store, as the CLI does.
func fleetRoleKey(t *testing.T, cfgPath, user string, role keys.Role) string {
	t.Helper()
	cfg, err := app.LoadConfig(cfgPath, testGetenv)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := app.Open(context.Background(), cfg, app.Env{Getenv: testGetenv, Logs: io.Discard})
	if err != nil {
		t.Fatalf("open runtime: %v", err)
	}
	defer rt.Close()
	token, _, err := rt.CreateKey(context.Background(), keys.NewKeyRequest{Name: string(role), User: user, Role: role})
	if err != nil {
		t.Fatal(err)
	}
	return token
}

type createdKey struct{ hash, token string }

func createKeyOver(t *testing.T, c *http.Client, p *gatewayProc, admin, body string) createdKey {
	t.Helper()
	res, raw := sendJSON(t, c, "POST", p.base+"/api/v1/keys", admin, body)
	if res.StatusCode != http.StatusCreated {
		t.Fatalf("create key: %d %s", res.StatusCode, raw)
	}
	var out struct {
		Data struct {
			Hash string `json:"hash"`
		} `json:"data"`
		Key string `json:"key"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.Key == "" {
		t.Fatalf("create key answer %s: %v", raw, err)
	}
	return createdKey{hash: out.Data.Hash, token: out.Key}
}

func sendJSON(t *testing.T, c *http.Client, method, url, key, body string) (*http.Response, []byte) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res, raw
}

// revocationLoad sends each key through each replica, paced, and records
// per (key, replica) the last time it was admitted.
type revocationLoad struct {
	c      *http.Client
	procs  []*gatewayProc
	keys   []string
	done   chan struct{}
	wg     sync.WaitGroup
	start  time.Time
	end    time.Time
	mu     sync.Mutex
	total  int
	last   map[string][]time.Time // key -> per replica, last 200 seen (request start)
	failed string
	once   sync.Once
}

func newRevocationLoad(c *http.Client, procs []*gatewayProc, keys []string) *revocationLoad {
	l := &revocationLoad{c: c, procs: procs, keys: keys, done: make(chan struct{}), start: time.Now(),
		last: map[string][]time.Time{}}
	for _, k := range keys {
		l.last[k] = make([]time.Time, len(procs))
	}
	for _, k := range keys {
		for p := range procs {
			l.wg.Add(1)
			go l.worker(k, p)
		}
	}
	return l
}

// worker: one key through one replica every 40 ms (25/s; nine workers make
// 225/s).
func (l *revocationLoad) worker(key string, p int) {
	defer l.wg.Done()
	tick := time.NewTicker(40 * time.Millisecond) // pacing, not synchronisation
	defer tick.Stop()
	for {
		select {
		case <-l.done:
			return
		case <-tick.C:
		}
		sent := time.Now()
		r := fetch(l.c, l.procs[p].base+fleetModelPath, key)
		l.mu.Lock()
		l.total++
		switch {
		case r.status == http.StatusOK:
			if sent.After(l.last[key][p]) {
				l.last[key][p] = sent
			}
		case r.status == http.StatusUnauthorized:
		default:
			if l.failed == "" {
				l.failed = fmt.Sprintf("replica %d: %d %v %s", p, r.status, r.err, bytes.TrimSpace(r.body))
			}
		}
		l.mu.Unlock()
	}
}

func (l *revocationLoad) admittedEverywhere() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, per := range l.last {
		for _, t := range per {
			if t.IsZero() {
				return false
			}
		}
	}
	return true
}

// expectRefusedEverywhere waits until key has been refused by every replica
// for a while, then checks that no replica admitted it more than within
// after since.
func (l *revocationLoad) expectRefusedEverywhere(t *testing.T, key string, since time.Time, within time.Duration) {
	t.Helper()
	// Every replica must refuse a request sent now; give them until the
	// bound, then a second more of load to catch a late admission.
	deadline := since.Add(within)
	for p, proc := range l.procs {
		for {
			r := fetch(l.c, proc.base+fleetModelPath, key)
			if r.status == http.StatusUnauthorized {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica %d still admits the key %v after the change (status %d)", p, time.Since(since).Round(time.Millisecond), r.status)
			}
			time.Sleep(20 * time.Millisecond) // poll interval, bounded by the deadline
		}
	}
	settle := time.Now().Add(time.Second)
	waitFor(t, 2*time.Second, "a second of load after the refusal", func() bool { return time.Now().After(settle) })
	l.mu.Lock()
	defer l.mu.Unlock()
	for p, last := range l.last[key] {
		if last.After(deadline) {
			t.Errorf("replica %d admitted the key at %v after the change, later than %v", p, last.Sub(since).Round(time.Millisecond), within)
		} else {
			t.Logf("replica %d: last admitted %v after the change", p, last.Sub(since).Round(time.Millisecond))
		}
	}
}

func (l *revocationLoad) stop() {
	l.once.Do(func() {
		close(l.done)
		l.wg.Wait()
		l.end = time.Now()
	})
}

func (l *revocationLoad) rate() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return float64(l.total) / l.end.Sub(l.start).Seconds()
}

func (l *revocationLoad) failures() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed
}

// TestRevocationWhileTheDatabaseIsDown: a key revoked just as its replica
// loses the database is refused within 5 s all the same. The replica has
// the key in its authentication cache and cannot read the change log, so
// past the revocation bound it must stop trusting the cache: its answers
// turn to 503 (it cannot decide), never 200, and 401 once the database is
// back.
func TestRevocationWhileTheDatabaseIsDown(t *testing.T) {
	t.Parallel() // its own process and database; mostly waiting
	bin := buildGatewayBinary(t)
	dsn := freshPostgresDB(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	proxy := startSlowProxy(t, u.Host, 0)

	direct := fleetConfig(t)
	direct.Metadata = configs.Metadata{Driver: "postgres", DSN: dsn}
	directPath := writeConfigIn(t, t.TempDir(), direct)
	admin := fleetManagementKey(t, directPath, "alice")

	cfg := fleetConfig(t)
	dir := filepath.Dir(cfg.Metadata.DSN)
	viaProxy := *u
	viaProxy.Host = proxy.addr()
	cfg.Metadata = configs.Metadata{Driver: "postgres", DSN: viaProxy.String()}
	p := startFleet(t, bin, writeConfigIn(t, dir, cfg), 1)[0]
	client := fleetClient(t)
	key := createKeyOver(t, client, p, admin, `{"name":"to-revoke"}`)
	id := strings.TrimPrefix(strings.SplitN(key.token, ".", 2)[0], keys.KeyPrefix)

	// The key is read into the replica's cache now; its cache would trust
	// it for 10 s from here.
	if r := fetch(client, p.base+fleetModelPath, key.token); r.err != nil || r.status != http.StatusOK {
		t.Fatalf("lookup before the outage = %d %v", r.status, r.err)
	}
	proxy.cut()
	rt := openRuntime(t, directPath)
	revoked := time.Now()
	if err := rt.Keys().SetDisabled(context.Background(), id, true); err != nil {
		t.Fatal(err)
	}

	statuses := map[int]int{}
	probes := time.NewTicker(50 * time.Millisecond)
	defer probes.Stop()
	for ; time.Since(revoked) < 8*time.Second; <-probes.C {
		r := fetch(client, p.base+fleetModelPath, key.token)
		since := time.Since(revoked)
		if r.err != nil {
			t.Fatalf("lookup %v after the revocation: %v", since, r.err)
		}
		statuses[r.status]++
		switch {
		case r.status == http.StatusOK && since > 5*time.Second:
			t.Fatalf("the revoked key was served %v after the revocation, with the database down", since)
		case r.status != http.StatusOK && r.status != http.StatusUnauthorized && r.status != http.StatusServiceUnavailable:
			t.Fatalf("lookup %v after the revocation = %d %s, want 200 (at first), 401 or 503", since, r.status, r.body)
		}
	}
	if statuses[http.StatusServiceUnavailable] == 0 {
		t.Errorf("no 503 while the database was down: %v", statuses)
	}
	t.Logf("answers while the database was down: %v", statuses)

	proxy.restore()
	waitFor(t, 10*time.Second, "the revoked key refused with 401 once the database is back", func() bool {
		return fetch(client, p.base+fleetModelPath, key.token).status == http.StatusUnauthorized
	})
}

// openRuntime opens a Runtime on the configuration at path, as a command
// of the CLI does.
func openRuntime(t *testing.T, path string) *app.Runtime {
	t.Helper()
	cfg, err := app.LoadConfig(path, testGetenv)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := app.Open(context.Background(), cfg, app.Env{Getenv: testGetenv, Logs: io.Discard})
	if err != nil {
		t.Fatalf("open runtime: %v", err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}
