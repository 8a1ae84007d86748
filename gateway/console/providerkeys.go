package console

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/aigateway/gateway/client"
)

type providerKeysData struct {
	Keys       []client.ProviderKey
	Workspaces []workspaceChoice
	Workspace  string
	Providers  []string
}

// providerNames are the providers the gateway speaks.
var providerNames = []string{"openai", "anthropic"}

// maxProviderKeysShown bounds the provider keys one workspace page lists.
const maxProviderKeysShown = 500

func (c *Console) providerKeys(v *visit) error {
	if !v.me.IsManagementKey {
		return needManagement
	}
	ws, choices, err := v.pickWorkspace()
	if err != nil {
		return err
	}
	d := providerKeysData{Workspaces: choices, Workspace: ws, Providers: providerNames}
	for k, err := range v.api.ProviderKeys(v.ctx(), ws) {
		if err != nil {
			return err
		}
		d.Keys = append(d.Keys, k)
		if len(d.Keys) == maxProviderKeysShown {
			break
		}
	}
	return v.show("providerkeys", "Provider keys", "provider-keys", d)
}

func (c *Console) createProviderKey(v *visit) error {
	f := v.r.PostForm
	ws := f.Get("workspace")
	back := withQuery("/console/provider-keys", url.Values{"workspace": {ws}})
	k := client.ProviderKeyCreate{Provider: f.Get("provider"), Secret: strings.TrimSpace(f.Get("key")), Workspace: ws}
	if n := strings.TrimSpace(f.Get("name")); n != "" {
		k.Name = &n
	}
	if o := strings.TrimSpace(f.Get("sort_order")); o != "" {
		n, err := strconv.Atoi(o)
		if err != nil {
			return v.retry("new-provider-key", back, badOrder, c.providerKeys)
		}
		k.SortOrder = n
	}
	if _, err := v.api.CreateProviderKey(v.ctx(), k); err != nil {
		return v.retry("new-provider-key", back, err, c.providerKeys)
	}
	return v.done(back, "Provider key added.", nil)
}

// badOrder refuses an order that is not a whole number.
var badOrder = badField{field: "sort_order", msg: "The order must be a whole number, such as 0 or 10 (lower is tried first): correct it and send the form again."}

// changeProviderKey replaces the secret of, disables, enables, reorders or
// deletes a provider key.
func (c *Console) changeProviderKey(v *visit) error {
	id := v.r.PathValue("id")
	f := v.r.PostForm
	back := withQuery("/console/provider-keys", url.Values{"workspace": {f.Get("workspace")}})
	var u client.ProviderKeyUpdate
	var ok string
	change := v.r.PathValue("change")
	switch change {
	case "replace":
		secret := strings.TrimSpace(f.Get("key"))
		if secret == "" {
			return v.retry("replace-"+id, back, badField{field: "key", msg: "Enter the new key to replace the stored one."}, c.providerKeys)
		}
		u.Secret, ok = client.Set(secret), "Provider key replaced."
	case "disable":
		u.Disabled, ok = client.Set(true), "Provider key disabled."
	case "enable":
		u.Disabled, ok = client.Set(false), "Provider key enabled."
	case "order":
		n, err := strconv.Atoi(strings.TrimSpace(f.Get("sort_order")))
		if err != nil {
			return v.retry("order-"+id, back, badOrder, c.providerKeys)
		}
		u.SortOrder, ok = client.Set(n), "Order saved."
	case "delete":
		return v.done(back, "Provider key deleted.", v.api.DeleteProviderKey(v.ctx(), id))
	default:
		c.notFound(v.w, v.r)
		return nil
	}
	_, err := v.api.UpdateProviderKey(v.ctx(), id, u)
	if err != nil && (change == "replace" || change == "order") {
		return v.retry(change+"-"+id, back, err, c.providerKeys)
	}
	return v.done(back, ok, err)
}
