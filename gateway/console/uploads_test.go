package console_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aigateway/gateway/client"
)

// send posts body to a route of the console's uploads as the page's
// script does: same origin, the session's token in X-CSRF-Token.
func (b *visitor) send(path, token, contentType string, body io.Reader) answer {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.base+path, body)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if token != "" {
		req.Header.Set("X-CSRF-Token", token)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Origin", b.base)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	return b.do(req)
}

// refusal is the console's answer to a refused route of an upload: the
// API's envelope.
type refusal struct {
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// The console's routes of an upload in parts carry a file through the
// API's resumable uploads with the session's key: parts in any order of
// arrival, completed in the order listed; every refusal is the API's, in
// its envelope with the console's words; a part needs the session's token
// in its header and its declared length.
func TestUploadInPartsThroughTheConsole(t *testing.T) {
	t.Parallel()
	g := startGateway(t, testConfig(t), true)
	api := g.api(t, g.Management)
	w, err := api.CreateWorkspace(context.Background(), client.WorkspaceCreate{Name: "Parts", Slug: "parts"})
	if err != nil {
		t.Fatal(err)
	}
	q := "?workspace=" + url.QueryEscape(w.ID)
	b := g.browser(t)
	b.signIn(g.Management)
	page := b.get("/console/files" + q)
	if !strings.Contains(page.Body, `data-single-max="104857600"`) || !strings.Contains(page.Body, `data-part-bytes="67108864"`) {
		t.Errorf("the page does not carry the single-upload limit and the part size:\n%s", page.Body)
	}
	token := csrfField.FindStringSubmatch(page.Body)[1]
	jsonBody := func(s string) io.Reader { return strings.NewReader(s) }
	refused := func(what string, a answer, status int) string {
		t.Helper()
		var r refusal
		decodeJSON(t, a.Body, &r)
		if a.StatusCode != status || r.Error == nil || r.Error.Code != status || r.Error.Message == "" {
			t.Errorf("%s = %d %s, want %d in the envelope", what, a.StatusCode, a.Body, status)
			return ""
		}
		return r.Error.Message
	}
	var made struct{ ID string }
	create := func(name string) string {
		t.Helper()
		a := b.send("/console/uploads"+q, token, "application/json", jsonBody(`{"bytes":11,"filename":"`+name+`","mime_type":"text/plain"}`))
		if a.StatusCode != http.StatusOK {
			t.Fatalf("create = %d %s", a.StatusCode, a.Body)
		}
		decodeJSON(t, a.Body, &made)
		if !strings.HasPrefix(made.ID, "upload_") {
			t.Fatalf("create answered %s", a.Body)
		}
		return made.ID
	}
	part := func(id, token, content string) answer {
		return b.send("/console/uploads/"+id+"/parts"+q, token, "application/octet-stream", strings.NewReader(content))
	}

	id := create("hello.txt")
	if a := part(id, "", "hello "); a.StatusCode != http.StatusForbidden {
		t.Errorf("a part without the session's token = %d, want 403", a.StatusCode)
	}
	if a := part(id, "not-the-token", "hello "); a.StatusCode != http.StatusForbidden {
		t.Errorf("a part with another token = %d, want 403", a.StatusCode)
	}
	// Sent in the other order than the file's, as parallel parts arrive.
	var second, first struct{ ID string }
	decodeJSON(t, part(id, token, "world").Body, &second)
	decodeJSON(t, part(id, token, "hello ").Body, &first)
	if !strings.HasPrefix(first.ID, "part_") || !strings.HasPrefix(second.ID, "part_") {
		t.Fatalf("parts answered %q and %q", first.ID, second.ID)
	}
	done := b.send("/console/uploads/"+id+"/complete"+q, token, "application/json", jsonBody(`{"part_ids":["`+first.ID+`","`+second.ID+`"]}`))
	var ok struct {
		OK       bool   `json:"ok"`
		Message  string `json:"message"`
		Location string `json:"location"`
	}
	decodeJSON(t, done.Body, &ok)
	if done.StatusCode != http.StatusOK || !ok.OK || ok.Message != "Uploaded “hello.txt” (11 bytes)." || ok.Location != "/console/files"+q {
		t.Errorf("complete = %d %s", done.StatusCode, done.Body)
	}
	f := fileNamed(t, api, w.ID, "hello.txt")
	if got := string(fileBytes(t, g, f.ID, w.ID)); got != "hello world" {
		t.Errorf("the file reads %q, want the parts in the order listed", got)
	}

	// Refusals, each the API's in its envelope.
	refused("completing twice", b.send("/console/uploads/"+id+"/complete"+q, token, "application/json", jsonBody(`{"part_ids":["`+first.ID+`","`+second.ID+`"]}`)), http.StatusBadRequest)
	refused("cancelling a completed upload", b.send("/console/uploads/"+id+"/cancel"+q, token, "", nil), http.StatusBadRequest)
	refused("a part of a completed upload", part(id, token, "more"), http.StatusBadRequest)
	refused("an unknown upload", part("upload_nosuch", token, "x"), http.StatusNotFound)
	refused("an empty part", part(id, token, ""), http.StatusBadRequest)
	refused("an unknown field", b.send("/console/uploads"+q, token, "application/json", jsonBody(`{"bytes":11,"filename":"a.txt","purpose":"batch"}`)), http.StatusBadRequest)
	if msg := refused("no bytes", b.send("/console/uploads"+q, token, "application/json", jsonBody(`{"bytes":0,"filename":"a.txt","mime_type":"text/plain"}`)), http.StatusBadRequest); !strings.Contains(msg, "bytes") {
		t.Errorf("a refusal of bytes does not name them: %q", msg)
	}

	// Cancel: the upload is cancelled on the gateway.
	id = create("later.txt")
	part(id, token, "hello ")
	a := b.send("/console/uploads/"+id+"/cancel"+q, token, "", nil)
	if a.StatusCode != http.StatusOK || !strings.Contains(a.Body, `"status":"cancelled"`) {
		t.Errorf("cancel = %d %s", a.StatusCode, a.Body)
	}
	if st := uploadStatus(t, g, id, w.ID); st != "cancelled" {
		t.Errorf("after cancel the upload is %q", st)
	}

	// A page closed mid-upload cancels it with a beacon: a form carrying
	// the token, since a beacon sends no header of its own.
	id = create("closed.txt")
	beacon := b.post("/console/uploads/"+id+"/cancel"+q, url.Values{"csrf": {token}})
	if beacon.StatusCode != http.StatusOK {
		t.Errorf("cancel by beacon = %d %s", beacon.StatusCode, beacon.Body)
	}
	if st := uploadStatus(t, g, id, w.ID); st != "cancelled" {
		t.Errorf("after the beacon the upload is %q", st)
	}
}
