package ui

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"wharf/internal/persistence"
	"wharf/internal/records"
	"wharf/internal/ui/session"
)

// The dead letters: every failed and parked delivery, filtered like the REST list, and
// the bulk actions on them. The list's buttons lead to a confirmation page (no script
// needed) that names how many deliveries the action will take and carries exactly
// their ids; only its POST acts.

var _ = registerPages([]string{"dead_letters", "dead_letters_confirm", "dead_letters_done"}, (*Server).deadLetterRoutes)

// DeadLetterActions applies an operator's bulk action and wakes the targets concerned.
type DeadLetterActions interface {
	ActOnDeliveries(ctx context.Context, action persistence.DeliveryAction, ids []int64, actor string) ([]persistence.DeliveryActionResult, error)
}

func (s *Server) deadLetterRoutes() []pageRoute {
	return []pageRoute{
		{"GET /ui/dead-letters", http.HandlerFunc(s.deadLettersPage)},
		{"GET /ui/dead-letters/confirm", http.HandlerFunc(s.confirmDeadLetters)},
		{"POST /ui/dead-letters/{action}", http.HandlerFunc(s.actOnDeadLetters)},
	}
}

const deadLettersPageSize = 50

// deadLetterForm is the filter form as typed and why a field was refused.
type deadLetterForm struct {
	Values url.Values // the filters given, and only those
	Offset int
	Errors map[string]string
}

// Get is a filter's value as typed, for the form.
func (f deadLetterForm) Get(name string) string { return f.Values.Get(name) }

// parseDeadLetterForm reads the filters with the rule REST uses.
func (s *Server) parseDeadLetterForm(q url.Values) (deadLetterForm, persistence.DeadLetterFilter) {
	form := deadLetterForm{Values: url.Values{}, Errors: map[string]string{}}
	for _, name := range records.DeadLetterParams {
		if v := strings.TrimSpace(q.Get(name)); v != "" {
			form.Values.Set(name, v)
		}
	}
	f, err := records.ParseDeadLetterFilter(form.Values, s.now())
	form.Errors = fieldErrors(err)
	form.Offset = pageOffset(q, form.Errors)
	f.Limit, f.Offset = deadLettersPageSize, form.Offset
	return form, f
}

// url is the list with these filters at offset.
func (f deadLetterForm) url(offset int) string {
	v := url.Values{}
	for k, x := range f.Values {
		v[k] = x
	}
	if offset > 0 {
		v.Set("offset", strconv.Itoa(offset))
	}
	if len(v) == 0 {
		return "/ui/dead-letters"
	}
	return "/ui/dead-letters?" + v.Encode()
}

type deadLettersData struct {
	Filter  deadLetterForm
	States  []persistence.DeliveryState
	Actions []persistence.DeliveryAction
	Rows    []deadLetterRow
	Pager
	// CanAct is false when the gateway offers no bulk actions; the buttons are hidden.
	CanAct bool
	Max    int
}

// deadLettersPage lists the dead letters oldest first; refused filters answer 400 with
// the form and its errors and no rows.
func (s *Server) deadLettersPage(w http.ResponseWriter, r *http.Request) {
	form, f := s.parseDeadLetterForm(r.URL.Query())
	d := deadLettersData{Filter: form, States: persistence.DeadLetterStates, Actions: persistence.AllDeliveryActions,
		CanAct: s.deadLetters != nil, Max: persistence.MaxBulkDeliveries}
	s.renderList(w, r, "dead_letters", "Dead letters", &d, len(form.Errors) > 0, func() error {
		rows, total, err := s.store.ListDeadLetters(r.Context(), f)
		for _, x := range rows {
			d.Rows = append(d.Rows, deadLetterRow{DeadLetter: x, Age: formatAge(x.AgeSeconds)})
		}
		d.Pager = newPager(form.Offset, len(rows), total, deadLettersPageSize, form.url)
		return err
	})
}

// deadLetterRow is a dead letter as the list shows it.
type deadLetterRow struct {
	persistence.DeadLetter
	Age string
}

