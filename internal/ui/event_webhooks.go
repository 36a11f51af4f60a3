package ui

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"wharf/internal/events"
	"wharf/internal/persistence"
	"wharf/internal/ui/session"
)

var _ = registerPages([]string{"event_webhooks", "event_webhook", "event_webhook_form", "event_webhook_secret"}, (*Server).eventWebhookRoutes)

var _ = registerFlashes(map[string]flash{
	"event-webhook-test-sent": {Kind: "success", Text: "Test event queued; its row in the delivery log shows what came of it."},
	"event-webhook-enabled":   {Kind: "success", Text: "Enabled: the waiting events go out, oldest first."},
	"event-webhook-not-off":   {Kind: "info", Text: "The subscription was not disabled; nothing changed."},
})

// EventWebhooks is the event-webhook module as the UI uses it (its runtime in a build
// with the module).
type EventWebhooks interface {
	List(ctx context.Context) ([]events.Subscription, error)
	// Create saves a subscription from its config (JSON, without a secret) and returns
	// the generated secret, the one time it is shown.
	Create(ctx context.Context, body []byte) (persistence.PluginConfig, string, error)
	Rotate(ctx context.Context, name persistence.InstanceName) (string, time.Time, error)
	Test(ctx context.Context, name persistence.InstanceName) (int64, error)
	Enable(ctx context.Context, name persistence.InstanceName) (bool, error)
	Deliveries(ctx context.Context, name persistence.InstanceName, state events.WebhookState, limit, offset int) ([]events.WebhookDelivery, int, error)
}

// eventWebhookLogPage is the rows on one page of a subscription's delivery log.
const eventWebhookLogPage = 50

func (s *Server) eventWebhookRoutes() []pageRoute {
	return []pageRoute{
		{"GET /ui/event-webhooks", http.HandlerFunc(s.eventWebhooksPage)},
		{"GET /ui/event-webhooks/new", http.HandlerFunc(s.newEventWebhookPage)},
		{"POST /ui/event-webhooks", http.HandlerFunc(s.createEventWebhook)},
		{"GET /ui/event-webhooks/{name}", http.HandlerFunc(s.eventWebhookPage)},
		{"POST /ui/event-webhooks/{name}/test", http.HandlerFunc(s.eventWebhookAction(s.testEventWebhook))},
		{"POST /ui/event-webhooks/{name}/enable", http.HandlerFunc(s.eventWebhookAction(s.enableEventWebhook))},
		{"POST /ui/event-webhooks/{name}/secret", http.HandlerFunc(s.rotateEventWebhook)},
	}
}

// available answers 503 in a build without the module.
func (s *Server) eventWebhooksAvailable(w http.ResponseWriter) bool {
	if s.eventWebhooks == nil {
		http.Error(w, "event webhooks are not available in this build", http.StatusServiceUnavailable)
		return false
	}
	return true
}

func (s *Server) eventWebhooksPage(w http.ResponseWriter, r *http.Request) {
	if !s.eventWebhooksAvailable(w) {
		return
	}
	subs, err := s.eventWebhooks.List(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "event_webhooks", pageData{Title: "Event webhooks", Data: struct {
		Subscriptions []events.Subscription
	}{subs}})
}

// eventWebhookForm is the new subscription form as typed, and why it was refused.
type eventWebhookForm struct {
	Name, URL, Events, Party, DisableAfter string
	Enabled                                bool
	Errors                                 map[string]string
	Types                                  []events.Type
	CSRFField, CSRFToken                   string
}

func (s *Server) newEventWebhookPage(w http.ResponseWriter, r *http.Request) {
	if !s.eventWebhooksAvailable(w) {
		return
	}
	s.renderEventWebhookForm(w, r, http.StatusOK, eventWebhookForm{Events: "*", DisableAfter: "24h", Enabled: true})
}

func (s *Server) renderEventWebhookForm(w http.ResponseWriter, r *http.Request, status int, f eventWebhookForm) {
	f.CSRFField, f.CSRFToken, f.Types = session.CSRFField, sessionCSRFToken(r), events.Types
	s.render(w, r, status, "event_webhook_form", pageData{Title: "New event webhook", Data: f})
}

