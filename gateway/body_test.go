package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aigateway/gateway/internal/invalid"
	"github.com/aigateway/gateway/internal/money"
	"github.com/aigateway/gateway/policy/keys"
	"github.com/aigateway/gateway/policy/spend"
	"github.com/aigateway/gateway/workspace"
)

// problemsOf returns the problems err names, by field; it fails the test
// when err is not a refusal naming fields.
func problemsOf(t *testing.T, err error) map[string]string {
	t.Helper()
	var p *invalid.Problems
	if !errors.As(err, &p) {
		t.Fatalf("err = %v, want *invalid.Problems", err)
	}
	out := map[string]string{}
	for _, f := range p.FieldProblems() {
		out[f.Name] = f.Problem
	}
	return out
}

func names(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// wsChecks is the workspace service's judgement, with one model known.
var wsChecks = workspace.NewService(nil, knownModel("x/y"))

type knownModel string

func (k knownModel) ModelExists(id string) bool { return id == string(k) }

// createWorkspace answers a creation as the route and the service do
// together: the reader's refusal, else the service's checks.
func createWorkspace(body []byte, checks *workspace.Service) (workspace.CreateRequest, error) {
	req, err := readWorkspaceCreation(body, checks)
	if err != nil {
		return req, err
	}
	var p invalid.Problems
	checks.CheckCreate(req, &p)
	return req, p.Err()
}

// A refused body is answered with the problems of its form and the
// domain's of its values at once; an accepted one is one the service's own
// checks pass.
func TestReadWorkspaceCreation(t *testing.T) {
	tests := []struct {
		name   string
		body   string
		fields map[string]string // offending fields ("" any problem); none means valid
	}{
		{"minimal", `{"name":"A","slug":"a"}`, nil},
		{"all fields", `{"name":"A","slug":"a-1","description":"d","default_text_model":"x/y","default_image_model":null,
			"default_provider_sort":"price","io_logging_api_key_ids":["k1"],"io_logging_sampling_rate":0.5,
			"is_data_discount_logging_enabled":false,"is_observability_broadcast_enabled":true,"is_observability_io_logging_enabled":true}`, nil},
		{"missing both", `{}`, map[string]string{"name": "required", "slug": "required"}},
		{"unknown and case-folded", `{"name":"A","slug":"a","Name":"B","extra":1}`, map[string]string{"Name": "unknown field", "extra": "unknown field"}},
		{"case-folded alone", `{"Name":"A","slug":"a"}`, map[string]string{"Name": "unknown field", "name": "required"}},
		{"duplicate key", `{"name":"A","slug":"a","slug":"b"}`, map[string]string{"slug": "duplicate key"}},
		{"duplicate beats the first value's problem", `{"name":"A","slug":"B","slug":"b"}`, map[string]string{"slug": "duplicate key"}},
		{"cut short: nothing required", `{"slug":"a","slug":"b"}`, map[string]string{"slug": "duplicate key"}},
		{"cut short: what was read is judged", `{"name":"","default_text_model":"no/such","name":"b"}`,
			map[string]string{"name": "duplicate key", "default_text_model": "is not a model the catalog serves"}},
		{"null name", `{"name":null,"slug":"a"}`, map[string]string{"name": "must be a string"}},
		{"number slug", `{"name":"A","slug":5}`, map[string]string{"slug": "must be a string"}},
		{"quoted number", `{"name":"A","slug":"a","io_logging_sampling_rate":"0.5"}`, map[string]string{"io_logging_sampling_rate": "must be a number"}},
		{"null rate", `{"name":"A","slug":"a","io_logging_sampling_rate":null}`, map[string]string{"io_logging_sampling_rate": "must be a number"}},
		{"rate past float64", `{"name":"A","slug":"a","io_logging_sampling_rate":1e400}`, map[string]string{"io_logging_sampling_rate": "must be a number"}},
		{"rate out of range", `{"name":"A","slug":"a","io_logging_sampling_rate":0}`, map[string]string{"io_logging_sampling_rate": "must be between 0.0001 and 1"}},
		{"bool as string", `{"name":"A","slug":"a","is_data_discount_logging_enabled":"true"}`, map[string]string{"is_data_discount_logging_enabled": "must be a boolean"}},
		{"null bool", `{"name":"A","slug":"a","is_data_discount_logging_enabled":null}`, map[string]string{"is_data_discount_logging_enabled": "must be a boolean"}},
		{"key ids", `{"name":"A","slug":"a","io_logging_api_key_ids":"k"}`, map[string]string{"io_logging_api_key_ids": "must be an array of strings or null"}},
		{"null key id is empty", `{"name":"A","slug":"a","io_logging_api_key_ids":[null]}`, map[string]string{"io_logging_api_key_ids": "entries must be 1 to 128 bytes"}},
		{"lone surrogate", `{"name":"\ud800","slug":"a"}`, map[string]string{"name": "must be valid UTF-8"}},
		{"lone surrogate in a nullable", `{"name":"A","slug":"a","description":"\udfff"}`, map[string]string{"description": "must be valid UTF-8"}},
		{"literal replacement char is fine", `{"name":"\ufffd","slug":"a"}`, nil},
		{"the body's and the domain's at once", `{"name":7,"slug":"Bad Slug","default_text_model":"no/such"}`,
			map[string]string{"name": "must be a string", "slug": "", "default_text_model": ""}},
		{"trailing data", `{"name":"A","slug":"a"} {}`, map[string]string{"body": "unexpected data after the JSON object"}},
		{"array body", `[]`, map[string]string{"body": "must be a JSON object"}},
		{"not JSON", `name=A`, map[string]string{"body": "must be a JSON object"}},
		{"trailing comma", `{"name":"A",}`, map[string]string{"body": "malformed JSON"}},
		{"invalid UTF-8", "{\"name\":\"\xff\",\"slug\":\"a\"}", map[string]string{"body": "must be UTF-8 encoded JSON"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := createWorkspace([]byte(tt.body), wsChecks)
			if tt.fields == nil {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			got := problemsOf(t, err)
			if !reflect.DeepEqual(names(got), names(tt.fields)) {
				t.Fatalf("named %v, want %v", got, names(tt.fields))
			}
			for f, want := range tt.fields {
				if want != "" && got[f] != want {
					t.Errorf("%s: %q, want %q", f, got[f], want)
				}
			}
		})
	}
}

func TestReadWorkspaceUpdate(t *testing.T) {
	str := func(s string) *string { return &s }
	set := func(s string) workspace.Optional[string] { return workspace.Optional[string]{Set: true, Value: s} }
	tests := []struct {
		name   string
		body   string
		want   workspace.UpdateRequest
		fields []string // offending fields; none means valid
	}{
		{name: "empty object", body: `{}`, want: workspace.UpdateRequest{}},
		{name: "name only", body: `{"name":"N"}`, want: workspace.UpdateRequest{Name: set("N")}},
		{name: "nulls are set and nil", body: `{"description":null,"default_image_model":null,"io_logging_api_key_ids":null}`,
			want: workspace.UpdateRequest{Description: workspace.Optional[*string]{Set: true}, DefaultImageModel: workspace.Optional[*string]{Set: true},
				IOLoggingAPIKeyIDs: workspace.Optional[[]string]{Set: true}}},
		{name: "empty list is not null", body: `{"io_logging_api_key_ids":[]}`,
			want: workspace.UpdateRequest{IOLoggingAPIKeyIDs: workspace.Optional[[]string]{Set: true, Value: []string{}}}},
		{name: "values", body: `{"default_provider_sort":"price","io_logging_sampling_rate":1e-4,"is_observability_broadcast_enabled":false}`,
			want: workspace.UpdateRequest{DefaultProviderSort: workspace.Optional[*string]{Set: true, Value: str("price")},
				IOLoggingSamplingRate:           workspace.Optional[float64]{Set: true, Value: 0.0001},
				IsObservabilityBroadcastEnabled: workspace.Optional[bool]{Set: true}}},
		{name: "null name", body: `{"name":null}`, fields: []string{"name"}},
		{name: "null slug", body: `{"slug":null}`, fields: []string{"slug"}},
		{name: "null rate and boolean", body: `{"io_logging_sampling_rate":null,"is_data_discount_logging_enabled":null}`,
			fields: []string{"io_logging_sampling_rate", "is_data_discount_logging_enabled"}},
		{name: "the domain's too", body: `{"slug":5,"description":"` + strings.Repeat("d", 501) + `"}`, fields: []string{"description", "slug"}},
		{name: "case-folded key", body: `{"Slug":"a"}`, fields: []string{"Slug"}},
		{name: "trailing data", body: `{} {}`, fields: []string{"body"}},
		{name: "null body", body: `null`, fields: []string{"body"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readWorkspaceUpdate([]byte(tt.body), wsChecks)
			if err == nil {
				var p invalid.Problems
				wsChecks.CheckUpdate(got, &p)
				err = p.Err()
			}
			if len(tt.fields) == 0 {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("got %+v\nwant %+v", got, tt.want)
				}
				if got.Empty() != (tt.body == `{}`) {
					t.Errorf("Empty() = %v", got.Empty())
				}
				return
			}
			if named := names(problemsOf(t, err)); !reflect.DeepEqual(named, tt.fields) {
				t.Errorf("named %v, want %v", named, tt.fields)
			}
		})
	}
}

// FuzzWorkspaceBody: no body panics the workspace routes' reader (or the
// service's checks after it); a refusal always names fields (a 400, never a
// 500); an accepted creation encodes to JSON that is accepted again as the
// same request.
func FuzzWorkspaceBody(f *testing.F) {
	for _, seed := range []string{
		`{"name":"A","slug":"a"}`,
		`{"name":"A","slug":"a","description":null,"default_text_model":"openai/gpt-4o","io_logging_sampling_rate":0.5}`,
		`{"name":"A","name":"B","slug":"a"}`, `{"Name":"A","slug":"a"}`, `{"name":"A","slug":"a"} {}`,
		`{"name":"\ud800","slug":"a"}`, `{"io_logging_sampling_rate":"1"}`, `[]`, `null`, ``, `{`,
		`{"io_logging_api_key_ids":["a","a"]}`, `{"slug":"а"}`, `{"name":"` + string(make([]byte, 200)) + `"}`,
	} {
		f.Add([]byte(seed))
	}
	checks := workspace.NewService(nil, nil)
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := createWorkspace(body, checks)
		if err != nil {
			if len(invalid.Fields(err)) == 0 {
				t.Fatalf("create refused with %T %v, want problems naming fields", err, err)
			}
		} else {
			again, err := json.Marshal(req)
			if err != nil {
				t.Fatalf("an accepted request does not encode: %v", err)
			}
			back, err := createWorkspace(again, checks)
			if err != nil {
				t.Fatalf("accepted %q, then refused its own encoding %s: %v", body, again, err)
			}
			if !reflect.DeepEqual(back, req) {
				t.Fatalf("accepted %q as %+v, its encoding %s as %+v", body, req, again, back)
			}
		}
		u, err := readWorkspaceUpdate(body, checks)
		if err == nil {
			var p invalid.Problems
			checks.CheckUpdate(u, &p)
			err = p.Err()
		}
		if err != nil && len(invalid.Fields(err)) == 0 {
			t.Fatalf("update refused with %T %v, want problems naming fields", err, err)
		}
	})
}

