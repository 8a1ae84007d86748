package e2e

// A PostgreSQL failover under load: the real gateway binary on a primary
// and its synchronous standby, reached through one multi-host DSN; the
// primary dies mid-traffic and the standby is promoted.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aigateway/gateway/cmd/gateway/app"
	"github.com/aigateway/gateway/configs"
	"github.com/aigateway/gateway/internal/testenv"
	"github.com/aigateway/gateway/policy/keys"
)

// failoverWithin is how soon after the promotion the gateway must write
// again, on every route of the test.
const failoverWithin = 10 * time.Second

// TestPostgresFailover: uploads, usage reports and key changes run
// concurrently while the primary is SIGKILLed and its synchronous standby
// promoted. Every answer is a success or a 503 with Retry-After (never a
// 500, never a dropped connection); every route writes again within
// failoverWithin of the promotion; and nothing answered 2xx is lost: each
// upload's record and bytes, the usage total to the millionth of a dollar
// (a batch refused with 503 is sent again with the same ids until
// counted, as the client does), each created key and each disabled one.
func TestPostgresFailover(t *testing.T) {
	testenv.Require(t, testenv.PostgresBinDirVar) // before a build it would not use
	bin := buildGatewayBinary(t)
	const standbyName = "failover_standby"
	// Synchronous replication: the primary acknowledges a commit only once
	// the standby has it, so a 2xx can never be lost with the primary.
	primary := testenv.StartPostgres(t, testenv.PostgresOptions{Settings: map[string]string{
		"synchronous_standby_names": standbyName,
		"synchronous_commit":        "on",
	}})
	standby := primary.StartStandby(t, standbyName, testenv.PostgresOptions{})
	primary.AwaitSynchronous(t, standbyName)

	cfg := fleetConfig(t)
	// connect_timeout bounds a dial to a host that does not answer; here the
	// dead primary refuses at once.
	cfg.Metadata = configs.Metadata{Driver: "postgres", DSN: fmt.Sprintf(
		"postgres://app@127.0.0.1:%d,127.0.0.1:%d/postgres?sslmode=disable&target_session_attrs=read-write&connect_timeout=2",
		primary.Port, standby.Port)}
	cfg.Files.Downloadable = true
	off := false
	cfg.Limits.Rate.Enabled = &off
	cfg.Limits.UploadsInFlightPerKey = 64
	path := writeConfigIn(t, filepath.Dir(cfg.Storage.FS.Dir), cfg)

	rt, err := app.Open(context.Background(), cfg, app.Env{Getenv: testGetenv, Logs: io.Discard})
	if err != nil {
		t.Fatalf("open runtime: %v", err)
	}
	newKey := func(name string, role keys.Role) (token, hash string) {
		token, k, err := rt.CreateKey(context.Background(), keys.NewKeyRequest{Name: name, User: "alice", Role: role})
		if err != nil {
			t.Fatalf("create %s key: %v", name, err)
		}
		return token, k.ID
	}
	l := &failoverLoad{
		c:      &http.Client{Timeout: 30 * time.Second},
		counts: map[string]map[int]int{},
	}
	l.mgmt, _ = newKey("admin", keys.RoleManagement)
	l.service, _ = newKey("meter", keys.RoleService)
	l.uploader, _ = newKey("uploader", keys.RoleStandard)
	_, l.metered = newKey("metered", keys.RoleStandard)
	_ = rt.Close()

	proc := launchGateway(t, bin, path, "gateway.log")
	proc.waitReady(t)
	l.base = proc.base

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() { l.uploads(w, stop) })
	}
	for w := range 2 {
		wg.Go(func() { l.usage(w, stop) })
		wg.Go(func() { l.keyChanges(w, stop) })
	}
	stopped := false
	stopLoad := func() {
		if !stopped {
			stopped = true
			close(stop)
			wg.Wait()
		}
	}
	defer stopLoad()

	kinds := []string{"upload", "usage", "key create", "key disable"}
	l.await(t, 60*time.Second, "every route to succeed 10 times before the failover", func() bool {
		return l.allSince(kinds, time.Time{}, func(r string, since time.Time) bool { return l.okSince(r, since) >= 10 })
	})

	// The outage lasts until every route has answered 503 a few times,
	// as it would while an operator or a failover manager decides.
	killed := time.Now()
	primary.Kill(t)
	l.await(t, 15*time.Second, "every route to answer 503 five times once the primary is gone", func() bool {
		return l.allSince(kinds, killed, func(r string, since time.Time) bool { return l.unavailableSince(r, since) >= 5 })
	})

	// Readiness says so too: a load balancer that goes by it takes the
	// replicas out for the failover's seconds.
	l.await(t, 10*time.Second, "/readyz to fail with the metadata check", func() bool {
		return l.readiness() == "unavailable"
	})

	promoting := time.Now()
	standby.Promote(t)
	promoted := time.Now()
	l.await(t, failoverWithin+5*time.Second, "every route to write again after the promotion", func() bool {
		return l.allSince(kinds, promoting, func(r string, since time.Time) bool { return l.okSince(r, since) > 0 })
	})
	l.await(t, failoverWithin, "/readyz to pass again", func() bool { return l.readiness() == "ok" })
	t.Logf("/readyz passes again %.2fs after the promotion began", time.Since(promoting).Seconds())
	var slowest time.Duration
	for _, k := range kinds {
		d := l.okAfter(k, promoting).Sub(promoting)
		t.Logf("%s: first success %.2fs after the promotion began", k, d.Seconds())
		slowest = max(slowest, d)
	}
	t.Logf("primary killed; promotion began %.2fs later and took %.2fs; every route wrote again %.2fs after it began",
		promoting.Sub(killed).Seconds(), promoted.Sub(promoting).Seconds(), slowest.Seconds())
	if slowest > failoverWithin {
		t.Errorf("the gateway wrote again %v after the promotion began, want within %v", slowest, failoverWithin)
	}
	// Some traffic on the new primary, then everything in flight settles.
	settled := time.Now()
	l.await(t, 30*time.Second, "more writes on the new primary", func() bool {
		return l.allSince(kinds, settled, func(r string, since time.Time) bool { return l.okSince(r, since) >= 10 })
	})
	stopLoad()

	l.mu.Lock()
	t.Logf("answers by route and status: %v; the slowest took %.2fs", l.counts, l.slowest.Seconds())
	for _, b := range l.bad {
		t.Error(b)
	}
	l.mu.Unlock()
	if t.Failed() {
		t.Logf("gateway log:\n%s", logTail(proc.logText(t), 80))
	}

	// Nothing answered 2xx is lost.
	for _, u := range l.uploaded {
		code, body := l.get("/api/v1/files/"+u.id, l.uploader)
		if code != http.StatusOK {
			t.Errorf("upload %s answered 200 before, its record now: %d %s", u.id, code, body)
			continue
		}
		code, body = l.get("/api/v1/files/"+u.id+"/content", l.uploader)
		if code != http.StatusOK || !bytes.Equal(body, u.data) {
			t.Errorf("upload %s answered 200 before, its bytes now: %d, %d bytes (want %d)", u.id, code, len(body), len(u.data))
		}
	}
	// An upload answered 503 may still have been committed (the primary
	// died after the standby had the commit, before its answer): a record
	// the database holds must have its bytes all the same.
	answered := map[string]bool{}
	for _, u := range l.uploaded {
		answered[u.id] = true
	}
	unanswered := 0
	for _, id := range l.listFiles(t) {
		if answered[id] {
			continue
		}
		unanswered++
		if code, body := l.get("/api/v1/files/"+id+"/content", l.uploader); code != http.StatusOK {
			t.Errorf("file %s, whose upload was answered 503, has a record but its content answers %d %s", id, code, body)
		}
	}
	t.Logf("%d records of uploads answered 503 (committed as the primary died)", unanswered)

	var metered struct {
		Data struct {
			Usage float64 `json:"usage"`
		} `json:"data"`
	}
	code, body := l.get("/api/v1/keys/"+l.metered, l.mgmt)
	if code != http.StatusOK || json.Unmarshal(body, &metered) != nil {
		t.Fatalf("metered key: %d %s", code, body)
	}
	if got := int64(math.Round(metered.Data.Usage * 1e6)); got != l.usageMicros {
		t.Errorf("usage total %d millionths of a dollar, want %d: the sum of the reports answered 2xx", got, l.usageMicros)
	}
	for _, hash := range l.created {
		var k struct {
			Data struct {
				Disabled bool `json:"disabled"`
			} `json:"data"`
		}
		code, body := l.get("/api/v1/keys/"+hash, l.mgmt)
		if code != http.StatusOK || json.Unmarshal(body, &k) != nil {
			t.Errorf("key %s created with 2xx, now: %d %s", hash, code, body)
			continue
		}
		if slices.Contains(l.disabled, hash) && !k.Data.Disabled {
			t.Errorf("key %s disabled with 2xx, now enabled", hash)
		}
	}
	names := map[string]int{}
	for offset := 0; ; offset += 100 {
		var page struct {
			Data []struct {
				Name string `json:"name"`
			} `json:"data"`
		}
		code, body := l.get(fmt.Sprintf("/api/v1/keys?include_disabled=true&offset=%d", offset), l.mgmt)
		if code != http.StatusOK || json.Unmarshal(body, &page) != nil {
			t.Fatalf("list keys: %d %s", code, body)
		}
		for _, k := range page.Data {
			names[k.Name]++
		}
		if len(page.Data) < 100 {
			break
		}
	}
	for name, n := range names {
		if n > 1 {
			t.Errorf("%d keys named %q: a creation sent again with its Idempotency-Key made another", n, name)
		}
	}
	t.Logf("checked %d uploads, %d reports (%d millionths of a dollar), %d keys created and %d disabled",
		len(l.uploaded), l.reports, l.usageMicros, len(l.created), len(l.disabled))
}

