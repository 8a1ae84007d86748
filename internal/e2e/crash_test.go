package e2e

// Crash tests: a real gateway process SIGKILLed mid-upload, then started
// again, on SQLite and PostgreSQL. What the dead process held for its
// uploads must come back by itself within the upload lease, while a live
// upload slower than the lease keeps its reservation to the end.

import (
	"bytes"
	"context"
	"database/sql"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aigateway/gateway/configs"
	"gopkg.in/yaml.v3"
)

// crashLease is the upload lease of the crash tests: short, so a test
// waits seconds, not the default minute.
const crashLease = 3 * time.Second

// crashConfig is the embedded default on sc's database, with a lease of
// crashLease and a workspace quota of exactly one maximal file.
func crashConfig(t *testing.T, sc storeCase) configs.Config {
	t.Helper()
	cfg := fleetConfig(t)
	sc.configure(t, &cfg)
	cfg.Limits.UploadLease = crashLease
	cfg.Limits.MaxFileBytes = 1 << 20
	cfg.Limits.WorkspaceStorageBytes = 1 << 20
	cfg.Server.MinUploadRate = 0 // the slow upload trickles on purpose
	// and so the sweeper is off: no grace outlasts an upload without a
	// minimum rate (the test of the sweeper after a crash sets its own).
	cfg.Sweeper.Interval = 0
	off := false
	cfg.Limits.Rate.Enabled = &off
	return cfg
}

// writeCrashConfig writes cfg where the processes read it (the metadata
// may be a PostgreSQL URL, so not beside the database).
func writeCrashConfig(t *testing.T, cfg configs.Config) string {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("crash config: %v", err)
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(filepath.Dir(cfg.Storage.FS.Dir), "gateway.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// kill SIGKILLs the process: no shutdown, no cleanup, as a crash or an OOM
// kill leaves it.
func (p *gatewayProc) kill(t *testing.T) time.Time {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill gateway: %v", err)
	}
	<-p.exited
	p.stopped = true
	return time.Now()
}

// reservedBytes is what quota_reservations holds, expired or not: the
// rows a dead process left.
func reservedBytes(t *testing.T, db *sql.DB) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRowContext(context.Background(),
		`SELECT CAST(COALESCE(SUM(bytes), 0) AS BIGINT) FROM quota_reservations`).Scan(&n); err != nil {
		t.Fatalf("sum reservations: %v", err)
	}
	return n
}