var keyNow = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func TestReadKeyCreation(t *testing.T) {
	req, err := readKeyCreation([]byte(`{"name":"ci","workspace_id":"prod","limit":12.5,
		"limit_reset":"weekly","include_byok_in_limit":true,"expires_at":"2027-01-01T00:00:00Z"}`), keyNow)
	if err != nil {
		t.Fatal(err)
	}
	if *req.Name != "ci" || req.Workspace != "prod" || req.Limit == nil || *req.Limit != 12_500_000 ||
		req.LimitReset != keys.ResetWeekly || !req.IncludeBYOKInLimit || req.ExpiresAt == nil ||
		!req.ExpiresAt.Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("decoded %+v", req)
	}
	req, err = readKeyCreation([]byte(`{"name":"x","limit":null,"limit_reset":null,"expires_at":null,"workspace_id":null}`), keyNow)
	if err != nil || req.Limit != nil || req.LimitReset != keys.ResetNever || req.ExpiresAt != nil || req.Workspace != "" {
		t.Fatalf("nulls: %+v, %v", req, err)
	}
	cases := map[string]map[string]string{
		`{}`:                      {"name": "required"},
		`{"name":""}`:             {"name": "must not be empty"},
		`{"name":null}`:           {"name": "must be a string"},
		`{"name":7}`:              {"name": "must be a string"},
		`{"name":"a\u0007b"}`:     {"name": "must not contain control characters"},
		`{"name":"a\u202eb"}`:     {"name": "must not contain bidirectional control characters"},
		`{"name":"a\u200bb"}`:     {"name": "must not contain invisible formatting characters"},
		`{"name":"a","nme":"b"}`:  {"nme": "unknown field"},
		`{"name":"a","name":"b"}`: {"name": "duplicate key"},
		// A value read before its key comes again keeps its problem.
		`{"name":"","name":"b"}`:                                {"name": "must not be empty"},
		`{"limit":-1,"name":"a","limit":2}`:                     {"limit": "must be 0 or more"},
		`{"name":"a","limit":-1}`:                               {"limit": "must be 0 or more"},
		`{"name":"a","limit":"5"}`:                              {"limit": "must be a number or null"},
		`{"name":"a","limit":0.0000001}`:                        {"limit": "must have at most 6 decimals"},
		`{"name":"a","limit":1e300}`:                            {"limit": "must be a number in range"},
		`{"name":"a","limit_reset":"yearly"}`:                   {"limit_reset": keys.ResetRule},
		`{"name":"a","limit_reset":""}`:                         {"limit_reset": keys.ResetRule},
		`{"name":"a","limit_reset":1}`:                          {"limit_reset": "must be a string"},
		`{"name":"a","include_byok_in_limit":1}`:                {"include_byok_in_limit": "must be true or false"},
		`{"name":"a","expires_at":"2020-01-01T00:00:00Z"}`:      {"expires_at": "must be in the future"},
		`{"name":"a","expires_at":"2027-01-01"}`:                {"expires_at": "must be an ISO 8601 UTC time with seconds, e.g. 2030-01-31T00:00:00Z"},
		`{"name":"a","expires_at":5}`:                           {"expires_at": "must be a string"},
		`{"name":"a","expires_at":"2027-01-01T05:00:00+05:00"}`: {"expires_at": "must be in UTC (end with Z), e.g. 2030-01-31T00:00:00Z"},
		`{"name":"a","workspace_id":5}`:                         {"workspace_id": "must be a string"},
		`{"limit":"x","expires_at":"2020-01-01T00:00:00Z"}`:     {"name": "required", "limit": "", "expires_at": "must be in the future"},
		`[]`:              {"body": "must be a JSON object"},
		`{"name":"a"} {}`: {"body": "unexpected data after the JSON object"},
		`{"name":"a"`:     {"body": "malformed JSON"},
	}
	for body, want := range cases {
		req, err := readKeyCreation([]byte(body), keyNow)
		if err == nil { // the manager's checks
			var p invalid.Problems
			req.Check(keyNow, &p)
			err = p.Err()
		}
		checkProblems(t, body, err, want)
	}
}

