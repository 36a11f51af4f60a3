package ui

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"wharf/internal/persistence"
)

const (
	// messagesPageSize is the number of rows on one page of the message list unless the
	// operator picks another of messagesPageSizes.
	messagesPageSize = 50
	// maxMessageQuery bounds the q filter, in characters, as the REST list does.
	maxMessageQuery = 200
	// filterDate is how the date range is typed (an HTML date input).
	filterDate = "2006-01-02"
)

// messagesPageSizes are the page sizes the list offers.
var messagesPageSizes = []int{25, 50, 100, 200}

// messageFilterForm is the list's filter form as typed, and why a field was refused.
type messageFilterForm struct {
	Status, From, To, Source, Q string
	Partner, Direction          string
	// Ref is a protocol identity (the AS2 Message-ID), found through the modules.
	Ref string
	// Since and Until are days (UTC), both included.
	Since, Until string
	Size         int
	Offset       int
	Errors       map[string]string
}

// parseMessageFilter reads the list's filters with the domain parsers, so the page admits
// exactly what the REST list admits; unknown parameters are ignored, as a browser adds none.
func parseMessageFilter(q url.Values) (messageFilterForm, persistence.MessageFilter) {
	form := messageFilterForm{Status: q.Get("status"), From: q.Get("from"), To: q.Get("to"),
		Source: q.Get("source"), Q: q.Get("q"), Partner: q.Get("partner"), Direction: q.Get("direction"),
		Ref:   q.Get("ref"),
		Since: q.Get("since"), Until: q.Get("until"), Size: messagesPageSize, Errors: map[string]string{}}
	f := persistence.MessageFilter{Q: form.Q}
	var err error
	if form.Status != "" {
		if f.Status, err = persistence.ParseMessageStatus(form.Status); err != nil {
			form.Errors["status"] = "Choose a status from the list."
		}
	}
	for _, p := range []struct {
		name, value string
		dst         *persistence.PartyName
	}{{"from", form.From, &f.From}, {"to", form.To, &f.To}, {"partner", form.Partner, &f.Partner}} {
		if p.value == "" {
			continue
		}
		if *p.dst, err = persistence.ParsePartyName(p.value); err != nil {
			form.Errors[p.name] = "A party name is lower case letters, digits, - and _."
		}
	}
	if form.Direction != "" {
		if f.Direction, err = persistence.ParseDirection(form.Direction); err != nil {
			form.Errors["direction"] = "Choose inbound or outbound."
		}
	}
	if form.Source != "" {
		if f.Source, err = persistence.ParseInstanceName(form.Source); err != nil {
			form.Errors["source"] = "An instance name is lower case letters, digits, - and _."
		}
	}
	if !utf8.ValidString(form.Q) || utf8.RuneCountInString(form.Q) > maxMessageQuery {
		form.Errors["q"] = fmt.Sprintf("Search text is at most %d characters.", maxMessageQuery)
	}
	if !utf8.ValidString(form.Ref) || utf8.RuneCountInString(form.Ref) > maxMessageQuery {
		form.Errors["ref"] = fmt.Sprintf("A Message-ID is at most %d characters.", maxMessageQuery)
	}
	if form.Since != "" {
		if f.Since, err = time.Parse(filterDate, form.Since); err != nil {
			form.Errors["since"] = "Pick a day, such as 2026-01-31."
		}
	}
	if form.Until != "" {
		// The last day is included: the range ends where the next day begins.
		if day, err := time.Parse(filterDate, form.Until); err != nil {
			form.Errors["until"] = "Pick a day, such as 2026-01-31."
		} else {
			f.Until = day.AddDate(0, 0, 1)
		}
	}
	if form.Errors["since"] == "" && form.Errors["until"] == "" && !f.Since.IsZero() && !f.Until.IsZero() && !f.Until.After(f.Since) {
		form.Errors["until"] = "The last day is the first day or later."
	}
	if v := q.Get("size"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || !slices.Contains(messagesPageSizes, n) {
			form.Errors["size"] = "Choose a page size from the list."
		} else {
			form.Size = n
		}
	}
	if v := q.Get("offset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			form.Errors["offset"] = "The page offset is a whole number, 0 or more."
		} else {
			form.Offset = n
		}
	}
	f.Limit, f.Offset = form.Size, form.Offset
	return form, f
}

// query is the filters as URL parameters, at offset; empty filters and the default page
// size are left out so the links stay short.
func (form messageFilterForm) query(offset int) url.Values {
	v := url.Values{}
	for _, p := range []struct{ name, value string }{{"status", form.Status}, {"from", form.From},
		{"to", form.To}, {"partner", form.Partner}, {"direction", form.Direction}, {"source", form.Source},
		{"since", form.Since}, {"until", form.Until}, {"q", form.Q}, {"ref", form.Ref}} {
		if p.value != "" {
			v.Set(p.name, p.value)
		}
	}
	if form.Size != 0 && form.Size != messagesPageSize {
		v.Set("size", strconv.Itoa(form.Size))
	}
	if offset > 0 {
		v.Set("offset", strconv.Itoa(offset))
	}
	return v
}

// url is the list page with these filters at offset.
func (form messageFilterForm) url(offset int) string {
	return withQuery("/ui/messages", form.query(offset))
}

// CSVURL is the export of the whole filtered list (every page).
func (form messageFilterForm) CSVURL() string {
	v := form.query(0)
	v.Del("size")
	return withQuery("/ui/messages.csv", v)
}

func withQuery(path string, v url.Values) string {
	if len(v) == 0 {
		return path
	}
	return path + "?" + v.Encode()
}