// formatAge says an age in its largest whole unit: 45s, 12m, 5h, 3d.
func formatAge(sec int64) string {
	switch {
	case sec < 60:
		return fmt.Sprintf("%ds", max(sec, 0))
	case sec < 3600:
		return fmt.Sprintf("%dm", sec/60)
	case sec < 86400:
		return fmt.Sprintf("%dh", sec/3600)
	}
	return fmt.Sprintf("%dd", sec/86400)
}

// deadLetterSelection is what a bulk action would take: the deliveries chosen (by id, or
// every one the filters match) that are in a state the action applies to.
type deadLetterSelection struct {
	Action   persistence.DeliveryAction
	IDs      []int64
	Selected int // how many were chosen
	// Matched is how many the filters match when the choice was "all"; past Max the
	// action is not offered.
	Matched, Max int
}

// Verb is the action's button and heading word.
func (sel deadLetterSelection) Verb() string {
	v := string(sel.Action)
	return strings.ToUpper(v[:1]) + v[1:]
}

// Question names exactly how many deliveries the action takes.
func (sel deadLetterSelection) Question() string {
	noun := "deliveries"
	if len(sel.IDs) == 1 {
		noun = "delivery"
	}
	return fmt.Sprintf("%s %d %s?", sel.Verb(), len(sel.IDs), noun)
}

// Heading is the confirmation page's heading.
func (sel deadLetterSelection) Heading() string {
	switch {
	case sel.TooMany():
		return "Too many deliveries"
	case len(sel.IDs) == 0:
		return "Nothing to " + string(sel.Action)
	}
	return sel.Question()
}

// Past is the action's past participle: redelivered, resubmitted, skipped.
func (sel deadLetterSelection) Past() string { return pastOf(sel.Action) }

func pastOf(a persistence.DeliveryAction) string {
	switch a {
	case persistence.ActionResubmit:
		return "resubmitted"
	case persistence.ActionSkip:
		return "skipped"
	}
	return "redelivered"
}

// Left is how many chosen deliveries the action leaves as they are.
func (sel deadLetterSelection) Left() int { return sel.Selected - len(sel.IDs) }

// TooMany reports a choice of "all" past the bound.
func (sel deadLetterSelection) TooMany() bool { return sel.Matched > sel.Max }

// FromStates names the states the action takes.
func (sel deadLetterSelection) FromStates() string {
	var names []string
	for _, st := range sel.Action.From() {
		if slices.Contains(persistence.DeadLetterStates, st) {
			names = append(names, string(st))
		}
	}
	return strings.Join(names, " or ")
}

// selectDeadLetters resolves a bulk form: the action, and either the ids checked or
// (all=1) every dead letter the filters match, narrowed to the states the action takes.
func (s *Server) selectDeadLetters(ctx context.Context, action string, q url.Values) (deadLetterSelection, deadLetterForm, error) {
	sel := deadLetterSelection{Max: persistence.MaxBulkDeliveries}
	var err error
	if sel.Action, err = persistence.ParseDeliveryAction(action); err != nil {
		return sel, deadLetterForm{}, &persistence.FieldError{Field: "action", Message: "choose redeliver, resubmit or skip"}
	}
	form, f := s.parseDeadLetterForm(q)
	if len(form.Errors) > 0 {
		return sel, form, &persistence.FieldError{Field: "filter", Message: "the filters are not valid"}
	}
	f.Offset = 0
	if q.Get("all") == "1" {
		f.Limit = sel.Max
		if !sel.Action.Narrow(&f) {
			return sel, form, nil
		}
	} else {
		if f.IDs, err = deliveryIDs(q["id"]); err != nil {
			return sel, form, err
		}
		f.Limit = len(f.IDs)
	}
	rows, total, err := s.store.ListDeadLetters(ctx, f)
	if err != nil {
		return sel, form, err
	}
	sel.Selected = len(f.IDs)
	if q.Get("all") == "1" {
		sel.Selected, sel.Matched = total, total
		if sel.TooMany() {
			return sel, form, nil
		}
	}
	for _, d := range rows {
		if slices.Contains(sel.Action.From(), d.State) {
			sel.IDs = append(sel.IDs, d.ID)
		}
	}
	return sel, form, nil
}

