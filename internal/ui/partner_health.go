package ui

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"wharf/internal/alert"
	"wharf/internal/persistence"
)

// certificateWarning is how long before its expiry a partner's certificate turns its
// health badge to "certificate expiring".
const certificateWarning = 30 * 24 * time.Hour

// partnerHealth is a partner's status at a glance: Tone is a badge class, Label its text.
type partnerHealth struct {
	persistence.PartnerActivity
	Tone, Label string
}

// healthOf judges a partner's activity as of now: open problems first, then a certificate
// near or past its expiry, then a partner nothing went to or came from yet.
func healthOf(a persistence.PartnerActivity, now time.Time, zone *time.Location) partnerHealth {
	h := partnerHealth{PartnerActivity: a, Tone: "success", Label: "ok"}
	switch {
	case a.Pause != nil:
		h.Tone, h.Label = "danger", "paused, "+plural(a.Pause.Waiting, "delivery waits", "deliveries wait")
	case a.Problems > 0:
		h.Tone, h.Label = "danger", plural(a.Problems, "problem", "problems")
	case !a.CertificateExpiry.IsZero() && !a.CertificateExpiry.After(now):
		h.Tone, h.Label = "danger", "certificate expired "+displayDay(a.CertificateExpiry, zone)
	case !a.CertificateExpiry.IsZero() && a.CertificateExpiry.Sub(now) < certificateWarning:
		h.Tone, h.Label = "warning", "certificate expiring "+displayDay(a.CertificateExpiry, zone)
	case !a.Ever:
		h.Tone, h.Label = "neutral", "no traffic yet"
	}
	return h
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// rate is n of total as text: "2 of 40 (5%)", or "none" without traffic.
func rate(n, total int) string {
	if total == 0 {
		return "no messages"
	}
	return fmt.Sprintf("%d of %d (%d%%)", n, total, (n*100+total/2)/total)
}

// partnerOverview is the partner-centred part of a partner's page.
type partnerOverview struct {
	Health       partnerHealth
	Rate24h      string
	Rate7d       string
	Recent       []messageRow
	RecentURL    string
	Problems     []persistence.Message
	ProblemTotal int
	Certificates []persistence.Certificate
	// Alerts are the open alerts about the partner; AlertsShown is false in a build
	// without the notifier module.
	Alerts      []alert.Alert
	AlertsShown bool
	Now         time.Time
	// Pause is the pause card (partner_pause.go).
	Pause *pauseCard
}

// recentTraffic is how many messages a partner's page lists each way.
const recentTraffic = 10

// partnerOverviewOf reads the overview of partner as of now.
func (s *Server) partnerOverviewOf(ctx context.Context, partner persistence.PartyName, now time.Time) (partnerOverview, error) {
	a, err := s.store.PartnerActivity(ctx, partner, now)
	if err != nil {
		return partnerOverview{}, err
	}
	o := partnerOverview{Health: healthOf(a, now, s.zone.location()), Rate24h: rate(a.Failed24h, a.Messages24h), Rate7d: rate(a.Failed7d, a.Messages7d),
		RecentURL: "/ui/messages?" + url.Values{"partner": {string(partner)}}.Encode(), Now: now}
	msgs, _, err := s.store.ListMessages(ctx, persistence.MessageFilter{Partner: partner, ListOptions: persistence.ListOptions{Limit: recentTraffic}})
	if err != nil {
		return o, err
	}
	for _, m := range msgs {
		row := messageRow{Message: m, Partner: partner, Direction: persistence.DirectionOutbound}
		if m.From == partner {
			row.Direction = persistence.DirectionInbound
		}
		o.Recent = append(o.Recent, row)
	}
	if o.Problems, o.ProblemTotal, err = s.store.ListMessages(ctx, persistence.MessageFilter{Partner: partner,
		Statuses: persistence.ProblemStatuses, ListOptions: persistence.ListOptions{Limit: recentTraffic}}); err != nil {
		return o, err
	}
	if o.Certificates, err = s.store.PartnerCertificates(ctx, partner); err != nil {
		return o, err
	}
	if o.Alerts, o.AlertsShown, err = s.partnerAlerts(ctx, partner, o.Certificates); err != nil {
		return o, err
	}
	return o, nil
}

// partyHealth reads the health of each partner listed; organizations have none.
func (s *Server) partyHealth(ctx context.Context, p partyPages, list []persistence.Party) (map[persistence.PartyName]partnerHealth, error) {
	out := map[persistence.PartyName]partnerHealth{}
	if p.Kind != persistence.PartyPartner {
		return out, nil
	}
	now := s.now()
	for _, party := range list {
		a, err := s.store.PartnerActivity(ctx, party.Name, now)
		if err != nil {
			return nil, err
		}
		out[party.Name] = healthOf(a, now, s.zone.location())
	}
	return out, nil
}