func checkProblems(t *testing.T, body string, err error, want map[string]string) {
	t.Helper()
	if len(invalid.Fields(err)) == 0 {
		t.Errorf("%s: %v, want problems %v", body, err, want)
		return
	}
	got := problemsOf(t, err)
	if !reflect.DeepEqual(names(got), names(want)) {
		t.Errorf("%s: named %v, want %v", body, got, want)
		return
	}
	for f, w := range want {
		if w != "" && got[f] != w {
			t.Errorf("%s: %s: %q, want %q", body, f, got[f], w)
		}
	}
}

func TestReadKeyUpdate(t *testing.T) {
	u, err := readKeyUpdate([]byte(`{"disabled":true,"limit":null,"limit_reset":null}`))
	if err != nil {
		t.Fatal(err)
	}
	if !u.Disabled.Set || !u.Disabled.Value || !u.Limit.Set || u.Limit.Value != nil ||
		!u.LimitReset.Set || u.LimitReset.Value != keys.ResetNever || u.Name.Set || u.IncludeBYOKInLimit.Set {
		t.Fatalf("decoded %+v", u)
	}
	if u, err := readKeyUpdate([]byte(`{}`)); err != nil || !u.Empty() {
		t.Fatalf("{}: %+v, %v", u, err)
	}
	if u, err := readKeyUpdate([]byte(`{"limit":3}`)); err != nil || *u.Limit.Value != money.Micros(3_000_000) {
		t.Fatalf("limit: %+v, %v", u, err)
	}
	for body, want := range map[string]map[string]string{
		`{"disabled":null}`:              {"disabled": "must be true or false"},
		`{"expires_at":null}`:            {"expires_at": "unknown field"},
		`{"role":"management"}`:          {"role": "unknown field"},
		`{"name":null}`:                  {"name": "must be a string"},
		`{"name":" ","role":1}`:          {"name": "must not be empty", "role": "unknown field"},
		`{"limit":-2,"limit":1}`:         {"limit": "must be 0 or more"},
		`{"disabled":true,"disabled":1}`: {"disabled": "duplicate key"},
	} {
		u, err := readKeyUpdate([]byte(body))
		if err == nil {
			var p invalid.Problems
			u.Check(&p)
			err = p.Err()
		}
		checkProblems(t, body, err, want)
	}
}

