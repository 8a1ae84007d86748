package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"mime/multipart"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// controls is how many ordinary (not half-closed) creates and uploads
// prove, before the attack, that the requests themselves succeed.
const controls = 2

// halfWorkers is how many half-closed exchanges run at once.
const halfWorkers = 4

// answer is what one exchange got back.
type answer struct {
	status int // 0: no answer (EOF, reset, timeout)
	body   []byte
	err    error
}

// exchange sends one complete request on a connection of its own, half
// closes it at once if told to (shutdown(SHUT_WR): the request is complete
// and the client will send nothing more), and reads the answer.
func exchange(addr string, req []byte, halfClose bool, timeout time.Duration) answer {
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return answer{err: err}
	}
	defer nc.Close()
	if err := nc.SetDeadline(time.Now().Add(timeout)); err != nil {
		return answer{err: err}
	}
	if _, err := nc.Write(req); err != nil {
		return answer{err: err}
	}
	if halfClose {
		if err := nc.(*net.TCPConn).CloseWrite(); err != nil {
			return answer{err: err}
		}
	}
	resp, err := http.ReadResponse(bufio.NewReader(nc), nil)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return answer{status: resp.StatusCode, body: body, err: err}
}

// render writes r as the bytes a client sends.
func render(r *http.Request) []byte {
	var b bytes.Buffer
	_ = r.Write(&b) // a bytes.Buffer does not fail
	return b.Bytes()
}

func createRequest(addr, mgmt, slug string) []byte {
	body, _ := json.Marshal(map[string]string{"name": "abuse " + slug, "slug": slug})
	r, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/api/v1/workspaces", bytes.NewReader(body))
	r.Header.Set("Authorization", "Bearer "+mgmt)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("User-Agent", "abuse-halfclose")
	return render(r)
}

func lookupWorkspaceRequest(addr, mgmt, slug string) []byte {
	r, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/api/v1/workspaces/"+slug, nil)
	r.Header.Set("Authorization", "Bearer "+mgmt)
	r.Header.Set("User-Agent", "abuse-verify")
	return render(r)
}

func uploadRequest(addr, key, name string) []byte {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	part, _ := mw.CreateFormFile("file", name)
	fmt.Fprintf(part, "abuse half-close upload %s\n", name)
	_ = mw.Close()
	r, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/api/v1/files", &body)
	r.Header.Set("Authorization", "Bearer "+key)
	r.Header.Set("Content-Type", mw.FormDataContentType())
	r.Header.Set("User-Agent", "abuse-halfclose")
	return render(r)
}

// fileID is the id of the File object an upload answered with, or "".
func fileID(body []byte) string {
	var f struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(body, &f) != nil {
		return ""
	}
	return f.ID
}

// tally counts the answers of one kind of half-closed request and whether
// the work they answered for was done.
type tally struct {
	statuses                map[int]int
	noAnswer                int
	success, emptySuccess   int // 2xx; 2xx with an empty body
	successDone, successNot int // 2xx for work done; 2xx for work not done
	failedButDone           int // non-2xx (or none) for work that was done anyway
	unverified              int // work whose existence could not be checked
}

func newTally() tally { return tally{statuses: map[int]int{}} }

func (t *tally) add(a answer) {
	if a.status == 0 {
		t.noAnswer++
		return
	}
	t.statuses[a.status]++
	if a.status >= 200 && a.status < 300 {
		t.success++
		if len(a.body) == 0 {
			t.emptySuccess++
		}
	}
}

func (t tally) answers() string {
	var parts []string
	for _, code := range slices.Sorted(maps.Keys(t.statuses)) {
		parts = append(parts, fmt.Sprintf("%d: %d", code, t.statuses[code]))
	}
	parts = append(parts, fmt.Sprintf("no answer: %d", t.noAnswer))
	return "{" + strings.Join(parts, ", ") + "}"
}

// halfResult is what the half-close phase measured.
type halfResult struct {
	n                      int
	creates, uploads       tally
	filesDir               string
	storedBefore, storedIn int // objects in filesDir before the phase; gained during it
}

// undone is the successes reported for work not done.
func (r *halfResult) undone() int { return r.creates.successNot + r.uploads.successNot }

// honest is the successes reported for work done.
func (r *halfResult) honest() int { return r.creates.successDone + r.uploads.successDone }

