package console

import (
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aigateway/gateway/client"
)

// keysPerPage is the API's page of GET /keys.
const keysPerPage = client.KeysPerPage

type keysData struct {
	Keys       []client.Key
	Workspaces []workspaceChoice
	Names      map[string]string // workspace id -> name
	Workspace  string
	Pager      pager
	Resets     []string
	// Created is a key just made, with its secret: shown on this answer
	// only, never stored and never shown again.
	Created *client.CreatedKey
	// Chart is the spend per day of the key chosen with ?chart=<hash>
	// (ChartKey names it); ChartNote says why it is missing.
	Chart     *dayChart
	ChartKey  string
	ChartNote string
}

// limitResets are the windows of a key's spending limit ("" is lifetime).
var limitResets = []string{"daily", "weekly", "monthly"}

func (c *Console) keys(v *visit) error {
	return c.showKeys(v, http.StatusOK, nil)
}

func (c *Console) showKeys(v *visit, status int, created *client.CreatedKey) error {
	if !v.me.IsManagementKey {
		return needManagement
	}
	ws := v.r.URL.Query().Get("workspace")
	offset := offsetParam(v.r)
	page, err := v.api.ListKeys(v.ctx(), client.KeyQuery{IncludeDisabled: true, Workspace: ws}, offset)
	if err != nil {
		return err
	}
	list := page.Keys
	choices, err := v.api.ListWorkspaces(v.ctx(), 0, maxWorkspaceChoices)
	if err != nil {
		return err
	}
	d := keysData{Keys: list, Workspace: ws, Resets: limitResets, Created: created, Names: map[string]string{}}
	for _, w := range choices.Workspaces {
		d.Names[w.ID] = w.Name
		d.Workspaces = append(d.Workspaces, workspaceChoice{ID: w.ID, Name: w.Name, Slug: w.Slug, Selected: w.ID == ws})
	}
	d.Pager = offsetPager("/console/keys", url.Values{"workspace": {ws}}, offset, keysPerPage, len(list), -1)
	if hash := v.r.URL.Query().Get("chart"); hash != "" {
		name := hash
		for _, k := range list {
			if k.Hash == hash {
				name = k.Name + " (" + k.Label + ")"
			}
		}
		d.ChartKey = name
		if d.Chart, d.ChartNote, err = v.chartOf("key-chart", chartTitle("key “"+name+"”"), client.DailyQuery{KeyHash: hash}); err != nil {
			return err
		}
	}
	if v.status != 0 {
		status = v.status // a refused form shown again
	}
	v.c.render(v.w, status, "keys", v.view("API keys", "keys", d))
	return nil
}

// needManagement is the API's own refusal, for pages that list what only
// a management key may see (the API would answer the same).
var needManagement = &client.Error{StatusCode: http.StatusForbidden, Message: "Only management keys can perform this operation"}

// parseLimit reads an optional limit in USD typed into field: empty is
// none.
func parseLimit(field, s string) (*float64, error) {
	s = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), "$"))
	if s == "" {
		return nil, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) {
		return nil, badField{field: field, msg: "The limit must be an amount in US dollars, such as 25 or 12.50: correct the limit and send the form again."}
	}
	return &f, nil
}

// createKey makes a standard key and shows its secret on this answer only.
func (c *Console) createKey(v *visit) error {
	f := v.r.PostForm
	back := withQuery("/console/keys", url.Values{"workspace": {v.r.URL.Query().Get("workspace")}})
	k := client.KeyCreate{Name: strings.TrimSpace(f.Get("name")), Workspace: f.Get("workspace_id"), LimitReset: f.Get("limit_reset")}
	limit, err := parseLimit("limit", f.Get("limit"))
	if err != nil {
		return v.retry("new-key", back, err, c.keys)
	}
	k.Limit = limit
	if d := strings.TrimSpace(f.Get("expires_in_days")); d != "" {
		days, err := strconv.Atoi(d)
		if err != nil || days < 1 || days > maxExpiryDays {
			return v.retry("new-key", back, badField{field: "expires_in_days",
				msg: "The expiry must be a whole number of days from 1 to " + strconv.Itoa(maxExpiryDays) + ", or empty for none: correct it and send the form again."}, c.keys)
		}
		t := time.Now().UTC().Add(time.Duration(days) * 24 * time.Hour).Truncate(time.Second)
		k.ExpiresAt = &t
	}
	created, err := v.api.CreateKey(v.ctx(), k)
	if err != nil {
		return v.retry("new-key", back, err, c.keys)
	}
	return c.showKeys(v, http.StatusCreated, created)
}

// maxExpiryDays bounds a key's expiry in days (about 100 years), so the
// date stays one the API reads.
const maxExpiryDays = 36500

// changeKey disables, enables, deletes or sets the limit of a key.
func (c *Console) changeKey(v *visit) error {
	hash := v.r.PathValue("hash")
	back := withQuery("/console/keys", url.Values{"workspace": {v.r.URL.Query().Get("workspace")}})
	var u client.KeyUpdate
	var ok string
	switch v.r.PathValue("change") {
	case "disable":
		u.Disabled, ok = client.Set(true), "Key disabled: it authenticates nothing until enabled again."
	case "enable":
		u.Disabled, ok = client.Set(false), "Key enabled."
	case "delete":
		return v.done(back, "Key deleted.", v.api.DeleteKey(v.ctx(), hash))
	case "limit":
		limit, err := parseLimit("limit", v.r.PostForm.Get("limit"))
		if err != nil {
			return v.retry("limit-"+hash, back, err, c.keys)
		}
		if limit == nil {
			u.Limit, u.LimitReset, ok = client.Null[float64](), client.Null[string](), "Limit removed."
		} else {
			u.Limit, ok = client.Set(*limit), "Limit set."
			if r := v.r.PostForm.Get("limit_reset"); r != "" {
				u.LimitReset = client.Set(r)
			} else {
				u.LimitReset = client.Null[string]()
			}
		}
	default:
		c.notFound(v.w, v.r)
		return nil
	}
	_, err := v.api.UpdateKey(v.ctx(), hash, u)
	if err != nil && v.r.PathValue("change") == "limit" {
		return v.retry("limit-"+hash, back, err, c.keys)
	}
	return v.done(back, ok, err)
}

// usageData is the signed-in key's spend per day, or why it is missing.
type usageData struct {
	Chart     *dayChart
	ChartNote string
}

// usage shows the signed-in key's own spending and limit: what a standard
// key may see of usage.
func (c *Console) usage(v *visit) error {
	var d usageData
	var err error
	if d.Chart, d.ChartNote, err = v.chartOf("key-chart", chartTitle("this key"), client.DailyQuery{KeyHash: v.me.Hash}); err != nil {
		return err
	}
	return v.show("usage", "Your key", "usage", d)
}
