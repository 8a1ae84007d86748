package console

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/aigateway/gateway/client"
)

// draft is a form shown again after a refusal: what the person typed, so
// nothing is lost, and the field at fault. The zero draft is no form.
type draft struct {
	// Name says which form of the page it is (a page may have several:
	// the new key's, each key's limit).
	Name   string
	Values url.Values
	// Field is the name of the input at fault, "" when none is.
	Field string
}

// For reports whether form is the form shown again.
func (d draft) For(form string) bool { return d.Name != "" && d.Name == form }

// Value is what was typed into field of form, "" for another form.
func (d draft) Value(form, field string) string {
	if !d.For(form) {
		return ""
	}
	return d.Values.Get(field)
}

// Or is what was typed into field of form when form is the one shown
// again, else stored: a form that edits a thing starts with its values.
func (d draft) Or(form, field, stored string) string {
	if !d.For(form) {
		return stored
	}
	return d.Values.Get(field)
}

// Checked is whether the checkbox field of form was ticked when form is
// the one shown again, else stored.
func (d draft) Checked(form, field string, stored bool) bool {
	if !d.For(form) {
		return stored
	}
	return d.Values.Get(field) != ""
}

// Invalid reports whether field of form is the one at fault.
func (d draft) Invalid(form, field string) bool { return d.For(form) && d.Field == field }

// secretFields are inputs whose value is never written back into a page:
// a provider key goes to the API and nowhere else.
var secretFields = []string{"key", "csrf"}

// badField is a refusal of a value, in the console's words, and the input
// it was typed into: one the console cannot even send to the API (status
// 0: 400), or one the API refused with too few words.
type badField struct {
	field, msg string
	status     int
}

func (e badField) Error() string { return e.msg }

// retry answers a refused form by showing its page again (show, as for a
// GET of back) with the refusal, naming the field at fault and saying
// what to do, and with every value typed but secrets. It does not
// redirect: a redirect would lose what was typed. Anything but a refusal
// (a 401 included, which ends the session) is returned for the page's
// error handling.
func (v *visit) retry(form, back string, err error, show pageFunc) error {
	r, ok := refusalOf(err)
	if !ok {
		return err
	}
	return v.showRefusal(form, back, r, show)
}

// showRefusal shows the page of back, as show draws it, with r.
func (v *visit) showRefusal(form, back string, r refusal, show pageFunc) error {
	values := url.Values{}
	for name, vs := range v.r.PostForm {
		if !slices.Contains(secretFields, name) {
			values[name] = vs
		}
	}
	// The page is drawn for back's query (the workspace shown), whatever
	// the form's action was.
	if u, err := url.Parse(back); err == nil {
		r2 := v.r.WithContext(v.r.Context())
		u2 := *v.r.URL
		u2.RawQuery = u.RawQuery
		r2.URL = &u2
		v.r = r2
	}
	v.refusal = &flash{Kind: "error", Text: r.message, Links: r.links}
	v.form = draft{Name: form, Values: values, Field: r.field}
	v.status = r.status
	return show(v)
}

// refusal is why a form was refused, in words.
type refusal struct {
	status  int
	message string
	// field is the form's input at fault, if one is.
	field string
	links []flashLink
}

// refusalOf reads err as a refusal of the form: the API's (but a 401) or
// the console's own. ok is false for anything else.
func refusalOf(err error) (r refusal, ok bool) {
	var apiErr *client.Error
	var bf badField
	var bi badInput
	switch {
	case errors.As(err, &apiErr) && apiErr.StatusCode != http.StatusUnauthorized:
		return refusal{status: apiErr.StatusCode, message: apiMessage(apiErr), field: formField(firstField(apiErr))}, true
	case errors.As(err, &bf):
		return refusal{status: cmp.Or(bf.status, http.StatusBadRequest), message: bf.msg, field: bf.field}, true
	case errors.As(err, &bi):
		return refusal{status: http.StatusBadRequest, message: bi.msg}, true
	}
	return refusal{}, false
}

// fieldsOf is the fields a refusal of the API names, with their problems.
func fieldsOf(e *client.Error) map[string]any {
	fields, _ := e.Metadata["fields"].(map[string]any)
	return fields
}

// firstField is the first field (by name) a refusal of the API names.
func firstField(e *client.Error) string {
	names := slices.Sorted(maps.Keys(fieldsOf(e)))
	if len(names) == 0 {
		return ""
	}
	return names[0]
}

// formField is the console's input for a field of the API.
func formField(apiField string) string {
	switch apiField {
	case "expires_at":
		return "expires_in_days"
	case "lifetime", "monthly", "weekly", "daily":
		// a budget out of order: the limit typed is at fault
		return "limit_usd"
	}
	return apiField
}

// fieldLabels are the words for the API's fields, as the console's forms
// label them.
var fieldLabels = map[string]string{
	"name":                  "name",
	"slug":                  "slug",
	"description":           "description",
	"default_text_model":    "default text model",
	"default_provider_sort": "provider sort",
	"limit":                 "spending limit",
	"limit_reset":           "limit's reset",
	"expires_at":            "expiry",
	"workspace_id":          "workspace",
	"limit_usd":             "limit",
	"provider":              "provider",
	"key":                   "provider key",
	"sort_order":            "order",
}

// fieldSentences writes each field of a refusal and its problem as a
// sentence that names the field ("The slug must be …"), then says what to
// do. A problem that is a sentence of its own ("the daily budget … must be
// less than …") is written as it is.
func fieldSentences(fields map[string]any) string {
	var sentences, labels []string
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		problem := strings.TrimSuffix(fmt.Sprint(fields[name]), ".")
		label, known := fieldLabels[name]
		if !known {
			label = strings.ReplaceAll(name, "_", " ")
		}
		switch {
		case problem == "required":
			sentences = append(sentences, "The "+label+" is required.")
		case strings.HasPrefix(problem, "the "):
			sentences = append(sentences, capitalise(problem)+".")
			continue // it names what to correct itself
		case startsWithVerb(problem):
			sentences = append(sentences, "The "+label+" "+problem+".")
		default:
			sentences = append(sentences, "The "+label+": "+problem+".")
		}
		labels = append(labels, "the "+label)
	}
	if len(sentences) == 0 {
		return ""
	}
	if len(labels) == 0 {
		return strings.Join(sentences, " ") + " Correct it and send the form again."
	}
	return strings.Join(sentences, " ") + " Correct " + joinAnd(labels) + " and send the form again."
}

func startsWithVerb(problem string) bool {
	first, _, _ := strings.Cut(problem, " ")
	switch first {
	case "must", "cannot", "can", "may", "is", "are", "has", "applies":
		return true
	}
	return false
}

func capitalise(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// joinAnd joins words as a sentence does: "a", "a and b", "a, b and c".
func joinAnd(words []string) string {
	if len(words) <= 1 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// plural is "1 key", "2 keys".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