func TestReadProviderKeyBody(t *testing.T) {
	f, err := readProviderKeyBody([]byte(`{"provider":"openai","key":"sk-proj-abcdefghijkl","name":"prod",
		"allowed_api_key_hashes":["00000000000000aa"],"declared_zdr":null,"sort_order":"3","allowed_user_ids":null}`), true)
	if err != nil {
		t.Fatal(err)
	}
	if f.Provider.Value != "openai" || f.Secret.Value.Reveal() != "sk-proj-abcdefghijkl" || *f.Name.Value != "prod" ||
		len(f.AllowedAPIKeys.Value) != 1 || !f.DeclaredZDR.Set || f.DeclaredZDR.Value != nil || f.SortOrder.Value != 3 {
		t.Fatalf("decoded %+v", f)
	}
	cases := []struct {
		body   string
		create bool
		want   map[string]string
	}{
		{`{"key":"sk-x"}`, true, map[string]string{"provider": "required"}},
		{`{"provider":"openai"}`, true, map[string]string{"key": "required"}},
		{`{"provider":null,"key":null}`, true, map[string]string{"provider": "must be openai or anthropic", "key": "must not be empty"}},
		{`{"provider":5,"key":"k"}`, true, map[string]string{"provider": "must be a string"}},
		{`{"provider":"openai","key":"k","allowed_api_key_hashes":["nothex"]}`, true,
			map[string]string{"allowed_api_key_hashes": "must list key hashes (16 hexadecimal characters each)"}},
		{`{"provider":"openai","key":"k","allowed_models":"m"}`, true, map[string]string{"allowed_models": "must be an array of strings or null"}},
		{`{"provider":"openai","key":"k","allowed_user_ids":["u"]}`, true,
			map[string]string{"allowed_user_ids": "must be null: keys are not shared between users here"}},
		{`{"provider":"openai","key":"k","sort_order":1.5}`, true, map[string]string{"sort_order": keys.SortOrderRule}},
		{`{"provider":"openai","key":"k","sort_order":1000001}`, true, map[string]string{"sort_order": keys.SortOrderRule}},
		{`{"provider":"openai","key":"k","declared_zdr":"no"}`, true, map[string]string{"declared_zdr": "must be true or false"}},
		{`{"provider":"openai","key":"k","secret":"x"}`, true, map[string]string{"secret": "unknown field"}},
		{`{"provider":"gemini","provider":"openai"}`, true, map[string]string{"provider": "must be openai or anthropic"}},
		{`{"key":"k","key":"l"}`, true, map[string]string{"key": "duplicate key"}},
		{`{"provider":"anthropic"}`, false, map[string]string{"provider": "cannot change: create a new provider key"}},
		{`{"workspace_id":"other","name":7}`, false, map[string]string{"workspace_id": "cannot change: create a new provider key", "name": "must be a string"}},
		{`{"disabled":"yes"}`, false, map[string]string{"disabled": "must be true or false"}},
	}
	for _, c := range cases {
		f, err := readProviderKeyBody([]byte(c.body), c.create)
		if err == nil { // the manager's checks
			var p invalid.Problems
			if c.create {
				f.CheckCreate(&p)
			} else {
				f.CheckUpdate(&p)
			}
			err = p.Err()
		}
		checkProblems(t, fmt.Sprintf("%s (create %v)", c.body, c.create), err, c.want)
	}
	if f, err := readProviderKeyBody([]byte(`{"workspace_id":null,"name":null}`), false); err != nil || f.Workspace.Set || !f.Name.Set || f.Name.Value != nil {
		t.Errorf("nulls of an update: %+v, %v", f, err)
	}
}

