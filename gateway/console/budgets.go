package console

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/aigateway/gateway/client"
)

// budgetIntervals are the intervals of workspace budgets, widest first as
// the API lists them.
var budgetIntervals = []string{"lifetime", "monthly", "weekly", "daily"}

type budgetsData struct {
	Workspaces  []workspaceChoice
	Workspace   string
	IncludeBYOK bool
	Budgets     []budgetBar
	KeyLimits   []keyBar
	Intervals   []string
	// Chart is the workspace's spend per day; ChartNote says why it is
	// missing when the API refused it.
	Chart     *dayChart
	ChartNote string
}

// budgetBar is one budget with what its workspace's keys spent in the
// current window.
type budgetBar struct {
	Interval string
	Limit    float64
	Spent    float64
}

// keyBar is one key's spending limit with its use in the current window.
type keyBar struct {
	Name, Label, Reset string
	Limit, Spent       float64
	// IncludeBYOK is the key's include_byok_in_limit: whether Spent
	// counts its BYOK usage.
	IncludeBYOK bool
}

// spentIn is what k spent in the current window of interval, its BYOK part
// counted only when includeBYOK (as the API counts toward budgets).
func spentIn(k client.Key, interval string, includeBYOK bool) float64 {
	all, byok := k.Usage, k.BYOKUsage
	switch interval {
	case "daily":
		all, byok = k.UsageDaily, k.BYOKUsageDaily
	case "weekly":
		all, byok = k.UsageWeekly, k.BYOKUsageWeekly
	case "monthly":
		all, byok = k.UsageMonthly, k.BYOKUsageMonthly
	}
	if includeBYOK {
		return all
	}
	return all - byok
}

func (c *Console) budgets(v *visit) error {
	if !v.me.IsManagementKey {
		return needManagement
	}
	ws, choices, err := v.pickWorkspace()
	if err != nil {
		return err
	}
	d := budgetsData{Workspaces: choices, Workspace: ws, Intervals: budgetIntervals}
	if ws == "" {
		return v.show("budgets", "Budgets", "budgets", d)
	}
	budgets, includeBYOK, err := v.api.Budgets(v.ctx(), ws)
	if err != nil {
		return err
	}
	d.IncludeBYOK = includeBYOK
	name := ws
	for _, ch := range choices {
		if ch.Selected {
			name = ch.Name
		}
	}
	if d.Chart, d.ChartNote, err = v.chartOf("ws-chart", chartTitle("workspace “"+name+"”"), client.DailyQuery{Workspace: ws}); err != nil {
		return err
	}
	var keys []client.Key
	for k, err := range v.api.Keys(v.ctx(), client.KeyQuery{IncludeDisabled: true, Workspace: ws}) {
		if err != nil {
			return err
		}
		keys = append(keys, k)
	}
	d.Budgets = budgetBars(budgets, keys, includeBYOK)
	d.KeyLimits = keyLimitBars(keys)
	return v.show("budgets", "Budgets", "budgets", d)
}

// budgetBars is each budget of a workspace with what keys, the
// workspace's, spent in its current window.
func budgetBars(budgets []client.Budget, keys []client.Key, includeBYOK bool) []budgetBar {
	var bars []budgetBar
	for _, b := range budgets {
		interval := cmp.Or(deref(b.ResetInterval), "lifetime")
		bar := budgetBar{Interval: interval, Limit: b.LimitUSD}
		for _, k := range keys {
			bar.Spent += spentIn(k, interval, includeBYOK)
		}
		bars = append(bars, bar)
	}
	return bars
}

// keyLimitBars is the spending limit of each key of keys that has one,
// with its use in the current window.
func keyLimitBars(keys []client.Key) []keyBar {
	var bars []keyBar
	for _, k := range keys {
		if k.Limit == nil {
			continue
		}
		bar := keyBar{Name: k.Name, Label: k.Label, Limit: *k.Limit, Reset: cmp.Or(deref(k.LimitReset), "lifetime"), IncludeBYOK: k.IncludeBYOKInLimit}
		if k.LimitRemaining != nil {
			bar.Spent = max(*k.Limit-*k.LimitRemaining, 0)
		}
		bars = append(bars, bar)
	}
	return bars
}

func (c *Console) setBudget(v *visit) error {
	f := v.r.PostForm
	ws := f.Get("workspace")
	back := withQuery("/console/budgets", url.Values{"workspace": {ws}})
	limit, err := parseLimit("limit_usd", f.Get("limit_usd"))
	if err == nil && (limit == nil || *limit <= 0) {
		err = badField{field: "limit_usd", msg: "A budget needs a limit in US dollars above zero, such as 100 or 12.50: enter one and send the form again."}
	}
	if err != nil {
		return v.retry("budget", back, err, c.budgets)
	}
	includeBYOK := f.Get("include_byok") == "on"
	interval := f.Get("interval")
	_, err = v.api.SetBudget(v.ctx(), ws, interval, *limit, &includeBYOK)
	if err != nil {
		return v.retry("budget", back, v.outOfOrder(err, ws, interval, *limit), c.budgets)
	}
	return v.done(back, "The "+strings.ToLower(interval)+" budget is set.", nil)
}

// outOfOrder words the API's refusal of a budget that breaks the order of
// the intervals (lifetime > monthly > weekly > daily), which names the
// budget it conflicts with: which limit would do, and the other way out.
// Another error is returned as it is.
func (v *visit) outOfOrder(err error, ws, interval string, limit float64) error {
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest {
		return err
	}
	other := firstField(apiErr)
	rank, otherRank := slices.Index(budgetIntervals, interval), slices.Index(budgetIntervals, other)
	if rank < 0 || otherRank < 0 {
		return err
	}
	budgets, _, berr := v.api.Budgets(v.ctx(), ws)
	if berr != nil {
		return err
	}
	var otherLimit float64
	found := false
	for _, b := range budgets {
		if cmp.Or(deref(b.ResetInterval), "lifetime") == other {
			otherLimit, found = b.LimitUSD, true
		}
	}
	if !found {
		return err
	}
	msg := fmt.Sprintf("The %s budget must be less than the %s budget: you entered %s and the %s budget is %s. Enter a %s limit below %s, or raise the %s budget first.",
		interval, other, usd(limit), other, usd(otherLimit), interval, usd(otherLimit), other)
	if otherRank > rank { // the other is narrower: this one must be more
		msg = fmt.Sprintf("The %s budget must be more than the %s budget: you entered %s and the %s budget is %s. Enter a %s limit above %s, or lower the %s budget first.",
			interval, other, usd(limit), other, usd(otherLimit), interval, usd(otherLimit), other)
	}
	return badField{field: "limit_usd", msg: msg}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (c *Console) deleteBudget(v *visit) error {
	ws := v.r.PostForm.Get("workspace")
	back := withQuery("/console/budgets", url.Values{"workspace": {ws}})
	interval := v.r.PathValue("interval")
	return v.done(back, "The "+interval+" budget is removed.", v.api.DeleteBudget(v.ctx(), ws, interval))
}
