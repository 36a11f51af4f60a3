package ui

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"wharf/internal/module"
	"wharf/internal/persistence"
)

// verdict is the one line at the top of a message's page that says how it went, with
// the fix where Wharf can tell it. Tone is a badge class: success, info, warning, danger.
type verdict struct {
	Tone string
	Text string
	Fix  string
}

// verdictInput is everything the verdict is read from.
type verdictInput struct {
	Message    persistence.Message
	Direction  persistence.Direction
	Partner    string // the partner's display name; empty between organizations
	Deliveries []persistence.Delivery
	// Facts is the protocol module's reading (the AS2 receipt, a refusal); nil when no
	// module had a part in the message.
	Facts *module.MessageFacts
	// Zone is the display_timezone setting's zone the verdict's times are shown in.
	Zone *time.Location
}

// verdictOf builds the verdict from the message, its deliveries and its protocol facts,
// every moment in it in the display zone.
func verdictOf(in verdictInput) verdict {
	v := verdictText(in)
	v.Text, v.Fix = zonedMoments(v.Text, in.Zone), zonedMoments(v.Fix, in.Zone)
	return v
}

// rfc3339Moment is a moment a module wrote into a sentence.
var rfc3339Moment = regexp.MustCompile(`\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)

// zonedMoments shows each RFC 3339 moment of a module's sentence in the display zone.
func zonedMoments(text string, zone *time.Location) string {
	return rfc3339Moment.ReplaceAllStringFunc(text, func(m string) string {
		t, err := time.Parse(time.RFC3339Nano, m)
		if err != nil {
			return m
		}
		return displayTime(t, zone)
	})
}

// verdictText is the verdict as the message, its deliveries and its facts tell it.
func verdictText(in verdictInput) verdict {
	var f module.MessageFacts
	if in.Facts != nil {
		f = *in.Facts
	}
	partner := in.Partner
	if partner == "" {
		partner = "the partner"
	}
	m := in.Message
	switch {
	case f.RefusedByUs || m.Status == persistence.StatusRefused:
		return verdict{Tone: "danger", Text: "Refused: " + orText(f.Problem, "the source refused it; its history says why"), Fix: f.Fix}
	case f.RefusedByPartner:
		return verdict{Tone: "danger", Text: "Refused by " + partner + ": " + f.Problem, Fix: f.Fix}
	}
	targets := targetsOf(in.Deliveries, "")
	switch m.Status {
	case persistence.StatusDelivered:
		text := "Delivered"
		switch {
		case f.Receipt != "" && in.Direction == persistence.DirectionInbound:
			text = "Received from " + partner + " and delivered to " + targets + " — " + f.Receipt
		case f.Receipt != "":
			text += " — " + f.Receipt
		case targets != "":
			text += " to " + targets
		}
		return verdict{Tone: "success", Text: text}
	case persistence.StatusAwaitingReceipt:
		if !f.AwaitingUntil.IsZero() {
			return verdict{Tone: "info", Text: "Waiting for " + partner + "'s receipt until " + displayTime(f.AwaitingUntil, in.Zone)}
		}
		for _, d := range in.Deliveries {
			if d.State == persistence.DeliveryAwaitingAck && d.AckDeadline != nil {
				return verdict{Tone: "info", Text: fmt.Sprintf("Waiting for %s to report completion until %s", d.Target, displayTime(*d.AckDeadline, in.Zone))}
			}
		}
		return verdict{Tone: "info", Text: "Waiting for a receipt"}
	case persistence.StatusHeld:
		return verdict{Tone: "warning", Text: "Held: an earlier message of its session failed",
			Fix: "Redeliver or settle the earlier message of the session; this one goes out after it."}
	case persistence.StatusRetrying:
		text := "Retrying"
		for _, d := range in.Deliveries {
			if d.State == persistence.DeliveryRetrying {
				text += ": " + orText(f.Problem, d.LastError)
				if d.NextAttemptAt != nil {
					text += "; next attempt " + displayTime(*d.NextAttemptAt, in.Zone)
				}
				break
			}
		}
		return verdict{Tone: "warning", Text: text, Fix: f.Fix}
	case persistence.StatusStalled:
		stalled := targetsOf(in.Deliveries, persistence.DeliveryStalled)
		return verdict{Tone: "danger", Text: "Stalled: no worker took it to " + stalled,
			Fix: "Check that " + stalled + " is running on the Services page, then redeliver."}
	case persistence.StatusError:
		problem := f.Problem
		if problem == "" {
			for _, d := range in.Deliveries {
				if d.State == persistence.DeliveryFailed {
					problem = string(d.Target) + ": " + orText(d.LastError, "failed")
					break
				}
			}
		}
		return verdict{Tone: "danger", Text: "Failed: " + orText(problem, "a delivery failed"), Fix: f.Fix}
	case persistence.StatusNotRouted:
		return verdict{Tone: "warning", Text: fmt.Sprintf("Not routed: no route takes messages from %s to %s", m.From, m.To),
			Fix: "Add a route on the Routes page, then redispatch."}
	case persistence.StatusSkipped:
		return verdict{Tone: "neutral", Text: "Skipped: no delivery was made"}
	case persistence.StatusInProgress:
		return verdict{Tone: "info", Text: "On its way to " + orText(targets, "its targets")}
	}
	if in.Direction == persistence.DirectionInbound && f.Receipt != "" {
		return verdict{Tone: "info", Text: "Received from " + partner + " — " + f.Receipt}
	}
	return verdict{Tone: "info", Text: "Received; not dispatched yet"}
}

// targetsOf names the targets of the deliveries in state st (all when st is empty).
func targetsOf(ds []persistence.Delivery, st persistence.DeliveryState) string {
	var names []string
	for _, d := range ds {
		if st == "" || d.State == st {
			names = append(names, string(d.Target))
		}
	}
	return strings.Join(names, ", ")
}

func orText(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}

// messageFacts asks the modules for their reading of message id; ok false when none had
// a part in it.
func (s *Server) messageFacts(ctx context.Context, id int64) (module.MessageFacts, bool, error) {
	for _, fa := range s.facters {
		f, ok, err := fa.MessageFacts(ctx, id)
		if err != nil {
			return module.MessageFacts{}, false, fmt.Errorf("protocol facts of message %d: %w", id, err)
		}
		if ok {
			return f, true, nil
		}
	}
	return module.MessageFacts{}, false, nil
}

// messageEnds tells the message's direction and its partner's display name.
func (s *Server) messageEnds(ctx context.Context, m persistence.Message) (persistence.Direction, persistence.PartyName, string, error) {
	for _, end := range []struct {
		name persistence.PartyName
		dir  persistence.Direction
	}{{m.From, persistence.DirectionInbound}, {m.To, persistence.DirectionOutbound}} {
		p, err := s.store.GetParty(ctx, persistence.PartyPartner, end.name)
		switch {
		case err == nil:
			return end.dir, p.Name, orText(p.DisplayName, string(p.Name)), nil
		case !errors.Is(err, persistence.ErrNotFound):
			return "", "", "", fmt.Errorf("partner of message %d: %w", m.ID, err)
		}
	}
	return "", "", "", nil
}