func TestReadBudget(t *testing.T) {
	req, err := readBudget([]byte(`{"limit_usd":12.5,"include_byok_in_budgets":true}`))
	if err != nil || req.Limit == nil || *req.Limit != 12_500_000 || req.IncludeBYOK == nil || !*req.IncludeBYOK {
		t.Fatalf("decoded %+v, %v", req, err)
	}
	if req, err := readBudget([]byte(`{}`)); err != nil || req.Limit != nil {
		t.Fatalf("{}: %+v, %v (the domain requires the limit)", req, err)
	}
	// One problem, the first met in the client's order; the document's
	// own before any.
	for body, want := range map[string][2]string{
		`{"limit_usd":0,"x":1}`:                           {"limit_usd", "must be more than 0"},
		`{"x":1,"limit_usd":0}`:                           {"x", "unknown field"},
		`{"include_byok_in_budgets":null,"limit_usd":-1}`: {"include_byok_in_budgets", "must be true or false"},
		`{"limit_usd":-1,"include_byok_in_budgets":null}`: {"limit_usd", "must be more than 0"},
		`{"limit_usd":"5"}`:                               {"limit_usd", "must be a number"},
		`{"limit_usd":null}`:                              {"limit_usd", "must be a number in range"},
		`{"limit_usd":0.0000001}`:                         {"limit_usd", "must have at most 6 decimals"},
		`{"limit_usd":1e300}`:                             {"limit_usd", "must be a number in range"},
		`{"x":1,"limit_usd":1,"limit_usd":2}`:             {"limit_usd", "duplicate key"},
		`{"limit_usd":1} x`:                               {"body", "unexpected data after the JSON object"},
	} {
		_, err := readBudget([]byte(body))
		fields := invalid.Fields(err)
		if len(fields) != 1 || fields[0].Name != want[0] || fields[0].Problem != want[1] {
			t.Errorf("%s: %v, want %s: %s", body, err, want[0], want[1])
		}
	}
}

// usageStore records what the spend service stores; every key but
// 00000000000000ff is the user's.
type usageStore struct {
	spend.Store
	recorded []spend.Report
}

func (s *usageStore) KeysOf(_ context.Context, _ string, ids []string) (map[string]string, error) {
	out := map[string]string{}
	for _, id := range ids {
		if id != "00000000000000ff" {
			out[id] = "ws"
		}
	}
	return out, nil
}

func (s *usageStore) RecordUsage(_ context.Context, b spend.Batch) (int, error) {
	s.recorded = append(s.recorded, b.Reports...)
	return len(b.Reports), nil
}

