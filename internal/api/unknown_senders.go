package api

import (
	"net/http"

	"wharf/internal/persistence"
)

// listUnknownSenders lists the requests sources refused before they knew the sender
// (unknown AS2 ids, a bad envelope), counted per remote address and id pair, last seen
// first.
func (s *Server) listUnknownSenders(w http.ResponseWriter, r *http.Request) {
	p, err := parsePage(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	list, total, err := s.store.ListUnknownSenders(r.Context(), persistence.ListOptions{Limit: p.limit, Offset: p.offset})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, listBody("unknown_senders", list, total, p))
}
