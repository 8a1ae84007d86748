package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aigateway/gateway/configs"
	"github.com/aigateway/gateway/internal/testenv"
	"github.com/aigateway/gateway/policy/keys"
)

// TestFleetSpend: three gateway processes on PostgreSQL and Redis. Usage
// reports spread over all three push a key past its limit: all three answer
// 402 within 5 s; the same reports sent again change nothing; a raised limit
// serves again within 5 s; a workspace budget reached refuses the workspace's
// keys, and raising it or deleting it serves them again; Redis killed in the
// middle loses no report.
func TestFleetSpend(t *testing.T) {
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
	cfg.Limits.Rate.Usage = cfg.Limits.Rate.Default
	path := writeConfigIn(t, dir, cfg)
	admin := fleetManagementKey(t, path, "alice")
	service := fleetRoleKey(t, path, "alice", keys.RoleService)
	procs := startFleet(t, bin, path, 3)
	client := fleetClient(t)

	spender := createKeyOver(t, client, procs[0], admin, `{"name":"spender","limit":1}`)
	sibling := createKeyOver(t, client, procs[1], admin, `{"name":"sibling"}`)

	// Ten reports of 0.1 through the three replicas: exactly 1, the limit.
	batches := make([]string, 10)
	for i := range batches {
		batches[i] = fmt.Sprintf(`{"reports":[{"id":"r-%d","key":%q,"cost":0.1}]}`, i, spender.hash)
	}
	send := func(round int) (accepted, duplicates int) {
		t.Helper()
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i, b := range batches {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, body := sendJSON(t, client, "POST", procs[(i+round)%3].base+"/api/v1/usage", service, b)
				if res.StatusCode != http.StatusOK {
					t.Errorf("report %d: %d %s", i, res.StatusCode, body)
					return
				}
				var out struct {
					Data struct{ Accepted, Duplicates int } `json:"data"`
				}
				if err := json.Unmarshal(body, &out); err != nil {
					t.Error(err)
				}
				mu.Lock()
				accepted, duplicates = accepted+out.Data.Accepted, duplicates+out.Data.Duplicates
				mu.Unlock()
			}()
		}
		wg.Wait()
		return accepted, duplicates
	}
	if a, d := send(0); a != 10 || d != 0 {
		t.Fatalf("first round: %d accepted, %d duplicates; want 10, 0", a, d)
	}
	crossed := time.Now()
	waitStatusEverywhere(t, client, procs, spender.token, http.StatusPaymentRequired, crossed, 5*time.Second)
	// The answer names the limit; GET /key still serves the key its standing.
	res, body := sendJSON(t, client, "GET", procs[2].base+fleetModelPath, spender.token, "")
	if res.StatusCode != http.StatusPaymentRequired || !strings.Contains(string(body), `"Key limit exceeded"`) || !strings.Contains(string(body), `"limit":1`) {
		t.Errorf("402: %s", body)
	}
	if res, body := sendJSON(t, client, "GET", procs[2].base+"/api/v1/key", spender.token, ""); res.StatusCode != http.StatusOK ||
		!strings.Contains(string(body), `"limit_remaining":0`) || !strings.Contains(string(body), `"usage":1,`) {
		t.Errorf("GET /key of a spent key: %d %s", res.StatusCode, body)
	}
	if res, _ := sendJSON(t, client, "GET", procs[1].base+fleetModelPath, sibling.token, ""); res.StatusCode != http.StatusOK {
		t.Errorf("the sibling key without a limit: %d", res.StatusCode)
	}

	// Redis dies: the same reports, replayed through other replicas, are
	// all duplicates and nothing is lost or counted twice.
	rd.kill(t)
	if a, d := send(1); a != 0 || d != 10 {
		t.Fatalf("replay: %d accepted, %d duplicates; want 0, 10", a, d)
	}
	rd.restart(t)
	if a, d := send(2); a != 0 || d != 10 {
		t.Fatalf("second replay: %d accepted, %d duplicates; want 0, 10", a, d)
	}
	if res, body := sendJSON(t, client, "GET", procs[0].base+"/api/v1/keys/"+spender.hash, admin, ""); !strings.Contains(string(body), `"usage":1,`) {
		t.Fatalf("usage after the replays: %d %s", res.StatusCode, body)
	}

	// A raised limit serves again.
	raised := time.Now()
	if res, body := sendJSON(t, client, "PATCH", procs[1].base+"/api/v1/keys/"+spender.hash, admin, `{"limit":5}`); res.StatusCode != http.StatusOK {
		t.Fatalf("raise: %d %s", res.StatusCode, body)
	}
	waitStatusEverywhere(t, client, procs, spender.token, http.StatusOK, raised, 5*time.Second)

	// A limit lowered below what the key has spent refuses it at once on
	// the replica that lowered it (the others follow within a refresh);
	// a budget set under what the workspace spent likewise.
	if res, body := sendJSON(t, client, "PATCH", procs[1].base+"/api/v1/keys/"+spender.hash, admin, `{"limit":0.5}`); res.StatusCode != http.StatusOK {
		t.Fatalf("lower: %d %s", res.StatusCode, body)
	}
	if res, body := sendJSON(t, client, "GET", procs[1].base+fleetModelPath, spender.token, ""); res.StatusCode != http.StatusPaymentRequired {
		t.Errorf("right after the limit was lowered, on its replica: %d %s, want 402", res.StatusCode, body)
	}
	raised = time.Now()
	if res, body := sendJSON(t, client, "PATCH", procs[1].base+"/api/v1/keys/"+spender.hash, admin, `{"limit":5}`); res.StatusCode != http.StatusOK {
		t.Fatalf("raise: %d %s", res.StatusCode, body)
	}
	if res, body := sendJSON(t, client, "GET", procs[1].base+fleetModelPath, spender.token, ""); res.StatusCode != http.StatusOK {
		t.Errorf("right after the limit was raised, on its replica: %d %s, want 200", res.StatusCode, body)
	}
	waitStatusEverywhere(t, client, procs, spender.token, http.StatusOK, raised, 5*time.Second)

	// A daily budget of 1.5 for the workspace, reached by the sibling.
	if res, body := sendJSON(t, client, "PUT", procs[2].base+"/api/v1/workspaces/default/budgets/daily", admin, `{"limit_usd":0.5}`); res.StatusCode != http.StatusCreated {
		t.Fatalf("budget: %d %s", res.StatusCode, body)
	}
	if res, body := sendJSON(t, client, "GET", procs[2].base+fleetModelPath, sibling.token, ""); res.StatusCode != http.StatusPaymentRequired {
		t.Errorf("right after a budget under the workspace's spend was set, on its replica: %d %s, want 402", res.StatusCode, body)
	}
	if res, body := sendJSON(t, client, "PUT", procs[2].base+"/api/v1/workspaces/default/budgets/daily", admin, `{"limit_usd":1.5}`); res.StatusCode != http.StatusOK {
		t.Fatalf("budget: %d %s", res.StatusCode, body)
	}
	if res, body := sendJSON(t, client, "GET", procs[2].base+fleetModelPath, sibling.token, ""); res.StatusCode != http.StatusOK {
		t.Errorf("right after the budget was raised, on its replica: %d %s, want 200", res.StatusCode, body)
	}
	res, body = sendJSON(t, client, "POST", procs[0].base+"/api/v1/usage", service,
		fmt.Sprintf(`{"reports":[{"id":"s-1","key":%q,"cost":0.5}]}`, sibling.hash))
	if res.StatusCode != http.StatusOK {
		t.Fatalf("report: %d %s", res.StatusCode, body)
	}
	reached := time.Now()
	waitStatusEverywhere(t, client, procs, sibling.token, http.StatusPaymentRequired, reached, 5*time.Second)
	res, body = sendJSON(t, client, "GET", procs[1].base+fleetModelPath, spender.token, "")
	if res.StatusCode != http.StatusPaymentRequired || !strings.Contains(string(body), `"Workspace budget exceeded"`) ||
		!strings.Contains(string(body), `"interval":"daily"`) || !strings.Contains(string(body), `"resets_at":"`) {
		t.Errorf("budget 402: %d %s", res.StatusCode, body)
	}
	// Service keys are never refused for spend.
	if res, _ := sendJSON(t, client, "GET", procs[0].base+fleetModelPath, service, ""); res.StatusCode != http.StatusOK {
		t.Errorf("service key during a budget refusal: %d", res.StatusCode)
	}
	// A raised budget serves again.
	raisedBudget := time.Now()
	if res, body := sendJSON(t, client, "PUT", procs[1].base+"/api/v1/workspaces/default/budgets/daily", admin, `{"limit_usd":3}`); res.StatusCode != http.StatusOK {
		t.Fatalf("raise the budget: %d %s", res.StatusCode, body)
	}
	waitStatusEverywhere(t, client, procs, sibling.token, http.StatusOK, raisedBudget, 5*time.Second)
	// Pushed over it again, then the budget is deleted: served again.
	if res, body := sendJSON(t, client, "POST", procs[2].base+"/api/v1/usage", service,
		fmt.Sprintf(`{"reports":[{"id":"s-2","key":%q,"cost":2}]}`, sibling.hash)); res.StatusCode != http.StatusOK {
		t.Fatalf("report: %d %s", res.StatusCode, body)
	}
	waitStatusEverywhere(t, client, procs, sibling.token, http.StatusPaymentRequired, time.Now(), 5*time.Second)
	deleted := time.Now()
	if res, body := sendJSON(t, client, "DELETE", procs[0].base+"/api/v1/workspaces/default/budgets/daily", admin, ""); res.StatusCode != http.StatusOK {
		t.Fatalf("delete budget: %d %s", res.StatusCode, body)
	}
	waitStatusEverywhere(t, client, procs, sibling.token, http.StatusOK, deleted, 5*time.Second)
}

// waitStatusEverywhere waits until every replica answers key's lookup with
// status, and fails if that takes longer than within after since.
func waitStatusEverywhere(t *testing.T, c *http.Client, procs []*gatewayProc, key string, status int, since time.Time, within time.Duration) {
	t.Helper()
	for p, proc := range procs {
		for {
			r := fetch(c, proc.base+fleetModelPath, key)
			if r.status == status {
				break
			}
			if time.Now().After(since.Add(within)) {
				t.Fatalf("replica %d still answers %d (want %d) %v after the change: %s", p, r.status, status, time.Since(since).Round(time.Millisecond), r.body)
			}
			time.Sleep(20 * time.Millisecond) // poll interval, bounded by the deadline
		}
		t.Logf("replica %d answers %d %v after the change", p, status, time.Since(since).Round(time.Millisecond))
	}
}