var serviceCaller = &keys.APIKey{UserID: "alice", Role: keys.RoleService}

func reportBatch(svc *spend.Service, body []byte) (spend.Result, error) {
	return svc.ReportBatch(context.Background(), serviceCaller, func(b *spend.BatchForm) { readBatch(body, b) })
}

func TestReadBatch(t *testing.T) {
	store := &usageStore{}
	svc := spend.NewService(store, nil, nil)
	hourAgo := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	res, err := reportBatch(svc, []byte(`{"reports":[
		{"id":"r1","key":"00000000000000aa","cost":0.000001,"byok":true,"at":"`+hourAgo.Format(time.RFC3339)+`"},
		{"id":"r2","key":"00000000000000aa","cost":12}]}`))
	if err != nil || res.Accepted != 2 {
		t.Fatalf("ReportBatch = %+v, %v", res, err)
	}
	rs := store.recorded
	if len(rs) != 2 || rs[0].Cost != 1 || !rs[0].BYOK || !rs[0].At.Equal(hourAgo) || rs[1].Cost != 12_000_000 ||
		rs[1].KeyID != "00000000000000aa" || time.Since(rs[1].At) > time.Minute {
		t.Fatalf("recorded %+v", rs)
	}
	many := make([]string, spend.MaxBatch+1)
	for i := range many {
		many[i] = fmt.Sprintf(`{"id":"r%d","key":"00000000000000aa","cost":1}`, i)
	}
	cases := map[string][2]string{
		`{}`:                         {"reports", "required"},
		`{"reports":[]}`:             {"reports", "must hold 1 to 1000 reports"},
		`{"reports":{}}`:             {"reports", "must be an array"},
		`{"reports":null}`:           {"reports", "must be an array"},
		`{"reports":[],"x":1}`:       {"x", "unknown field"},
		`{"":1,"reports":[]}`:        {"", "unknown field"},
		`{"reports":[],"reports":1}`: {"reports", "duplicate key"},
		`{"reports":[]} {}`:          {"body", "unexpected data after the JSON object"},
		`{"reports":[1]}`:            {"reports[0]", "must be a JSON object"},
		`{"reports":[{"key":"00000000000000aa","cost":1}]}`:                                                       {"reports[0].id", "required"},
		`{"reports":[{"id":"a","cost":1}]}`:                                                                       {"reports[0].key", "required"},
		`{"reports":[{"id":"a","key":"00000000000000aa"}]}`:                                                       {"reports[0].cost", "required"},
		`{"reports":[{"id":5,"key":"00000000000000aa","cost":1}]}`:                                                {"reports[0].id", spend.IDRule},
		`{"reports":[{"id":"a","key":5,"cost":1}]}`:                                                               {"reports[0].key", "must be a key hash"},
		`{"reports":[{"id":"a","key":"x","cost":1}]}`:                                                             {"reports[0].key", "must be a key hash (16 hexadecimal characters)"},
		`{"reports":[{"id":"a","key":"00000000000000aa","cost":-1}]}`:                                             {"reports[0].cost", "must be 0 or more"},
		`{"reports":[{"id":"a","key":"00000000000000aa","cost":"1"}]}`:                                            {"reports[0].cost", "must be a number"},
		`{"reports":[{"id":"a","key":"00000000000000aa","cost":1000000.000001}]}`:                                 {"reports[0].cost", "must be at most 1000000"},
		`{"reports":[{"id":"a","key":"00000000000000aa","cost":0.0000001}]}`:                                      {"reports[0].cost", "must have at most 6 decimals"},
		`{"reports":[{"id":"a","key":"00000000000000aa","cost":9223372036854.775807}]}`:                           {"reports[0].cost", "must be at most 1000000"},
		`{"reports":[{"id":"a","key":"00000000000000aa","cost":1e300}]}`:                                          {"reports[0].cost", "must be a number in range"},
		`{"reports":[{"id":"a","key":"00000000000000aa","cost":1,"byok":null}]}`:                                  {"reports[0].byok", "must be true or false"},
		`{"reports":[{"id":"a","key":"00000000000000aa","cost":1,"at":"2999-12-01T00:00:00Z"}]}`:                  {"reports[0].at", "must not be in the future"},
		`{"reports":[{"id":"a","key":"00000000000000aa","cost":1,"at":"2000-10-01T00:00:00Z"}]}`:                  {"reports[0].at", "must be at most 35 days old"},
		`{"reports":[{"id":"a","key":"00000000000000aa","cost":1,"at":"yesterday"}]}`:                             {"reports[0].at", "must be an ISO 8601 UTC time"},
		`{"reports":[{"id":"a","key":"00000000000000aa","cost":1,"id":"b"}]}`:                                     {"reports[0].id", "duplicate key"},
		`{"reports":[{"id":"a","key":"00000000000000aa","cost":1,"body":1,"body":2}]}`:                            {"reports[0]", "duplicate key"},
		`{"reports":[{"id":"a","key":"00000000000000aa","cost":1,"":1}]}`:                                         {"reports[0]", "unknown field"},
		`{"reports":[{"id":"a","key":"00000000000000aa","cost":1},{"id":"a","key":"00000000000000aa","cost":2}]}`: {"reports[1].id", "repeats the id of reports[0]"},
		`{"reports":[{"id":"a b","key":"00000000000000aa","cost":1}]}`:                                            {"reports[0].id", spend.IDRule},
		`{"reports":[{"id":"a","key":"00000000000000ff","cost":1}]}`:                                              {"reports[0].key", "no such key of this user"},
		`{"reports":[` + strings.Join(many, ",") + `]}`:                                                           {"reports", "must hold 1 to 1000 reports"},
		// The first problem met in order is named: within a report, the
		// body's and the domain's alike...
		`{"reports":[{"cost":"x","id":""}]}`: {"reports[0].cost", "must be a number"},
		`{"reports":[{"id":"","cost":"x"}]}`: {"reports[0].id", spend.IDRule},
		// ...a repeated id before a bad report, a bad report before a
		// repeated id.
		`{"reports":[{"id":"a","key":"00000000000000aa","cost":1},{"id":"a","key":"00000000000000aa","cost":1},{"id":"b","cost":1}]}`: {"reports[1].id", "repeats the id of reports[0]"},
		`{"reports":[{"id":"a","key":"00000000000000aa","cost":1},{"id":"b","cost":1},{"id":"a","key":"00000000000000aa","cost":1}]}`: {"reports[1].key", "required"},
	}
	for body, want := range cases {
		_, err := reportBatch(svc, []byte(body))
		fields := invalid.Fields(err)
		if len(fields) != 1 || fields[0].Name != want[0] || fields[0].Problem != want[1] {
			t.Errorf("%.80s: %v, want %s: %s", body, err, want[0], want[1])
		}
	}
}

