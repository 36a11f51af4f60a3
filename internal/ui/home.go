package ui

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"wharf/internal/alert"
	"wharf/internal/persistence"
	"wharf/internal/ui/session"
)

var _ = registerPages(nil, (*Server).dashboardRoutes)

func (s *Server) dashboardRoutes() []pageRoute {
	return []pageRoute{{"GET /ui/live/dashboard", http.HandlerFunc(s.dashboardLive)}}
}

const (
	// dashboardRecent is the number of messages in the dashboard's feed.
	dashboardRecent = 10
	// dashboardEvery is the least time between two live renders of the dashboard, whose
	// counts read every message.
	dashboardEvery = 2 * time.Second
)

// problemStatuses are the statuses an operator has to look at; the dashboard links each
// to the message list filtered by it. A retrying message is one: its target is failing,
// even if a later attempt may still go through.
var problemStatuses = []persistence.MessageStatus{persistence.StatusError, persistence.StatusStalled,
	persistence.StatusRetrying, persistence.StatusHeld, persistence.StatusNotRouted, persistence.StatusRefused}

// statusRow is one status's line of the dashboard's counts.
type statusRow struct {
	Status         persistence.MessageStatus
	Label          string
	Now, Day, Week int
	URL            string // the message list filtered by the status
	Problem        bool
}

type dashboardCounts struct {
	Rows           []statusRow
	Now, Day, Week int
	Problems       []statusRow
	ProblemsNow    int
	// Parked counts the deliveries waiting behind blocked ordered sessions, and
	// BlockedSessions those sessions (the Sessions page).
	Parked, BlockedSessions int
	// Paused are the paused partners (partner_pause.go).
	Paused []persistence.PartnerPause
}

// dashboardView is the live part of the dashboard, rendered whole on each change.
type dashboardView struct {
	Counts dashboardCounts
	// Days are the messages of each of the last days, by day of creation (home_days.go).
	Days   []dayRow
	Chart  chart
	Recent []persistence.Message
	// Alerts are the newest critical alerts whose cause lasts (a resolved alert leaves
	// the card); AlertsShown is false in a build without the notifier module, which
	// hides the card.
	Alerts      []alert.Alert
	AlertsShown bool
	// ByPartner are the partners with open problems, most first.
	ByPartner []partnerProblems
	// Setup is the first-run checklist; empty once every step is done.
	Setup []setupStep
	// CSRFField and CSRFToken are for the Resume buttons of paused partners.
	CSRFField, CSRFToken string
}

func statusLabel(st persistence.MessageStatus) string {
	label := strings.ReplaceAll(string(st), "_", " ")
	return strings.ToUpper(label[:1]) + label[1:]
}

// home is the dashboard: counts by status now and over the last day and week, messages
// per hour over the last day, the newest messages and the problems, kept live.
func (s *Server) home(w http.ResponseWriter, r *http.Request) {
	sess, _ := session.FromContext(r.Context())
	v, err := s.dashboard(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v.CSRFField, v.CSRFToken = session.CSRFField, sessionCSRFToken(r)
	s.render(w, r, http.StatusOK, "home", pageData{Title: "Dashboard", Session: sess,
		Data: struct {
			Name persistence.UserName
			View dashboardView
		}{sess.User.Name, v}})
}

// dashboard reads what the dashboard shows: one query for the counts, one for the chart
// and one for the feed.
func (s *Server) dashboard(ctx context.Context) (dashboardView, error) {
	now := s.now().UTC()
	counts, err := s.store.CountMessagesByStatus(ctx, now.Add(-24*time.Hour), now.Add(-7*24*time.Hour))
	if err != nil {
		return dashboardView{}, err
	}
	byStatus := make(map[persistence.MessageStatus]persistence.StatusCount, len(counts))
	for _, c := range counts {
		byStatus[c.Status] = c
	}
	var v dashboardView
	for _, st := range persistence.AllMessageStatuses {
		row := statusRow{Status: st, Label: statusLabel(st), URL: "/ui/messages?status=" + string(st)}
		if c, ok := byStatus[st]; ok {
			row.Now, row.Day, row.Week = c.Total, c.Since[0], c.Since[1]
		}
		for _, p := range problemStatuses {
			if p == st {
				row.Problem = true
				v.Counts.Problems = append(v.Counts.Problems, row)
				v.Counts.ProblemsNow += row.Now
			}
		}
		v.Counts.Rows = append(v.Counts.Rows, row)
		v.Counts.Now += row.Now
		v.Counts.Day += row.Day
		v.Counts.Week += row.Week
	}
	if err := s.countParked(ctx, &v.Counts); err != nil {
		return dashboardView{}, err
	}
	if err := s.pausedPartners(ctx, &v.Counts); err != nil {
		return dashboardView{}, err
	}
	first := now.Truncate(time.Hour).Add(-(chartHours - 1) * time.Hour)
	hours, err := s.store.CountMessagesPerHour(ctx, first)
	if err != nil {
		return dashboardView{}, err
	}
	v.Chart = hourlyChart(first, hours)
	if v.Days, err = s.dailyRows(ctx, now); err != nil {
		return dashboardView{}, err
	}
	if v.Recent, _, err = s.store.ListMessages(ctx, persistence.MessageFilter{
		ListOptions: persistence.ListOptions{Limit: dashboardRecent}}); err != nil {
		return dashboardView{}, fmt.Errorf("recent messages: %w", err)
	}
	if v.Alerts, v.AlertsShown, err = s.criticalAlerts(ctx); err != nil {
		return dashboardView{}, fmt.Errorf("recent critical alerts: %w", err)
	}
	if v.ByPartner, err = s.problemsByPartner(ctx, now); err != nil {
		return dashboardView{}, err
	}
	if v.Setup, err = s.setupChecklist(ctx); err != nil {
		return dashboardView{}, err
	}
	return v, nil
}

// dashboardLive streams the dashboard's live part whenever a message or the notification
// log changes (a new alert comes with new rows of the log).
func (s *Server) dashboardLive(w http.ResponseWriter, r *http.Request) {
	s.serveLive(w, r, liveStream{messages: true, notifications: true, every: dashboardEvery,
		render: func(ctx context.Context, c changes) ([]sseEvent, error) {
			if !c.anyMessage() && !c.notifications {
				return nil, nil
			}
			v, err := s.dashboard(ctx)
			if err != nil {
				return nil, err
			}
			v.CSRFField, v.CSRFToken = session.CSRFField, sessionCSRFToken(r)
			html, err := s.fragment("home", "dashboard-live", v)
			if err != nil {
				return nil, err
			}
			return []sseEvent{{Name: "dashboard", Data: html}}, nil
		}})
}
