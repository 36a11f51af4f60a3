package ui

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"

	"wharf/internal/persistence"
	"wharf/internal/retry"
)

// retryEditor is a retry policy as a form shows it: the default schedule and a compact
// table with one row per error class. The inputs are named by the policy's JSON path
// under Prefix ("retry.rules.http_5xx.base"), as the plugin forms name config fields, so
// one template draws the policy of a target instance and a route's override.
type retryEditor struct {
	Prefix  string
	Default retryRow
	Rows    []retryRow
	// Intro says what the policy applies to and what empty fields mean.
	Intro string
}

// retryRow is the schedule of the policy's default (Class "") or of one class's rule.
type retryRow struct {
	Class, Label                                string
	Never, Strategy, Base, MaxDelay, MaxRetries retryCell
	Jitter                                      retryCell
}

// retryCell is one input of the table; Label names it for assistive technology, since
// the table's headers name it for the eye.
type retryCell struct {
	Name, ID, Label, Value, Error string
	Checked                       bool
}

// retryColumns label the table's columns for people, by field.
var retryColumns = map[string]string{"never": "Never retry", "strategy": "Strategy", "base": "First delay",
	"max_delay": "Longest delay", "max_retries": "Retries", "jitter": "Jitter"}

// retryFields are the fields of a schedule, in the order of the table's columns.
var retryFields = []string{"strategy", "base", "max_delay", "max_retries", "jitter"}

// newRetryEditor fills the editor from form values and errors keyed by field name.
func newRetryEditor(prefix, intro string, values, errs map[string]string) *retryEditor {
	row := func(p, class, label string) retryRow {
		cell := func(field string) retryCell {
			name := p + field
			c := retryCell{Name: name, ID: "cfg-" + strings.ReplaceAll(name, ".", "-"),
				Label: retryColumns[field] + ": " + label, Value: values[name], Error: errs[name]}
			c.Checked = c.Value == "true"
			return c
		}
		return retryRow{Class: class, Label: label, Never: cell("never"), Strategy: cell("strategy"),
			Base: cell("base"), MaxDelay: cell("max_delay"), MaxRetries: cell("max_retries"), Jitter: cell("jitter")}
	}
	e := &retryEditor{Prefix: prefix, Intro: intro, Default: row(prefix+".", "", "Default")}
	for _, c := range retry.AllClasses {
		e.Rows = append(e.Rows, row(prefix+".rules."+string(c)+".", string(c), c.Label()))
	}
	return e
}

// isRetryField reports whether a config field belongs to the retry editor under prefix.
func isRetryField(prefix, name string) bool { return strings.HasPrefix(name, prefix+".") }

// retryFormValues reads the editor's inputs of a submitted form, by field name.
func retryFormValues(prefix string, form url.Values) map[string]string {
	out := map[string]string{}
	add := func(p string, never bool) {
		for _, f := range retryFields {
			out[p+f] = form.Get(p + f)
		}
		if never {
			out[p+"never"] = strconv.FormatBool(form.Get(p+"never") == "true")
		}
	}
	add(prefix+".", false)
	for _, c := range retry.AllClasses {
		add(prefix+".rules."+string(c)+".", true)
	}
	return out
}

// retryOverride reads a route's retry override from a submitted form: nil when every
// input is empty (the target's policy), else the policy decoded by the rules REST uses,
// whose refusals name the field.
func retryOverride(prefix string, form url.Values) (*retry.Policy, error) {
	obj := map[string]any{}
	for name, v := range retryFormValues(prefix, form) {
		v = strings.TrimSpace(v)
		if v == "" || v == "false" {
			continue
		}
		path := strings.Split(strings.TrimPrefix(name, prefix+"."), ".")
		var val any = v
		switch path[len(path)-1] {
		case "never":
			val = true
		case "max_retries", "jitter":
			if _, err := strconv.ParseFloat(v, 64); err == nil && json.Valid([]byte(v)) {
				val = json.Number(v)
			}
		}
		setPath(obj, path, val)
	}
	if len(obj) == 0 {
		return nil, nil
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		// Every value above is a string, a number or true.
		panic(err)
	}
	return persistence.DecodeRetry(prefix, raw)
}

// policyValues are a stored policy's form values, by field name.
func policyValues(prefix string, p *retry.Policy) map[string]string {
	out := map[string]string{}
	if p == nil {
		return out
	}
	raw, err := json.Marshal(map[string]any{prefix: p})
	if err != nil {
		return out
	}
	var obj map[string]any
	if json.Unmarshal(raw, &obj) != nil {
		return out
	}
	var walk func(string, any)
	walk = func(name string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(strings.TrimPrefix(name+"."+k, "."), e)
			}
		case bool:
			out[name] = strconv.FormatBool(x)
		case float64:
			out[name] = strconv.FormatFloat(x, 'g', -1, 64)
		case string:
			out[name] = x
		}
	}
	walk("", obj)
	return out
}

// targetRetryIntro heads a target instance's retry policy in its form.
const targetRetryIntro = "How this target tries a failed delivery again. A route can override the policy for the messages it dispatches."

// splitRetryFields takes a target's retry policy out of its form fields into the editor's
// table; a config without one keeps every field and gets no editor.
func splitRetryFields(fields []pluginField, values, errs map[string]string) ([]pluginField, *retryEditor) {
	var rest []pluginField
	found := false
	for _, f := range fields {
		if isRetryField("retry", f.Name) {
			found = true
			continue
		}
		rest = append(rest, f)
	}
	if !found {
		return fields, nil
	}
	return rest, newRetryEditor("retry", targetRetryIntro, values, errs)
}

// setRetryRules leaves out of an instance's details the rule fields it does not set, so
// the page lists the rules the policy has rather than every empty cell of the table.
func setRetryRules(fields []pluginField) []pluginField {
	var out []pluginField
	for _, f := range fields {
		if isRetryField("retry.rules", f.Name) && (f.Value == "" || f.Value == "false") {
			continue
		}
		out = append(out, f)
	}
	return out
}