// TestReportBatchKeepsNoReferenceToBody: batches are read into recycled
// buffers, so nothing the reader hands the domain may point into the body:
// overwriting the body afterwards changes neither the stored reports nor
// the error naming a bad report.
func TestReportBatchKeepsNoReferenceToBody(t *testing.T) {
	store := &usageStore{}
	svc := spend.NewService(store, nil, nil)
	body := []byte(`{"reports":[{"id":"r-1","key":"00000000000000aa","cost":0.5},{"id":"r-2","key":"00000000000000ab","cost":1,"byok":true}]}`)
	if _, err := reportBatch(svc, body); err != nil {
		t.Fatal(err)
	}
	for i := range body {
		body[i] = 'x'
	}
	if len(store.recorded) != 2 || store.recorded[0].ID != "r-1" || store.recorded[0].KeyID != "00000000000000aa" ||
		store.recorded[1].ID != "r-2" || store.recorded[1].KeyID != "00000000000000ab" {
		t.Fatalf("recorded %+v after the body was overwritten", store.recorded)
	}
	bad := []byte(`{"reports":[{"id":"r-3","key":"00000000000000aa","cost":1,"unknown_field_name":1}]}`)
	_, err := reportBatch(svc, bad)
	for i := range bad {
		bad[i] = 'x'
	}
	if !strings.Contains(err.Error(), "reports[0].unknown_field_name") {
		t.Fatalf("error after the body was overwritten: %v", err)
	}
}

func TestReadReport(t *testing.T) {
	store := &usageStore{}
	svc := spend.NewService(store, nil, nil)
	report := func(body string) error {
		_, err := svc.ReportOne(context.Background(), serviceCaller, "00000000000000aa",
			func(f *spend.ReportForm) { readReport([]byte(body), f, false, "") })
		return err
	}
	if err := report(`{"id":"one","cost":2,"byok":false,"at":null}`); err != nil || len(store.recorded) != 1 ||
		store.recorded[0].KeyID != "00000000000000aa" || store.recorded[0].Cost != 2_000_000 {
		t.Fatalf("ReportOne: %v, recorded %+v", err, store.recorded)
	}
	for body, want := range map[string][2]string{
		`{"id":"r","cost":1,"key":"00000000000000aa"}`: {"key", "unknown field"},
		`{"cost":1}`:                   {"id", "required"},
		`{"id":"r"}`:                   {"cost", "required"},
		`{"id":"r","cost":1,"":1}`:     {"", "unknown field"},
		`{"id":"r","cost":-1}`:         {"cost", "must be 0 or more"},
		`{"cost":-1,"cost":1}`:         {"cost", "duplicate key"},
		`[]`:                           {"body", "must be a JSON object"},
		`{"id":"r","cost":1} {}`:       {"body", "unexpected data after the JSON object"},
		`{"id":"r","body":1,"body":2}`: {"body", "duplicate key"},
	} {
		fields := invalid.Fields(report(body))
		if len(fields) != 1 || fields[0].Name != want[0] || fields[0].Problem != want[1] {
			t.Errorf("%s: %v, want %s: %s", body, fields, want[0], want[1])
		}
	}
}