// halfCloseAttack sends o.halfClose half-closed workspace creates and as many
// half-closed uploads, then checks which of them were done.
func halfCloseAttack(o options) (*halfResult, error) {
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	for i := range controls {
		slug := fmt.Sprintf("abuse-ok-%s-%d", run, i)
		if a := exchange(o.addr, createRequest(o.addr, o.mgmt, slug), false, o.ioTimeout); a.status/100 != 2 {
			return nil, fmt.Errorf("control workspace create: status %d, %v: %.200s", a.status, a.err, a.body)
		}
		if a := exchange(o.addr, uploadRequest(o.addr, o.key, fmt.Sprintf("abuse-ok-%d.txt", i)), false, o.ioTimeout); a.status/100 != 2 || fileID(a.body) == "" {
			return nil, fmt.Errorf("control upload: status %d, %v: %.200s", a.status, a.err, a.body)
		}
	}

	res := &halfResult{n: o.halfClose, creates: newTally(), uploads: newTally(), filesDir: o.filesDir}
	before, err := countFiles(o.filesDir)
	if err != nil {
		return nil, err
	}
	res.storedBefore = before

	slugs := make([]string, o.halfClose)
	createAnswers := make([]answer, o.halfClose)
	uploadAnswers := make([]answer, o.halfClose)
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range halfWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				slugs[i] = fmt.Sprintf("abuse-hc-%s-%d", run, i)
				createAnswers[i] = exchange(o.addr, createRequest(o.addr, o.mgmt, slugs[i]), true, o.ioTimeout)
				uploadAnswers[i] = exchange(o.addr, uploadRequest(o.addr, o.key, fmt.Sprintf("abuse-hc-%d.txt", i)), true, o.ioTimeout)
			}
		}()
	}
	for i := range o.halfClose {
		jobs <- i
	}
	close(jobs)
	wg.Wait()

	after, err := countFiles(o.filesDir)
	if err != nil {
		return nil, err
	}
	res.storedIn = after - before

	for i, a := range createAnswers {
		res.creates.add(a)
		check := exchange(o.addr, lookupWorkspaceRequest(o.addr, o.mgmt, slugs[i]), false, o.ioTimeout)
		ok := a.status/100 == 2
		switch {
		case check.status == http.StatusOK && ok:
			res.creates.successDone++
		case check.status == http.StatusOK:
			res.creates.failedButDone++
		case check.status == http.StatusNotFound && ok:
			res.creates.successNot++
		case check.status == http.StatusNotFound:
		default:
			res.creates.unverified++
		}
	}
	// An upload's File object is written only once it is stored, so a 2xx
	// without a file id is a success reported for an upload not done.
	for _, a := range uploadAnswers {
		res.uploads.add(a)
		if a.status/100 != 2 {
			continue
		}
		if fileID(a.body) != "" {
			res.uploads.successDone++
		} else {
			res.uploads.successNot++
		}
	}
	return res, nil
}

// countFiles counts the regular files under dir ("" counts nothing).
func countFiles(dir string) (int, error) {
	if dir == "" {
		return 0, nil
	}
	n := 0
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("-files-dir: %w", err)
	}
	return n, nil
}

func (r *halfResult) print(w io.Writer) {
	fmt.Fprintf(w, "\n== half close: %d workspace creates (management key) and %d uploads (standard key), each complete and followed at once by shutdown(SHUT_WR)\n", r.n, r.n)
	fmt.Fprintf(w, "  control     %d creates and %d uploads without half close: all 2xx\n", controls, controls)
	c, u := r.creates, r.uploads
	fmt.Fprintf(w, "  creates     answers %s; 2xx with an empty body: %d\n", c.answers(), c.emptySuccess)
	fmt.Fprintf(w, "              2xx, workspace exists: %d; 2xx, workspace does not exist: %d; not 2xx, created anyway: %d; not verifiable: %d\n",
		c.successDone, c.successNot, c.failedButDone, c.unverified)
	fmt.Fprintf(w, "  uploads     answers %s; 2xx with an empty body: %d\n", u.answers(), u.emptySuccess)
	stored := "not counted (no -files-dir)"
	if r.filesDir != "" {
		stored = fmt.Sprint(r.storedIn)
	}
	fmt.Fprintf(w, "              2xx with a file id: %d; 2xx without one: %d; objects the storage gained: %s\n",
		u.successDone, u.successNot, stored)
	fmt.Fprintf(w, "  verdict     successes reported for work not done: %d; for work done: %d\n", r.undone(), r.honest())
}
