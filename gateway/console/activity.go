package console

import (
	"cmp"
	"net/url"

	"github.com/aigateway/gateway/client"
)

type activityData struct {
	Key   *client.Key
	Sheet *sheet
	// Total sums the rows.
	Total totals
}

// keyActivity is what one key spent on, day by day and model by model,
// over the last 30 completed UTC days: one GET /activity?api_key_hash=.
func (c *Console) keyActivity(v *visit) error {
	k, sh, total, err := v.activityOf(v.r.PathValue("hash"))
	if err != nil {
		return err
	}
	d := activityData{Key: k, Sheet: sh, Total: total}
	return v.show("activity", "Activity of “"+k.Name+"”", "keys", d)
}

// keyActivityCSV downloads the rows of keyActivity.
func (c *Console) keyActivityCSV(v *visit) error {
	k, sh, _, err := v.activityOf(v.r.PathValue("hash"))
	if err != nil {
		return err
	}
	if sh.refusal != nil {
		return sh.refusal
	}
	writeCSV(v.w, "key-"+k.Hash+"-activity-"+utcToday(), sh)
	return nil
}

// activityOf reads the key of hash (an unknown or another user's key is
// the API's 404) and its activity as a sheet, with its sum.
func (v *visit) activityOf(hash string) (*client.Key, *sheet, totals, error) {
	var total totals
	if !v.me.IsManagementKey {
		return nil, nil, total, needManagement
	}
	k, err := v.api.GetKey(v.ctx(), hash)
	if err != nil {
		return nil, nil, total, err
	}
	sh := &sheet{ID: "activity", Title: "Activity",
		CSV:    "/console/keys/" + url.PathEscape(k.Hash) + "/activity.csv",
		Covers: "The last 30 completed UTC days (today's spend is counted here from tomorrow), newest day first, then the most spent. Includes BYOK spend.",
		Empty:  "This key spent nothing in the last 30 completed days.",
		Columns: []sheetColumn{{"Day (UTC)", "date", false}, {"Model", "model", false}, {"Provider", "provider_name", false}, {"Endpoint", "endpoint_id", false},
			{"Spend", "spend_usd", true}, {"With provider keys", "byok_usd", true}, {"Requests", "requests", true},
			{"Prompt tokens", "prompt_tokens", true}, {"Completion tokens", "completion_tokens", true}, {"Reasoning tokens", "reasoning_tokens", true}}}
	rows, err := v.api.Activity(v.ctx(), client.ActivityQuery{KeyHash: k.Hash})
	if err != nil {
		e, err := viewRefusal(err)
		if err != nil {
			return nil, nil, total, err
		}
		return k, sh.refuse(e), total, nil
	}
	for _, a := range rows {
		total.add(a)
		sh.Rows = append(sh.Rows, []sheetCell{textCell(a.Date), textCell(cmp.Or(a.Model, "(not reported)")), textCell(a.ProviderName), textCell(a.EndpointID),
			dollarCell(a.Usage), dollarCell(a.BYOKUsage), countCell(a.Requests),
			countCell(a.PromptTokens), countCell(a.CompletionTokens), countCell(a.ReasoningTokens)})
	}
	return k, sh, total, nil
}