// uploadTo posts one file through c to p and returns the status.
func uploadTo(t *testing.T, c *http.Client, p *gatewayProc, key, filename string, data []byte) (int, string) {
	t.Helper()
	body, ct := fileForm(fileSingle(filename, data))
	req, err := http.NewRequest(http.MethodPost, p.base+fileUploadPath, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", ct)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("upload: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// trickle is a body that arrives in n chunks, one every every: pacing a
// slow client, not synchronising anything.
type trickle struct {
	data  []byte
	chunk int
	every time.Duration
	sent  int
}

func (r *trickle) Read(p []byte) (int, error) {
	if r.sent >= len(r.data) {
		return 0, io.EOF
	}
	if r.sent > 0 {
		time.Sleep(r.every)
	}
	n := copy(p[:min(len(p), r.chunk)], r.data[r.sent:])
	r.sent += n
	return n, nil
}

func TestCrashReleasesQuota(t *testing.T) {
	t.Parallel()
	bin := buildGatewayBinary(t)
	for _, sc := range metadataStores() {
		t.Run(sc.name, func(t *testing.T) {
			// Each store's processes, ports and files are its own; most of
			// a case is waiting out leases, so the two wait together.
			t.Parallel()
			testCrashReleasesQuota(t, bin, sc)
		})
	}
}

// testCrashReleasesQuota: a workspace whose whole quota a SIGKILLed
// process reserved for an upload takes a full-quota upload again within
// the lease of the kill, through a restarted process; a live upload that
// lasts more than two leases succeeds.
func testCrashReleasesQuota(t *testing.T, bin string, sc storeCase) {
	cfg := crashConfig(t, sc)
	path := writeCrashConfig(t, cfg)
	crashKey := fleetKey(t, path, "crash")
	slowKey := fleetKey(t, path, "slow")
	in := openFileInspector(t, cfg)
	in.openDB(t, cfg)
	client := &http.Client{Timeout: 60 * time.Second}
	quota := int(cfg.Limits.WorkspaceStorageBytes)

	first := launchGateway(t, bin, path, "gateway-first.log")
	first.waitReady(t)

	// A live upload slower than two leases keeps its reservation: the
	// replica renews it every lease/3 while the bytes trickle in.
	slow, ct := fileForm(fileSingle("slow.txt", fileText(64<<10)))
	req, err := http.NewRequest(http.MethodPost, first.base+fileUploadPath,
		&trickle{data: slow, chunk: len(slow)/28 + 1, every: crashLease / 10})
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(len(slow))
	req.Header.Set("Authorization", "Bearer "+slowKey)
	req.Header.Set("Content-Type", ct)
	began := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("slow upload: %v", err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	slowFor := time.Since(began)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("upload lasting %v (lease %v) = %d %s", slowFor, crashLease, resp.StatusCode, answer)
	}
	if slowFor < 2*crashLease {
		t.Fatalf("the slow upload took %v, not more than two leases of %v: it proves nothing", slowFor, crashLease)
	}
	t.Logf("an upload lasting %v with a lease of %v was stored", slowFor.Round(time.Millisecond), crashLease)

	// The crash: half of a full-quota upload sent, its reservation taken,
	// then SIGKILL.
	full, fullCT := fileForm(fileSingle("full.txt", fileText(quota)))
	conn := fileWritePartial(t, strings.TrimPrefix(first.base, "http://"), crashKey, "", full, fullCT, len(full)/2)
	waitFor(t, 20*time.Second, "the upload's reservation", func() bool { return reservedBytes(t, in.db) >= int64(quota) })
	killedAt := first.kill(t)
	conn.Close()
	if held := reservedBytes(t, in.db); held < int64(quota) {
		t.Fatalf("after the kill %d bytes are reserved, want the dead upload's %d still held", held, quota)
	}

	second := launchGateway(t, bin, path, "gateway-second.log")
	second.waitReady(t)
	restartedAt := time.Now()

	// Poll with full-quota uploads until one is stored.
	deadline := killedAt.Add(crashLease + 30*time.Second)
	var refused int
	var recovered time.Duration
	for {
		attempt := time.Now()
		status, body := uploadTo(t, client, second, crashKey, "again.txt", fileText(quota))
		if status == http.StatusOK {
			recovered = time.Since(killedAt)
			break
		}
		if status != http.StatusForbidden || !strings.Contains(body, "quota") {
			t.Fatalf("full-quota upload after the crash = %d %s, want 403 (quota) or 200", status, body)
		}
		if refused == 0 && attempt.Sub(killedAt) > crashLease+time.Second {
			t.Errorf("refused %v after the kill, past the lease of %v", attempt.Sub(killedAt), crashLease)
		}
		refused++
		if time.Now().After(deadline) {
			t.Fatalf("the dead process's reservation still counted %v after the kill (lease %v)", time.Since(killedAt), crashLease)
		}
		time.Sleep(50 * time.Millisecond) // poll interval, bounded by the deadline
	}
	restart := restartedAt.Sub(killedAt)
	t.Logf("%s: full quota available again %v after SIGKILL (lease %v; restart took %v; %d uploads refused before)",
		sc.name, recovered.Round(time.Millisecond), crashLease, restart.Round(time.Millisecond), refused)
	// Recovery is the lease, or the restart when that took longer, plus
	// one poll and one upload.
	if bound := max(crashLease, restart) + 2*time.Second; recovered > bound {
		t.Errorf("quota came back %v after the kill, later than %v", recovered, bound)
	}
	if restart < crashLease-500*time.Millisecond && refused == 0 {
		t.Errorf("restarted %v after the kill, within the lease, yet the first full-quota upload passed: the dead upload held nothing", restart)
	}
}

// buildFaultBinary builds the gateway with the faultinject tag: told by
// GATEWAY_FAULT=kill-before-commit, it SIGKILLs itself after storing an
// upload's bytes and before writing its record.
func buildFaultBinary(t *testing.T) string {
	t.Helper()
	return builtBinary(t, "gateway-fault", "faultinject")
}

// consistency is storage and metadata side by side.
type consistency struct {
	objects      []string // under ws/
	records      []string // object keys of file records
	storedBytes  int64    // workspace_usage, all workspaces
	recordBytes  int64    // sum of the records' sizes
	reservations int      // rows, expired or not
}

func (in *fileInspector) consistency(t *testing.T) consistency {
	t.Helper()
	ctx := context.Background()
	var c consistency
	objs, err := in.bucket.List(ctx, "ws/")
	if err != nil {
		t.Fatalf("list bucket: %v", err)
	}
	c.objects = objs
	rows, err := in.db.QueryContext(ctx, `SELECT object_key FROM files ORDER BY object_key`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		c.records = append(c.records, k)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for q, into := range map[string]*int64{
		`SELECT CAST(COALESCE(SUM(stored_bytes), 0) AS BIGINT) FROM workspace_usage`: &c.storedBytes,
		`SELECT CAST(COALESCE(SUM(size), 0) AS BIGINT) FROM files`:                   &c.recordBytes,
	} {
		if err := in.db.QueryRowContext(ctx, q).Scan(into); err != nil {
			t.Fatal(err)
		}
	}
	if err := in.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM quota_reservations`).Scan(&c.reservations); err != nil {
		t.Fatal(err)
	}
	return c
}

// exact reports whether every object has its record and the reverse, the
// usage counters match the records, and no reservation is left.
func (c consistency) exact() bool {
	return slices.Equal(c.objects, c.records) && c.storedBytes == c.recordBytes && c.reservations == 0
}

func TestCrashBetweenStoreAndCommit(t *testing.T) {
	t.Parallel()
	bin := buildGatewayBinary(t)
	faulty := buildFaultBinary(t)
	for _, sc := range metadataStores() {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel() // each store's processes and files are its own
			testCrashBetweenStoreAndCommit(t, bin, faulty, sc)
		})
	}
}

// testCrashBetweenStoreAndCommit: a process killed after storing an
// upload's object and before writing its record leaves an object without
// a record and a reservation; the sweeper of the restarted process removes
// both, leaving storage and quota exactly consistent, and the workspace's
// whole quota usable.
func testCrashBetweenStoreAndCommit(t *testing.T, bin, faulty string, sc storeCase) {
	cfg := crashConfig(t, sc)
	cfg.Sweeper = configs.Sweeper{Interval: 200 * time.Millisecond, Grace: 2 * time.Second, Batch: 100}
	// The grace must outlast the longest upload the limits allow: 0.5 s of
	// idling plus 1 MiB at 1 MiB/s.
	cfg.Server.BodyReadTimeout = 500 * time.Millisecond
	cfg.Server.MinUploadRate = 1 << 20
	path := writeCrashConfig(t, cfg)
	key := fleetKey(t, path, "crash")
	in := openFileInspector(t, cfg)
	in.openDB(t, cfg)
	client := &http.Client{Timeout: 60 * time.Second}
	quota := int(cfg.Limits.WorkspaceStorageBytes)

	// A file stored before the crash must survive the sweeps.
	first := launchGateway(t, bin, path, "gateway-first.log")
	first.waitReady(t)
	if status, body := uploadTo(t, client, first, key, "kept.txt", fileText(quota/4)); status != http.StatusOK {
		t.Fatalf("upload before the crash = %d %s", status, body)
	}
	first.stop(t)

	dying := launchGateway(t, faulty, path, "gateway-dying.log", "GATEWAY_FAULT=kill-before-commit")
	dying.waitReady(t)
	body, ct := fileForm(fileSingle("lost.txt", fileText(quota/2)))
	req, err := http.NewRequest(http.MethodPost, dying.base+fileUploadPath, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", ct)
	if resp, err := client.Do(req); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("the faulty process answered %d %s; want it dead before its commit", resp.StatusCode, b)
	}
	<-dying.exited
	killedAt := time.Now()
	dying.stopped = true
	left := in.consistency(t)
	if len(left.objects) != 2 || len(left.records) != 1 || left.reservations != 1 {
		t.Fatalf("the crash left objects %v, records %v, %d reservations; want an object without a record and its reservation",
			left.objects, left.records, left.reservations)
	}

	second := launchGateway(t, bin, path, "gateway-second.log")
	second.waitReady(t)
	var now consistency
	waitFor(t, cfg.Sweeper.Grace+crashLease+30*time.Second, "the sweeper to make storage and quota consistent", func() bool {
		now = in.consistency(t)
		return now.exact()
	})
	t.Logf("%s: consistent %v after the kill (grace %v, lease %v, sweeps every %v): objects %v, records %v, stored %d bytes",
		sc.name, time.Since(killedAt).Round(time.Millisecond), cfg.Sweeper.Grace, crashLease, cfg.Sweeper.Interval,
		now.objects, now.records, now.storedBytes)
	if len(now.records) != 1 || now.recordBytes != int64(quota/4) {
		t.Errorf("records %v (%d bytes) after the sweep, want the one stored before the crash", now.records, now.recordBytes)
	}
	if n := second.metric(t, client, `gateway_sweeper_removed_total{kind="object_without_record"}`); n != 1 {
		t.Errorf("sweeper metric: %v objects without record removed, want 1", n)
	}
	// The rest of the quota is usable (less the form's framing, which a
	// declared Content-Length counts), and no more.
	rest := quota - quota/4 - 4<<10
	if status, body := uploadTo(t, client, second, key, "rest.txt", fileText(rest)); status != http.StatusOK {
		t.Fatalf("upload of the rest of the quota = %d %s", status, body)
	}
	if status, body := uploadTo(t, client, second, key, "one-more.txt", fileText(8<<10)); status != http.StatusForbidden {
		t.Errorf("upload past the quota = %d %s, want 403", status, body)
	}
	if c := in.consistency(t); !c.exact() || c.recordBytes != int64(quota/4+rest) {
		t.Errorf("after filling the quota: %+v", c)
	}
}
