package ui

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"wharf/internal/alert"
	"wharf/internal/persistence"
)

// A partner's page lists the open alerts about it: those raised for the partner, one of
// its messages or one of its certificates, each linked to its subject's page.

// partnerAlertScan bounds how many open alerts are read to find a partner's; they are
// the newest, and an alert closes when its cause goes away.
const partnerAlertScan = 500

// partnerAlertsShown bounds how many a partner's page lists.
const partnerAlertsShown = 20

// partnerAlerts are the open alerts about partner, newest first; ok is false in a build
// without the notifier module.
func (s *Server) partnerAlerts(ctx context.Context, partner persistence.PartyName, certs []persistence.Certificate) (alerts []alert.Alert, ok bool, err error) {
	if s.notifications == nil {
		return nil, false, nil
	}
	open, _, err := s.notifications.ListAlerts(ctx, alert.Filter{Unresolved: true, Limit: partnerAlertScan})
	if err != nil {
		return nil, true, fmt.Errorf("open alerts of %s: %w", partner, err)
	}
	ours := map[string]bool{}
	for _, c := range certs {
		ours[strconv.FormatInt(c.ID, 10)] = true
	}
	for _, a := range open {
		var about bool
		switch a.Subject.Kind {
		case "partner":
			about = a.Subject.ID == string(partner)
		case "certificate":
			about = ours[a.Subject.ID]
		case "message":
			if about, err = s.messageOf(ctx, a.Subject.ID, partner); err != nil {
				return nil, true, err
			}
		}
		if about {
			alerts = append(alerts, a)
			if len(alerts) == partnerAlertsShown {
				break
			}
		}
	}
	return alerts, true, nil
}

// messageOf reports whether the message id names was sent to or by partner.
func (s *Server) messageOf(ctx context.Context, id string, partner persistence.PartyName) (bool, error) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return false, nil
	}
	m, err := s.store.GetMessage(ctx, n)
	switch {
	case errors.Is(err, persistence.ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("message %d of an alert: %w", n, err)
	}
	return m.From == partner || m.To == partner, nil
}
