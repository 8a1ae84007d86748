package keys

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aigateway/gateway/internal/money"
)

var parseNow = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func TestParseCreateRequest(t *testing.T) {
	req, err := ParseCreateRequest([]byte(`{"name":"ci","workspace_id":"prod","limit":12.5,
		"limit_reset":"weekly","include_byok_in_limit":true,"expires_at":"2027-01-01T00:00:00Z"}`), parseNow)
	if err != nil {
		t.Fatal(err)
	}
	if req.Name != "ci" || req.Workspace != "prod" || req.Limit == nil || *req.Limit != 12_500_000 ||
		req.LimitReset != ResetWeekly || !req.IncludeBYOKInLimit || req.ExpiresAt == nil ||
		!req.ExpiresAt.Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("decoded %+v", req)
	}
	req, err = ParseCreateRequest([]byte(`{"name":"x","limit":null,"limit_reset":null,"expires_at":null,"workspace_id":null}`), parseNow)
	if err != nil || req.Limit != nil || req.LimitReset != ResetNever || req.ExpiresAt != nil || req.Workspace != "" {
		t.Fatalf("nulls: %+v, %v", req, err)
	}
}

func TestParseCreateRequestRefuses(t *testing.T) {
	cases := map[string]string{
		`{}`:             "name",
		`{"name":""}`:    "name",
		`{"name":"   "}`: "name",
		`{"name":null}`:  "name",
		`{"name":7}`:     "name",
		`{"name":"` + strings.Repeat("é", 101) + `"}`:      "name",
		`{"name":"a\u0007b"}`:                              "name",
		`{"name":"a","nme":"b"}`:                           "nme",
		`{"name":"a","name":"b"}`:                          "name",
		`{"name":"a","limit":-1}`:                          "limit",
		`{"name":"a","limit":"5"}`:                         "limit",
		`{"name":"a","limit":0.0000001}`:                   "limit",
		`{"name":"a","limit":1e300}`:                       "limit",
		`{"name":"a","limit_reset":"yearly"}`:              "limit_reset",
		`{"name":"a","limit_reset":""}`:                    "limit_reset",
		`{"name":"a","include_byok_in_limit":1}`:           "include_byok_in_limit",
		`{"name":"a","expires_at":"2020-01-01T00:00:00Z"}`: "expires_at",
		`{"name":"a","expires_at":"2027-01-01"}`:           "expires_at",
		`{"name":"a","expires_at":"2026-11-25T12:00:00Z"}`: "expires_at",
		`{"name":"a","workspace_id":5}`:                    "workspace_id",
		`[]`:                                               "body",
		`{"name":"a"} {}`:                                  "body",
		`{"name":"a"`:                                      "body",
	}
	for body, field := range cases {
		_, err := ParseCreateRequest([]byte(body), parseNow)
		var bad *InvalidError
		if !errors.As(err, &bad) || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v, want *InvalidError", body, err)
			continue
		}
		if bad.Problems[0].Field != field {
			t.Errorf("%s: first problem names %q (%v), want %q", body, bad.Problems[0].Field, bad, field)
		}
	}
}

func TestParseUpdateRequest(t *testing.T) {
	u, err := ParseUpdateRequest([]byte(`{"disabled":true,"limit":null,"limit_reset":null}`))
	if err != nil {
		t.Fatal(err)
	}
	if !u.Disabled.Set || !u.Disabled.Value || !u.Limit.Set || u.Limit.Value != nil ||
		!u.LimitReset.Set || u.LimitReset.Value != ResetNever || u.Name.Set || u.IncludeBYOKInLimit.Set {
		t.Fatalf("decoded %+v", u)
	}
	if u, err := ParseUpdateRequest([]byte(`{}`)); err != nil || !u.Empty() {
		t.Fatalf("{}: %+v, %v", u, err)
	}
	u, err = ParseUpdateRequest([]byte(`{"limit":3}`))
	if err != nil || *u.Limit.Value != money.Micros(3_000_000) {
		t.Fatalf("limit: %+v, %v", u, err)
	}
	for body, field := range map[string]string{
		`{"disabled":null}`:     "disabled",
		`{"expires_at":null}`:   "expires_at",
		`{"role":"management"}`: "role",
		`{"name":null}`:         "name",
	} {
		_, err := ParseUpdateRequest([]byte(body))
		var bad *InvalidError
		if !errors.As(err, &bad) || bad.Problems[0].Field != field {
			t.Errorf("%s: err = %v, want a problem of %q", body, err, field)
		}
	}
}
