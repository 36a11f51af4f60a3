package ui

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"wharf/internal/persistence"
)

// dashboardPartners is how many partners the dashboard's problems by partner lists.
const dashboardPartners = 10

// partnerProblems is one partner's line of the dashboard's problems.
type partnerProblems struct {
	Partner persistence.PartyName
	Count   int
	URL     string // the partner's page, where its problems are listed
}

// setupStep is one step of the first-run checklist, ticked from the database.
type setupStep struct {
	Text string
	Done bool
	URL  string
}

// problemsByPartner reads the partners with open problems, most first.
func (s *Server) problemsByPartner(ctx context.Context, now time.Time) ([]partnerProblems, error) {
	counts, err := s.store.CountProblemsByPartner(ctx, now.Add(-7*24*time.Hour), dashboardPartners)
	if err != nil {
		return nil, fmt.Errorf("problems by partner: %w", err)
	}
	out := make([]partnerProblems, len(counts))
	for i, c := range counts {
		out[i] = partnerProblems{Partner: c.Partner, Count: c.Count, URL: "/ui/partners/" + url.PathEscape(string(c.Partner))}
	}
	return out, nil
}

// setupChecklist is the first-run checklist while a step is left, nil once all are done.
func (s *Server) setupChecklist(ctx context.Context) ([]setupStep, error) {
	p, err := s.store.SetupProgress(ctx)
	if err != nil {
		return nil, err
	}
	if p.Identity && p.HasPartner && p.Sent {
		return nil, nil
	}
	identity := "/ui/organizations/new"
	if p.Organization != "" {
		identity = "/ui/organizations/" + url.PathEscape(string(p.Organization))
	}
	send := "/ui/partners"
	if p.HasPartner {
		send = "/ui/partners/" + url.PathEscape(string(p.Partner))
	}
	return []setupStep{
		{Text: "Create our identity: an organization with its AS2 profile and a key pair", Done: p.Identity, URL: identity},
		{Text: "Add a partner", Done: p.HasPartner, URL: "/ui/partners/new"},
		{Text: "Send a test message to the partner", Done: p.Sent, URL: send},
	}, nil
}