func TestJSONMediaType(t *testing.T) {
	for ct, want := range map[string]string{
		"application/json":                  "",
		"application/json; charset=utf-8":   "",
		"Application/JSON;charset=UTF-8":    "",
		"application/json; charset=latin1":  "must be application/json, with charset utf-8 if any",
		"":                                  "must be application/json",
		"text/plain":                        "must be application/json",
		"text/plain; charset=utf-8":         "must be application/json",
		"application/x-www-form-urlencoded": "must be application/json",
		"multipart/form-data; boundary=x":   "must be application/json",
		"application/json-patch+json":       "must be application/json",
		"application/json; charset":         "must be application/json",
	} {
		if got := jsonMediaTypeProblem(ct); got != want {
			t.Errorf("%q: %q, want %q", ct, got, want)
		}
	}
}

// TestJSONBodyRoutesShareTheMediaTypeRule: every route that reads a JSON
// body refuses a body not declared as JSON the same way, with 400 naming
// content_type, before anything of the body is read; a missing
// Content-Type included, which some routes took for JSON.
func TestJSONBodyRoutesShareTheMediaTypeRule(t *testing.T) {
	api, _ := newTestAPI(t, Options{Workspaces: &fakeWorkspaces{result: workspace.Result{Workspace: testWorkspace}}})
	h := api.Handler()
	routes := [][2]string{
		{"POST", "/workspaces"}, {"PATCH", "/workspaces/w1"}, {"PUT", "/workspaces/w1/budgets/daily"},
		{"POST", "/keys"}, {"PATCH", "/keys/00000000000000aa"}, {"POST", "/keys/00000000000000aa/usage"},
		{"POST", "/byok"}, {"PATCH", "/byok/9c0d7a3e-0000-4000-8000-000000000000"}, {"POST", "/usage"},
	}
	for _, route := range routes {
		for _, ct := range []string{"", "text/plain", "application/x-www-form-urlencoded", "application/json; charset=utf-16"} {
			req := httptest.NewRequest(route[0], apiPrefix+route[1], strings.NewReader(`{}`))
			req.Header.Set("Authorization", "Bearer management")
			if ct != "" {
				req.Header.Set("Content-Type", ct)
			}
			rec := serve(h, req)
			env := decodeEnvelope(t, rec)
			fields, _ := env.Error.Metadata["fields"].(map[string]any)
			if rec.Code != http.StatusBadRequest || env.Error.Message != "Invalid request parameters" || fields["content_type"] == nil {
				t.Errorf("%s %s with Content-Type %q: %d %s, want 400 naming content_type", route[0], route[1], ct, rec.Code, rec.Body)
			}
		}
	}
}

func TestReadTimeIsUTC(t *testing.T) {
	for s, want := range map[string]string{
		"2030-01-31T00:00:00Z":            "",
		"2030-01-31T00:00:00.123456Z":     "",
		"2030-01-31T00:00:00+00:00":       "",
		"2030-01-31T05:00:00+05:00":       "must be in UTC (end with Z), e.g. 2030-01-31T00:00:00Z",
		"2030-01-30T23:00:00-01:00":       "must be in UTC (end with Z), e.g. 2030-01-31T00:00:00Z",
		"2030-01-31T00:00Z":               "must be an ISO 8601 UTC time with seconds, e.g. 2030-01-31T00:00:00Z",
		"2030-01-31":                      "must be an ISO 8601 UTC time with seconds, e.g. 2030-01-31T00:00:00Z",
		"2030-01-31T00:00:00":             "must be an ISO 8601 UTC time with seconds, e.g. 2030-01-31T00:00:00Z",
		"Fri, 31 Jan 2030 00:00:00 +0000": "must be an ISO 8601 UTC time with seconds, e.g. 2030-01-31T00:00:00Z",
	} {
		got, problem := readUTC(s)
		if problem != want {
			t.Errorf("readUTC(%q): %q, want %q", s, problem, want)
			continue
		}
		if problem == "" && (got.Location() != time.UTC || !got.Equal(time.Date(2030, 1, 31, 0, 0, 0, got.Nanosecond(), time.UTC))) {
			t.Errorf("readUTC(%q) = %v", s, got)
		}
		if _, ok := readTime(s); ok != (want == "") {
			t.Errorf("readTime(%q) ok = %v, want %v (the usage reports' \"at\" follows the same rule)", s, ok, want == "")
		}
	}
}
