package ui

import (
	"context"

	"wharf/internal/persistence"
)

// The route form picks its parties from lists, with "any party" first; nothing is typed.

// routeChoices are the route form's selects: instances on each side and parties on each.
type routeChoices struct {
	Sources, Targets []persistence.InstanceName
	From, To         partyChoices
}

// routeChoicesFor lists what the route form f offers; a party value of "*" (any) is one
// of the choices, not a stray value.
func (s *Server) routeChoicesFor(ctx context.Context, f routeForm) (routeChoices, error) {
	var c routeChoices
	var err error
	if c.Sources, c.Targets, err = s.instancesByRole(ctx); err != nil {
		return routeChoices{}, err
	}
	orgs, partners, err := s.partiesByKind(ctx)
	if err != nil {
		return routeChoices{}, err
	}
	c.From, c.To = choicesOf(orgs, partners, f.From), choicesOf(partners, orgs, f.To)
	if f.From == persistence.AnyParty {
		c.From.Other = ""
	}
	if f.To == persistence.AnyParty {
		c.To.Other = ""
	}
	return c, nil
}

// partiesByKind lists our organizations and the partners, for the party selects.
func (s *Server) partiesByKind(ctx context.Context) (orgs, partners []persistence.Party, err error) {
	if orgs, _, err = s.store.ListParties(ctx, persistence.PartyOrganization, persistence.ListOptions{Limit: 1000}); err != nil {
		return nil, nil, err
	}
	if partners, _, err = s.store.ListParties(ctx, persistence.PartyPartner, persistence.ListOptions{Limit: 1000}); err != nil {
		return nil, nil, err
	}
	return orgs, partners, nil
}