// createEventWebhook turns the form into the config the REST route takes, so both refuse
// the same input alike, and shows the generated secret once.
func (s *Server) createEventWebhook(w http.ResponseWriter, r *http.Request) {
	if !s.eventWebhooksAvailable(w) {
		return
	}
	if err := r.ParseForm(); err != nil {
		badForm(w, err)
		return
	}
	form := r.PostForm
	f := eventWebhookForm{Name: form.Get("name"), URL: form.Get("url"), Events: form.Get("events"), Party: form.Get("party"),
		DisableAfter: form.Get("disable_after"), Enabled: form.Get("enabled") == "true"}
	cfg := map[string]any{"name": f.Name, "enabled": f.Enabled, "url": f.URL, "events": splitList(f.Events)}
	if f.Party != "" {
		cfg["party"] = f.Party
	}
	if f.DisableAfter != "" {
		cfg["disable_after"] = f.DisableAfter
	}
	body, err := json.Marshal(cfg)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rec, secret, err := s.eventWebhooks.Create(r.Context(), body)
	if errs := fieldErrors(err); err != nil && len(errs) > 0 && errs[""] == "" {
		f.Errors = errs
		s.renderEventWebhookForm(w, r, http.StatusBadRequest, f)
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.renderSecret(w, r, rec.Name, secret, nil)
}

func (s *Server) renderSecret(w http.ResponseWriter, r *http.Request, name persistence.InstanceName, secret string, previousUntil *time.Time) {
	w.Header().Set("Cache-Control", "no-store")
	s.render(w, r, http.StatusOK, "event_webhook_secret", pageData{Title: "Event webhook secret", Data: struct {
		Name          persistence.InstanceName
		Secret        string
		PreviousUntil *time.Time
	}{name, secret, previousUntil}})
}

// splitList reads a comma- or space-separated list.
func splitList(s string) []string {
	out := []string{}
	for _, p := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' }) {
		out = append(out, p)
	}
	return out
}

// eventWebhookPage shows one subscription: its health, its buttons and its delivery log.
func (s *Server) eventWebhookPage(w http.ResponseWriter, r *http.Request) {
	if !s.eventWebhooksAvailable(w) {
		return
	}
	sub, ok := s.findEventWebhook(w, r)
	if !ok {
		return
	}
	errs := map[string]string{}
	offset := pageOffset(r.URL.Query(), errs)
	rows, total, err := s.eventWebhooks.Deliveries(r.Context(), sub.Name, "", eventWebhookLogPage, offset)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	base := "/ui/event-webhooks/" + string(sub.Name)
	pager := newPager(offset, len(rows), total, eventWebhookLogPage, func(o int) string {
		if o == 0 {
			return base
		}
		return base + "?" + url.Values{"offset": {strconv.Itoa(o)}}.Encode()
	})
	s.render(w, r, http.StatusOK, "event_webhook", pageData{Title: string(sub.Name), Data: struct {
		Sub                  events.Subscription
		Rows                 []events.WebhookDelivery
		Pager                Pager
		CSRFField, CSRFToken string
	}{sub, rows, pager, session.CSRFField, sessionCSRFToken(r)}})
}

// findEventWebhook reads the subscription the path names; an unknown one is a 404,
// answered.
func (s *Server) findEventWebhook(w http.ResponseWriter, r *http.Request) (events.Subscription, bool) {
	name, err := persistence.ParseInstanceName(r.PathValue("name"))
	if err != nil {
		s.notFound(w, r)
		return events.Subscription{}, false
	}
	subs, err := s.eventWebhooks.List(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return events.Subscription{}, false
	}
	for _, sub := range subs {
		if sub.Name == name {
			return sub, true
		}
	}
	s.notFound(w, r)
	return events.Subscription{}, false
}

// eventWebhookAction runs a button's action on the subscription the path names and
// returns to its page with the flash the action chose.
func (s *Server) eventWebhookAction(act func(ctx context.Context, name persistence.InstanceName) (string, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !s.eventWebhooksAvailable(w) {
			return
		}
		sub, ok := s.findEventWebhook(w, r)
		if !ok {
			return
		}
		key, err := act(r.Context(), sub.Name)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		setFlash(w, key)
		http.Redirect(w, r, "/ui/event-webhooks/"+string(sub.Name), http.StatusSeeOther)
	}
}

func (s *Server) testEventWebhook(ctx context.Context, name persistence.InstanceName) (string, error) {
	_, err := s.eventWebhooks.Test(ctx, name)
	return "event-webhook-test-sent", err
}

func (s *Server) enableEventWebhook(ctx context.Context, name persistence.InstanceName) (string, error) {
	changed, err := s.eventWebhooks.Enable(ctx, name)
	if !changed {
		return "event-webhook-not-off", err
	}
	return "event-webhook-enabled", err
}

// rotateEventWebhook gives the subscription a new secret and shows it once.
func (s *Server) rotateEventWebhook(w http.ResponseWriter, r *http.Request) {
	if !s.eventWebhooksAvailable(w) {
		return
	}
	sub, ok := s.findEventWebhook(w, r)
	if !ok {
		return
	}
	secret, until, err := s.eventWebhooks.Rotate(r.Context(), sub.Name)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.renderSecret(w, r, sub.Name, secret, &until)
}
