package providertest

import (
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestInMemory: an in-memory stand-in answers a client dialling it with
// Dial, inside a synctest bubble, where a request to a hung stand-in times
// out on the bubble's clock; a client dialling the network is refused.
func TestInMemory(t *testing.T) {
	for name, start := range map[string]func(testing.TB) *Server{"openai": NewOpenAIInMemory, "anthropic": NewAnthropicInMemory} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := start(t)
				tr := &http.Transport{DialContext: s.Dial}
				defer tr.CloseIdleConnections()
				c := &http.Client{Transport: tr}
				files := strings.TrimSuffix(s.BaseURL, "/v1") + "/v1/files"
				resp, err := c.Get(files + "/file-none")
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				// No key: the provider's 401, recorded like any request.
				if resp.StatusCode != http.StatusUnauthorized || len(s.Requests()) != 1 || s.Requests()[0].Status != http.StatusUnauthorized {
					t.Fatalf("%d, requests %+v", resp.StatusCode, s.Requests())
				}

				s.HangReads()
				const timeout = time.Minute
				c.Timeout = timeout
				start := time.Now()
				_, err = c.Get(files)
				var ne net.Error
				if !errors.As(err, &ne) || !ne.Timeout() {
					t.Fatalf("request to a hung stand-in: %v, want a timeout", err)
				}
				if took := time.Since(start); took != timeout {
					t.Fatalf("gave up after %v of the bubble's clock, want %v", took, timeout)
				}

				// Over the network, nothing listens.
				if _, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", s.srv.Listener.Addr().String()); err == nil {
					t.Fatal("the in-memory stand-in's address accepted a network connection")
				}
			})
		})
	}
}
