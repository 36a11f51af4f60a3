package ui

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"wharf/internal/alert"
	"wharf/internal/audit"
	"wharf/internal/persistence"
	"wharf/internal/ui/session"
)

var _ = registerPages([]string{"notifications"}, (*Server).notificationRoutes)

var _ = registerFlashes(map[string]flash{
	"notification-test-sent": {Kind: "success",
		Text: "Test notification raised; its row in the log shows what came of it."},
	"notification-test-refused": {Kind: "danger",
		Text: "Test refused: the instance is not an enabled notification-webhook instance."},
	"notification-test-missing": {Kind: "danger", Text: "Test refused: there is no such instance."},
})

const (
	// notificationsPageSize is the number of rows on one page of the notification log.
	notificationsPageSize = 50
	// notificationsEvery is the least time between two live renders of the log.
	notificationsEvery = time.Second
	// dashboardAlerts is the number of critical alerts on the dashboard's card.
	dashboardAlerts = 5
)

func (s *Server) notificationRoutes() []pageRoute {
	return []pageRoute{
		{"GET /ui/notifications", http.HandlerFunc(s.notificationsPage)},
		{"POST /ui/notifications/{instance}/test", http.HandlerFunc(s.notificationTest)},
		{"GET /ui/live/notifications", http.HandlerFunc(s.notificationsLive)},
	}
}

// notificationFilterForm is the log's filter form as typed, and why a field was refused.
type notificationFilterForm struct {
	Instance, State, Code, Severity string
	Offset                          int
	Errors                          map[string]string
}

// parseNotificationFilter reads the log's filters with alert.ParseFilter, so the page
// admits exactly what the REST list admits.
func parseNotificationFilter(q url.Values) (notificationFilterForm, alert.Filter) {
	form := notificationFilterForm{Instance: q.Get("instance"), State: q.Get("state"), Code: q.Get("code"),
		Severity: q.Get("severity"), Errors: map[string]string{}}
	f, err := alert.ParseFilter(q.Get, true)
	for field, msg := range fieldErrors(err) {
		form.Errors[field] = msg
	}
	form.Offset = pageOffset(q, form.Errors)
	f.Limit, f.Offset = notificationsPageSize, form.Offset
	return form, f
}

// fieldErrors maps the persistence.FieldErrors in err (one, or joined) to their fields,
// with the message's first letter capitalised for the page.
func fieldErrors(err error) map[string]string {
	out := map[string]string{}
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		var fe *persistence.FieldError
		if errors.As(err, &fe) {
			if _, dup := out[fe.Field]; !dup && fe.Message != "" {
				out[fe.Field] = strings.ToUpper(fe.Message[:1]) + fe.Message[1:] + "."
			}
			return
		}
		out[""] = "The filters could not be read."
	}
	walk(err)
	return out
}

// url is the log page with these filters at offset, under prefix (/ui or /ui/live).
func (form notificationFilterForm) url(prefix string, offset int) string {
	v := url.Values{}
	for _, p := range []struct{ name, value string }{{"instance", form.Instance}, {"state", form.State},
		{"code", form.Code}, {"severity", form.Severity}} {
		if p.value != "" {
			v.Set(p.name, p.value)
		}
	}
	if offset > 0 {
		v.Set("offset", strconv.Itoa(offset))
	}
	if len(v) == 0 {
		return prefix + "/notifications"
	}
	return prefix + "/notifications?" + v.Encode()
}

// notifierRow is a notifier instance with its test button.
type notifierRow struct {
	Name    persistence.InstanceName
	Enabled bool
}

type notificationsData struct {
	Filter     notificationFilterForm
	States     []alert.NotificationState
	Codes      []alert.CodeInfo
	Severities []alert.Severity
	Notifiers  []notifierRow
	Rows       []alert.Notification
	Pager
	// LiveURL streams this page's rows again as the log changes, with the same filters.
	LiveURL   string
	CSRFField string
	CSRFToken string
}