type deadLetterConfirmData struct {
	Sel       deadLetterSelection
	Back      string
	CSRFToken string
}

// confirmDeadLetters asks before a bulk action, naming how many deliveries it takes.
func (s *Server) confirmDeadLetters(w http.ResponseWriter, r *http.Request) {
	if s.deadLetters == nil {
		http.Error(w, "dead-letter actions are not available", http.StatusServiceUnavailable)
		return
	}
	q := r.URL.Query()
	sel, form, err := s.selectDeadLetters(r.Context(), q.Get("action"), q)
	if err != nil {
		s.refuseSelection(w, r, err)
		return
	}
	d := deadLetterConfirmData{Sel: sel, Back: form.url(0)}
	if sess, ok := session.FromContext(r.Context()); ok {
		d.CSRFToken = sess.CSRFToken
	}
	status := http.StatusOK
	if sel.TooMany() {
		status = http.StatusConflict
	}
	s.render(w, r, status, "dead_letters_confirm", pageData{Title: sel.Heading(), Data: d})
}

// deliveryIDs reads a bulk form's delivery ids, each once, 1 to MaxBulkDeliveries of them.
func deliveryIDs(values []string) ([]int64, error) {
	var ids []int64
	for _, v := range values {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil || id < 1 {
			return nil, &persistence.FieldError{Field: "id", Message: "a delivery id is a positive whole number"}
		}
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	switch {
	case len(ids) == 0:
		return nil, &persistence.FieldError{Field: "id", Message: "select at least one delivery"}
	case len(ids) > persistence.MaxBulkDeliveries:
		return nil, &persistence.FieldError{Field: "id", Message: fmt.Sprintf("select at most %d deliveries", persistence.MaxBulkDeliveries)}
	}
	return ids, nil
}

// refuseSelection answers a bulk form that cannot be acted on.
func (s *Server) refuseSelection(w http.ResponseWriter, r *http.Request, err error) {
	var fe *persistence.FieldError
	if errors.As(err, &fe) {
		http.Error(w, fe.Error(), http.StatusBadRequest)
		return
	}
	s.fail(w, r, err)
}

type deadLetterDoneData struct {
	Past      string
	Requested int
	Done      int
	Refused   []deadLetterRefusal
}

type deadLetterRefusal struct {
	ID     int64
	Reason string
}

// actOnDeadLetters applies a confirmed bulk action to exactly the ids its confirmation
// carried; a POST without its confirmation goes to the confirmation page.
func (s *Server) actOnDeadLetters(w http.ResponseWriter, r *http.Request) {
	if s.deadLetters == nil {
		http.Error(w, "dead-letter actions are not available", http.StatusServiceUnavailable)
		return
	}
	action, err := persistence.ParseDeliveryAction(r.PathValue("action"))
	if err != nil {
		s.notFound(w, r)
		return
	}
	if err := r.ParseForm(); err != nil {
		badForm(w, err)
		return
	}
	ids, err := deliveryIDs(r.PostForm["id"])
	if err != nil {
		s.refuseSelection(w, r, err)
		return
	}
	if !confirmed(r) {
		v := url.Values{"action": {string(action)}, "id": r.PostForm["id"]}
		http.Redirect(w, r, "/ui/dead-letters/confirm?"+v.Encode(), http.StatusSeeOther)
		return
	}
	res, err := s.deadLetters.ActOnDeliveries(r.Context(), action, ids, messageActor(r))
	if err != nil {
		s.refuseSelection(w, r, err)
		return
	}
	d := deadLetterDoneData{Past: pastOf(action), Requested: len(res)}
	for _, x := range res {
		if x.Err == nil {
			d.Done++
			continue
		}
		d.Refused = append(d.Refused, deadLetterRefusal{ID: x.ID, Reason: x.Err.Error()})
	}
	s.render(w, r, http.StatusOK, "dead_letters_done", pageData{Title: "Dead letters", Data: d})
}
