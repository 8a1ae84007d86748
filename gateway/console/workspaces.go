package console

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/aigateway/gateway/client"
)

// workspacesPerPage is the page size of the workspace list.
const workspacesPerPage = 20

type workspacesData struct {
	Workspaces []client.Workspace
	Total      int
	Pager      pager
}

// pager links the pages of an offset-paged list.
type pager struct {
	From, To, Total int
	Prev, Next      string // empty: none
}

func offsetPager(path string, q url.Values, offset, size, shown, total int) pager {
	p := pager{From: offset + 1, To: offset + shown, Total: total}
	if shown == 0 {
		p.From = 0
	}
	if offset > 0 {
		q.Set("offset", strconv.Itoa(max(offset-size, 0)))
		p.Prev = withQuery(path, q)
	}
	if (total >= 0 && offset+shown < total) || (total < 0 && shown == size) {
		q.Set("offset", strconv.Itoa(offset+size))
		p.Next = withQuery(path, q)
	}
	return p
}

// offsetParam reads a non-negative offset from the query; anything else
// is the first page.
func offsetParam(r *http.Request) int {
	n, err := strconv.Atoi(r.URL.Query().Get("offset"))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

func (c *Console) workspaces(v *visit) error {
	offset := offsetParam(v.r)
	page, err := v.api.ListWorkspaces(v.ctx(), offset, workspacesPerPage)
	if err != nil {
		return err
	}
	return v.show("workspaces", "Workspaces", "workspaces", workspacesData{
		Workspaces: page.Workspaces, Total: page.Total,
		Pager: offsetPager("/console/workspaces", url.Values{}, offset, workspacesPerPage, len(page.Workspaces), page.Total),
	})
}

func (c *Console) createWorkspace(v *visit) error {
	f := v.r.PostForm
	w := client.WorkspaceCreate{Name: strings.TrimSpace(f.Get("name")), Slug: strings.TrimSpace(f.Get("slug"))}
	if d := strings.TrimSpace(f.Get("description")); d != "" {
		w.Description = &d
	}
	created, err := v.api.CreateWorkspace(v.ctx(), w)
	if err != nil {
		return v.retry("new-workspace", "/console/workspaces", slugTaken(err, w.Slug), c.workspaces)
	}
	return v.done("/console/workspaces", "Workspace “"+created.Name+"” created.", nil)
}

// slugTaken words the API's 409 on a workspace's slug, which says only
// that the resource exists: which field, and what to do.
func slugTaken(err error, slug string) error {
	var apiErr *client.Error
	if errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusConflict {
		return badField{field: "slug", status: http.StatusConflict,
			msg: "A workspace with the slug “" + slug + "” already exists: choose another slug."}
	}
	return err
}

type workspaceEditData struct {
	Workspace client.Workspace
	Sorts     []string
}

// providerSorts are the values of default_provider_sort.
var providerSorts = []string{"price", "throughput", "latency", "exacto"}

func (c *Console) workspaceEdit(v *visit) error {
	w, err := v.api.GetWorkspace(v.ctx(), v.r.PathValue("ref"))
	if err != nil {
		return err
	}
	return v.show("workspace", "Workspace “"+w.Name+"”", "workspaces", workspaceEditData{Workspace: *w, Sorts: providerSorts})
}

func (c *Console) updateWorkspace(v *visit) error {
	ref := v.r.PathValue("ref")
	f := v.r.PostForm
	slug := strings.TrimSpace(f.Get("slug"))
	u := client.WorkspaceUpdate{
		Name:        client.Set(strings.TrimSpace(f.Get("name"))),
		Slug:        client.Set(slug),
		Description: client.Set(strings.TrimSpace(f.Get("description"))),
	}
	if s := f.Get("default_provider_sort"); s == "" {
		u.DefaultProviderSort = client.Null[string]()
	} else {
		u.DefaultProviderSort = client.Set(s)
	}
	if m := strings.TrimSpace(f.Get("default_text_model")); m == "" {
		u.DefaultTextModel = client.Null[string]()
	} else {
		u.DefaultTextModel = client.Set(m)
	}
	back := "/console/workspaces/" + url.PathEscape(ref)
	w, err := v.api.UpdateWorkspace(v.ctx(), ref, u)
	if err != nil {
		return v.retry("workspace", back, slugTaken(err, slug), c.workspaceEdit)
	}
	return v.done("/console/workspaces/"+url.PathEscape(w.ID), "Workspace saved.", nil)
}

func (c *Console) deleteWorkspace(v *visit) error {
	ref := v.r.PathValue("ref")
	back := "/console/workspaces/" + url.PathEscape(ref)
	err := v.api.DeleteWorkspace(v.ctx(), ref)
	var apiErr *client.Error
	switch {
	case err == nil:
		return v.done("/console/workspaces", "Workspace deleted.", nil)
	case errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusBadRequest:
		w, werr := v.api.GetWorkspace(v.ctx(), ref)
		if werr != nil {
			return v.retry("", back, err, c.workspaceEdit)
		}
		if r, ok := notDeletable(apiErr, w); ok {
			return v.showRefusal("", back, r, c.workspaceEdit)
		}
	}
	return v.retry("", back, err, c.workspaceEdit)
}

// notDeletable words the API's refusal to delete workspace w: what holds
// it, what to do, and links to what holds it. ok is false for another
// refusal.
func notDeletable(e *client.Error, w *client.Workspace) (refusal, bool) {
	r := refusal{status: e.StatusCode}
	if isDefault, _ := e.Metadata["default"].(bool); isDefault {
		r.message = "“" + w.Name + "” is the default workspace, where keys made without a workspace act: it cannot be deleted."
		return r, true
	}
	files, hasFiles := e.Metadata["files"].(float64)
	keys, hasKeys := e.Metadata["keys"].(float64)
	uploads, _ := e.Metadata["uploads_in_progress"].(float64)
	if !hasFiles && !hasKeys {
		return refusal{}, false
	}
	var held []string
	if files > 0 {
		held = append(held, plural(int(files), "file", "files"))
		r.links = append(r.links, flashLink{Text: "Its files", Href: "/console/files?workspace=" + url.QueryEscape(w.ID)})
	}
	if keys > 0 {
		held = append(held, plural(int(keys), "key", "keys"))
		r.links = append(r.links, flashLink{Text: "Its keys", Href: "/console/keys?workspace=" + url.QueryEscape(w.ID)})
	}
	if uploads > 0 {
		held = append(held, plural(int(uploads), "upload in progress", "uploads in progress"))
	}
	r.message = "“" + w.Name + "” still holds " + joinAnd(held) + ", so it cannot be deleted. "
	switch {
	case files+keys > 0 && uploads > 0:
		r.message += "Delete them, let the uploads end, then delete the workspace:"
	case uploads > 0:
		r.message += "Let the uploads end, then delete the workspace."
	default:
		r.message += "Delete them first, then delete the workspace:"
	}
	return r, true
}

// workspaceChoice is a workspace offered in a picker.
type workspaceChoice struct {
	ID, Name, Slug string
	Selected       bool
}

// maxWorkspaceChoices bounds the workspaces a picker lists.
const maxWorkspaceChoices = 100

// pickWorkspace decides which workspace a page of a management key shows
// (the query's workspace, else the first one listed) and lists the choices.
// A standard key acts in its own workspace only: no choices, and its id.
func (v *visit) pickWorkspace() (string, []workspaceChoice, error) {
	want := v.r.URL.Query().Get("workspace")
	if !v.me.IsManagementKey {
		if v.me.WorkspaceID != "" {
			return v.me.WorkspaceID, nil, nil
		}
		return "", nil, nil
	}
	page, err := v.api.ListWorkspaces(v.ctx(), 0, maxWorkspaceChoices)
	if err != nil {
		return "", nil, err
	}
	choices := make([]workspaceChoice, 0, len(page.Workspaces))
	found := false
	for _, w := range page.Workspaces {
		sel := w.ID == want || w.Slug == want
		found = found || sel
		choices = append(choices, workspaceChoice{ID: w.ID, Name: w.Name, Slug: w.Slug, Selected: sel})
	}
	switch {
	case found:
		for _, ch := range choices {
			if ch.Selected {
				return ch.ID, choices, nil
			}
		}
	case want != "":
		// Not among the first listed: the API decides whether it may be used.
		return want, choices, nil
	case len(choices) > 0:
		choices[0].Selected = true
		return choices[0].ID, choices, nil
	}
	return "", choices, nil
}
