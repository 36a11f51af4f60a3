package api

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/records"
)

// partyResource is organizations or partners: the same shape and rules, two collections.
type partyResource struct {
	kind       persistence.PartyKind
	collection string
}

var (
	organizations = partyResource{kind: persistence.PartyOrganization, collection: "organizations"}
	partners      = partyResource{kind: persistence.PartyPartner, collection: "partners"}
)

type partyView struct {
	Name        persistence.PartyName `json:"name"`
	DisplayName string                `json:"display_name"`
	CreatedAt   time.Time             `json:"created_at"`
	UpdatedAt   time.Time             `json:"updated_at"`
}

func viewParty(p persistence.Party) partyView {
	return partyView{Name: p.Name, DisplayName: p.DisplayName, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
}

// partyInput is what a client sends; names are validated by records, naming the field.
type partyInput struct {
	Name        string `json:"name"`
	DisplayName string `json:"display_name"`
}

func (s *Server) listParties(res partyResource) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, err := parsePage(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		list, total, err := s.store.ListParties(r.Context(), res.kind, persistence.ListOptions{Limit: p.limit, Offset: p.offset})
		if err != nil {
			s.fail(w, r, err)
			return
		}
		views := make([]partyView, len(list))
		for i, party := range list {
			views[i] = viewParty(party)
		}
		writeJSON(w, http.StatusOK, listBody(res.collection, views, total, p))
	}
}

func (s *Server) createParty(res partyResource) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var in partyInput
		if err := decodeJSON(r, &in); err != nil {
			s.fail(w, r, err)
			return
		}
		p, err := records.CreateParty(r.Context(), s.store, res.kind, records.PartyInput{Name: in.Name, DisplayName: in.DisplayName})
		if err != nil {
			s.fail(w, r, withCode(err, persistence.ErrConflict, "PARTY_EXISTS"))
			return
		}
		w.Header().Set("Location", "/api/v1/"+res.collection+"/"+string(p.Name))
		writeJSON(w, http.StatusCreated, viewParty(p))
	}
}

func (s *Server) getParty(res partyResource) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name, err := pathPartyName(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		p, err := s.store.GetParty(r.Context(), res.kind, name)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, viewParty(p))
	}
}

func (s *Server) updateParty(res partyResource) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name, err := pathPartyName(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		var in partyInput
		if err := decodeJSON(r, &in); err != nil {
			s.fail(w, r, err)
			return
		}
		p, err := records.UpdateParty(r.Context(), s.store, res.kind, name, records.PartyInput{Name: in.Name, DisplayName: in.DisplayName})
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, viewParty(p))
	}
}

func (s *Server) deleteParty(res partyResource) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name, err := pathPartyName(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if err := s.partyReferenced(r, res.kind, name); err != nil {
			s.fail(w, r, withCode(err, persistence.ErrInUse, "PARTY_IN_USE"))
			return
		}
		if err := s.store.DeleteParty(r.Context(), res.kind, name); err != nil {
			s.fail(w, r, withCode(err, persistence.ErrInUse, "PARTY_IN_USE"))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}
}

// partyReferenced refuses with ErrInUse while a module's record names the party.
func (s *Server) partyReferenced(r *http.Request, kind persistence.PartyKind, name persistence.PartyName) error {
	for _, m := range s.modules {
		if m.Parties == nil {
			continue
		}
		refs, err := m.Parties.PartyReferences(r.Context(), kind, name)
		if err != nil {
			return err
		}
		if len(refs) > 0 {
			return fmt.Errorf("%s %s is named by %s: %w", kind, name, strings.Join(refs, ", "), persistence.ErrInUse)
		}
	}
	return nil
}
