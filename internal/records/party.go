package records

import (
	"context"
	"errors"

	"wharf/internal/persistence"
)

// PartyInput is an organization or partner as a client writes it.
type PartyInput struct {
	Name        string
	DisplayName string
}

// CreateParty validates and stores a new party of kind. An empty display name takes the
// party's name. A name taken by a party of the same kind is the store's ErrConflict.
func CreateParty(ctx context.Context, st Store, kind persistence.PartyKind, in PartyInput) (persistence.Party, error) {
	var errs []error
	name, err := persistence.ParsePartyName(in.Name)
	if err != nil {
		errs = append(errs, fieldError("name", err.Error()))
	}
	display, err := ParseDisplayName(in.DisplayName)
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return persistence.Party{}, errors.Join(errs...)
	}
	if display == "" {
		display = string(name)
	}
	return st.CreateParty(ctx, persistence.Party{Kind: kind, Name: name, DisplayName: display})
}

// UpdateParty changes the display name of the party kind/name. A party's name is its key
// and cannot change: in.Name must be empty or the same name. An empty display name takes
// the party's name.
func UpdateParty(ctx context.Context, st Store, kind persistence.PartyKind, name persistence.PartyName, in PartyInput) (persistence.Party, error) {
	if in.Name != "" && in.Name != string(name) {
		return persistence.Party{}, fieldError("name", "cannot be changed")
	}
	display, err := ParseDisplayName(in.DisplayName)
	if err != nil {
		return persistence.Party{}, err
	}
	p, err := st.GetParty(ctx, kind, name)
	if err != nil {
		return persistence.Party{}, err
	}
	if display == "" {
		display = string(name)
	}
	p.DisplayName = display
	return st.UpdateParty(ctx, p)
}

// partyExists reports whether name is an organization or a partner.
func partyExists(ctx context.Context, st Store, name persistence.PartyName) (bool, error) {
	for _, kind := range persistence.AllPartyKinds {
		_, err := st.GetParty(ctx, kind, name)
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, persistence.ErrNotFound) {
			return false, err
		}
	}
	return false, nil
}
