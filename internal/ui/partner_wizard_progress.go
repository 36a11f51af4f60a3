package ui

import (
	"net/http"
	"strconv"

	"wharf/internal/persistence"
)

// wizardProgress is where the wizard's test message stands; the page polls it until the
// message is settled.
type wizardProgress struct {
	// Path is the fragment's URL while the message is not settled, else "".
	Path      string
	MessageID int64
	Status    persistence.MessageStatus
	Final     bool
	OK        bool
	// Detail is the delivery's last error, when it has one.
	Detail string
}

// wizardProgress reads the test message the partner's wizard sent; a message of another
// partner, or none, is a 404, already answered.
func (s *Server) wizardProgress(w http.ResponseWriter, r *http.Request, partner persistence.PartyName, id int64) (*wizardProgress, bool) {
	m, err := s.store.GetMessage(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return nil, false
	}
	if m.To != partner {
		s.notFound(w, r)
		return nil, false
	}
	ds, err := s.store.ListDeliveries(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return nil, false
	}
	p := &wizardProgress{MessageID: id, Status: m.Status}
	switch m.Status {
	case persistence.StatusDelivered:
		p.Final, p.OK = true, true
	case persistence.StatusError, persistence.StatusStalled, persistence.StatusRefused, persistence.StatusNotRouted, persistence.StatusSkipped:
		p.Final = true
	}
	for _, d := range ds {
		if d.LastError != "" {
			p.Detail = d.LastError
		}
	}
	if !p.Final {
		p.Path = partnerPages.Path + "/" + string(partner) + "/setup/progress/" + strconv.FormatInt(id, 10)
	}
	return p, true
}

// wizardProgressFragment is the progress box alone, which the page polls.
func (s *Server) wizardProgressFragment(w http.ResponseWriter, r *http.Request) {
	_, _, party, ok := s.loadWizardPartner(w, r)
	if !ok {
		return
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		s.notFound(w, r)
		return
	}
	p, ok := s.wizardProgress(w, r, party.Name, id)
	if !ok {
		return
	}
	s.renderFragment(w, r, "partner_wizard", "wizard-progress", p)
}