// notificationsPage shows the notification log, newest first, the notifier instances
// with their test buttons and the filters. Refused filters answer 400 with the form and
// its errors and no rows.
func (s *Server) notificationsPage(w http.ResponseWriter, r *http.Request) {
	if s.notifications == nil {
		http.Error(w, "notifications are not available in this build", http.StatusServiceUnavailable)
		return
	}
	form, f := parseNotificationFilter(r.URL.Query())
	d := notificationsData{Filter: form, States: alert.AllNotificationStates, Codes: alert.Codes,
		Severities: alert.AllSeverities, CSRFField: session.CSRFField, CSRFToken: sessionCSRFToken(r)}
	recs, err := s.store.ListPluginConfigs(r.Context(), persistence.PluginNotificationWebhook)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	for _, rec := range recs {
		d.Notifiers = append(d.Notifiers, notifierRow{Name: rec.Name, Enabled: rec.Enabled})
	}
	s.renderList(w, r, "notifications", "Notifications", &d, len(form.Errors) > 0, func() error { return s.listNotifications(r.Context(), &d, f) })
}

// listNotifications fills d's rows and page links for the filter f of d.Filter.
func (s *Server) listNotifications(ctx context.Context, d *notificationsData, f alert.Filter) error {
	form := d.Filter
	rows, total, err := s.notifications.ListNotifications(ctx, f)
	if err != nil {
		return err
	}
	d.Rows = rows
	d.Pager = newPager(form.Offset, len(rows), total, notificationsPageSize,
		func(offset int) string { return form.url("/ui", offset) })
	d.LiveURL = form.url("/ui/live", form.Offset)
	return nil
}

// notificationsLive streams the log's rows, for the same filters and page as the page,
// each time the notifier announces changed rows.
func (s *Server) notificationsLive(w http.ResponseWriter, r *http.Request) {
	if s.notifications == nil {
		http.Error(w, "notifications are not available in this build", http.StatusServiceUnavailable)
		return
	}
	form, f := parseNotificationFilter(r.URL.Query())
	if len(form.Errors) > 0 {
		http.Error(w, "invalid filters", http.StatusBadRequest)
		return
	}
	s.serveLive(w, r, liveStream{notifications: true, every: notificationsEvery,
		render: func(ctx context.Context, c changes) ([]sseEvent, error) {
			if !c.notifications {
				return nil, nil
			}
			d := notificationsData{Filter: form}
			if err := s.listNotifications(ctx, &d, f); err != nil {
				return nil, err
			}
			html, err := s.fragment("notifications", "notification-results", d)
			if err != nil {
				return nil, err
			}
			return []sseEvent{{Name: "results", Data: html}}, nil
		}})
}

// notificationTest raises a test alert for one notifier instance, as the REST test does,
// and returns to the log filtered by that instance.
func (s *Server) notificationTest(w http.ResponseWriter, r *http.Request) {
	if s.notifications == nil {
		http.Error(w, "notifications are not available in this build", http.StatusServiceUnavailable)
		return
	}
	name, err := persistence.ParseInstanceName(r.PathValue("instance"))
	if err != nil {
		s.notFound(w, r)
		return
	}
	_, err = s.notifications.Test(r.Context(), name, audit.ActorFrom(r.Context()))
	var fe *persistence.FieldError
	switch {
	case errors.Is(err, persistence.ErrNotFound):
		setFlash(w, "notification-test-missing")
	case errors.As(err, &fe):
		setFlash(w, "notification-test-refused")
	case err != nil:
		s.fail(w, r, err)
		return
	default:
		setFlash(w, "notification-test-sent")
	}
	http.Redirect(w, r, notificationFilterForm{Instance: string(name)}.url("/ui", 0), http.StatusSeeOther)
}

// criticalAlerts are the newest unresolved critical alerts for the dashboard's card; ok
// is false when the build has no notifier module.
func (s *Server) criticalAlerts(ctx context.Context) (alerts []alert.Alert, ok bool, err error) {
	if s.notifications == nil {
		return nil, false, nil
	}
	alerts, _, err = s.notifications.ListAlerts(ctx, alert.Filter{Severity: alert.SeverityCritical, Unresolved: true, Limit: dashboardAlerts})
	if err != nil {
		return nil, true, err
	}
	return alerts, true, nil
}
