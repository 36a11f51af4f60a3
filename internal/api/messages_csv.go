package api

import (
	"mime"
	"net/http"
	"strings"

	"wharf/internal/msgexport"
	"wharf/internal/persistence"
)

// wantsCSV tells a request for the message list as CSV: format=csv, or an Accept header
// naming text/csv with no format given.
func wantsCSV(r *http.Request) bool {
	switch r.URL.Query().Get("format") {
	case "csv":
		return true
	case "json":
		return false
	}
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == "text/csv" {
			return true
		}
	}
	return false
}

// exportMessages streams every message f matches, from the first, up to msgexport.MaxRows;
// limit and offset page the JSON list only.
func (s *Server) exportMessages(w http.ResponseWriter, r *http.Request, f persistence.MessageFilter) {
	ctx := r.Context()
	partners, err := msgexport.LoadPartners(ctx, s.store)
	if err == nil {
		err = msgexport.Send(w, r, s.log, s.store, f, msgexport.DirectionsOf(partners))
	}
	if err != nil {
		s.fail(w, r, err)
	}
}