// failoverLoad is the traffic of TestPostgresFailover and what it was told.
type failoverLoad struct {
	c                                *http.Client
	base                             string
	mgmt, service, uploader, metered string // three secrets and the metered key's hash

	mu          sync.Mutex
	counts      map[string]map[int]int // route -> status -> answers (0: no answer)
	slowest     time.Duration          // the longest wait for an answer
	okTimes     []routeTime            // every success
	unavailable []routeTime            // every 503
	bad         []string               // answers neither 2xx nor a proper 503

	uploaded    []uploadedFile
	usageMicros int64 // the cost of every report answered 2xx
	reports     int
	created     []string // key hashes answered 2xx
	disabled    []string
}

type uploadedFile struct {
	id   string
	data []byte
}

type routeTime struct {
	route string
	at    time.Time
}

// send makes one request and records its answer: a 2xx (returned true with
// its body), a 503 that must carry Retry-After and the envelope, or anything
// else, which fails the test.
func (l *failoverLoad) send(route, method, path, key string, body []byte, header http.Header) (bool, []byte) {
	req, err := http.NewRequest(method, l.base+path, bytes.NewReader(body))
	if err != nil {
		panic(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+key)
	start := time.Now()
	resp, err := l.c.Do(req)
	var b []byte
	if err == nil {
		b, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	at := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.slowest = max(l.slowest, at.Sub(start))
	if l.counts[route] == nil {
		l.counts[route] = map[int]int{}
	}
	if err != nil {
		l.counts[route][0]++
		l.bad = append(l.bad, fmt.Sprintf("%s: no answer: %v", route, err))
		return false, nil
	}
	l.counts[route][resp.StatusCode]++
	switch {
	case resp.StatusCode/100 == 2:
		l.okTimes = append(l.okTimes, routeTime{route, at})
		return true, b
	case resp.StatusCode == http.StatusServiceUnavailable:
		l.unavailable = append(l.unavailable, routeTime{route, at})
		var env struct {
			Error struct {
				Code int `json:"code"`
			} `json:"error"`
		}
		if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || ra < 1 {
			l.bad = append(l.bad, fmt.Sprintf("%s: 503 with Retry-After %q", route, resp.Header.Get("Retry-After")))
		} else if json.Unmarshal(b, &env) != nil || env.Error.Code != http.StatusServiceUnavailable {
			l.bad = append(l.bad, fmt.Sprintf("%s: 503 without the envelope: %s", route, b))
		}
	default:
		l.bad = append(l.bad, fmt.Sprintf("%s: %d %s", route, resp.StatusCode, b))
	}
	return false, nil
}

// failoverPace spaces one worker's requests, so that a run of fast 503s does not
// take the machine's CPU from the gateway and the database.
func failoverPace(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return false
	case <-time.After(20 * time.Millisecond):
		return true
	}
}

func (l *failoverLoad) uploads(w int, stop <-chan struct{}) {
	for i := 0; failoverPace(stop); i++ {
		data := fmt.Appendf(nil, "upload %d-%d during a failover, %s\n", w, i, failoverNonce())
		body, ct := fileForm(fileSingle(fmt.Sprintf("failover/%d-%d.txt", w, i), data))
		ok, b := l.send("upload", http.MethodPost, fileUploadPath, l.uploader, body, http.Header{"Content-Type": {ct}})
		if !ok {
			continue
		}
		var f struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(b, &f); err != nil || f.ID == "" {
			l.fail("upload: 200 without an id: %s", b)
			continue
		}
		l.mu.Lock()
		l.uploaded = append(l.uploaded, uploadedFile{f.ID, data})
		l.mu.Unlock()
	}
}

// usage posts batches of reports on the metered key. A batch answered 503
// is sent again, same ids, until it is counted (after stop too, for 30
// seconds): reports are counted once by id, so the total must come out
// exact whichever attempt the database took.
func (l *failoverLoad) usage(w int, stop <-chan struct{}) {
	const perBatch = 20
	for i := 0; failoverPace(stop); i++ {
		type report struct {
			ID   string  `json:"id"`
			Key  string  `json:"key"`
			Cost float64 `json:"cost"`
		}
		batch := make([]report, perBatch)
		var micros int64
		for j := range batch {
			m := int64(1 + (w*7919+i*31+j*17)%999)
			batch[j] = report{ID: fmt.Sprintf("failover-%d-%d-%d", w, i, j), Key: l.metered, Cost: float64(m) / 1e6}
			micros += m
		}
		body, err := json.Marshal(map[string]any{"reports": batch})
		if err != nil {
			panic(err)
		}
		giveUp := time.Time{}
		for {
			ok, _ := l.send("usage", http.MethodPost, "/api/v1/usage", l.service, body, http.Header{"Content-Type": {"application/json"}})
			if ok {
				l.mu.Lock()
				l.usageMicros += micros
				l.reports += perBatch
				l.mu.Unlock()
				break
			}
			select {
			case <-stop:
				if giveUp.IsZero() {
					giveUp = time.Now().Add(30 * time.Second)
				}
			default:
			}
			if !giveUp.IsZero() && time.Now().After(giveUp) {
				l.fail("usage: batch %d-%d still not counted 30s after the load stopped", w, i)
				return
			}
			time.Sleep(20 * time.Millisecond) // pacing of the retries
		}
	}
}

// keyChanges creates a key each round and disables the oldest it has not
// disabled every other round, so that keys wait to be disabled whenever
// the database goes away: disables meet the outage as creations do. A creation
// answered 503 is sent again, with its Idempotency-Key, until answered
// 2xx: it may have been made all the same, and must then be made once.
func (l *failoverLoad) keyChanges(w int, stop <-chan struct{}) {
	jsonHeader := http.Header{"Content-Type": {"application/json"}}
	var pending []string // created, not disabled yet
	name, idem := "", ""
	for i := 0; failoverPace(stop); i++ {
		if len(pending) > 0 && i%2 == 0 {
			ok, _ := l.send("key disable", http.MethodPatch, "/api/v1/keys/"+pending[0], l.mgmt, []byte(`{"disabled":true}`), jsonHeader)
			if ok {
				l.mu.Lock()
				l.disabled = append(l.disabled, pending[0])
				l.mu.Unlock()
				pending = pending[1:]
			}
		}
		if name == "" {
			name, idem = fmt.Sprintf("failover %d-%d", w, i), failoverNonce()
		}
		h := http.Header{"Content-Type": {"application/json"}, "Idempotency-Key": {idem}}
		ok, b := l.send("key create", http.MethodPost, "/api/v1/keys", l.mgmt, fmt.Appendf(nil, `{"name":%q}`, name), h)
		if !ok {
			continue
		}
		name = ""
		var k struct {
			Data struct {
				Hash string `json:"hash"`
			} `json:"data"`
		}
		if err := json.Unmarshal(b, &k); err != nil || k.Data.Hash == "" {
			l.fail("key create: 2xx without a hash: %s", b)
			continue
		}
		l.mu.Lock()
		l.created = append(l.created, k.Data.Hash)
		l.mu.Unlock()
		pending = append(pending, k.Data.Hash)
	}
}

func (l *failoverLoad) fail(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.bad = append(l.bad, fmt.Sprintf(format, args...))
}

// get reads path with key after the load, when every answer must be final.
func (l *failoverLoad) get(path, key string) (int, []byte) {
	req, err := http.NewRequest(http.MethodGet, l.base+path, nil)
	if err != nil {
		panic(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := l.c.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// okAfter is the first success of route at or after since (zero if none).
func (l *failoverLoad) okAfter(route string, since time.Time) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, s := range l.okTimes {
		if s.route == route && !s.at.Before(since) {
			return s.at
		}
	}
	return time.Time{}
}

// readiness is the metadata check of /readyz: "ok", "unavailable", or
// what went wrong asking.
func (l *failoverLoad) readiness() string {
	code, body := l.get("/readyz", "")
	var r struct {
		Checks map[string]string `json:"checks"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return fmt.Sprintf("%d %s", code, body)
	}
	if got := r.Checks["metadata"]; (got == "ok") != (code == http.StatusOK) {
		return fmt.Sprintf("%d with metadata %q", code, got)
	}
	return r.Checks["metadata"]
}

// listFiles lists the ids of every file of the uploader's workspace.
func (l *failoverLoad) listFiles(t *testing.T) []string {
	t.Helper()
	var ids []string
	query := "limit=1000"
	for {
		code, body := l.get("/api/v1/files?"+query, l.uploader)
		var page struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
			Cursor *string `json:"cursor"`
		}
		if code != http.StatusOK || json.Unmarshal(body, &page) != nil {
			t.Fatalf("list files: %d %s", code, body)
		}
		for _, f := range page.Data {
			ids = append(ids, f.ID)
		}
		if page.Cursor == nil {
			return ids
		}
		query = "limit=1000&cursor=" + url.QueryEscape(*page.Cursor)
	}
}

// okSince counts the successes of route at or after since.
func (l *failoverLoad) okSince(route string, since time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.okTimes {
		if s.route == route && !s.at.Before(since) {
			n++
		}
	}
	return n
}

// unavailableSince counts the 503s of route at or after since.
func (l *failoverLoad) unavailableSince(route string, since time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.unavailable {
		if s.route == route && !s.at.Before(since) {
			n++
		}
	}
	return n
}

// allSince reports whether has holds of every route since then.
func (l *failoverLoad) allSince(routes []string, since time.Time, has func(string, time.Time) bool) bool {
	for _, r := range routes {
		if !has(r, since) {
			return false
		}
	}
	return true
}

// await polls cond until it holds; past the deadline it fails the test
// with what the load saw so far.
func (l *failoverLoad) await(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			l.mu.Lock()
			msg := fmt.Sprintf("timed out after %v waiting for %s; answers so far %v, first problems %q",
				within, what, l.counts, l.bad[:min(len(l.bad), 5)])
			l.mu.Unlock()
			t.Fatal(msg)
		}
		time.Sleep(10 * time.Millisecond) // poll interval, bounded by the deadline
	}
}

func failoverNonce() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// logTail is the last n lines of s.
func logTail(s string, n int) string {
	lines := strings.Split(s, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
