package ui

import (
	"net/http"

	"wharf/internal/persistence"
)

var _ = registerPages([]string{"unknown_senders"}, (*Server).unknownSenderRoutes)

// unknownSenderRoutes lists the unknown senders page, reached from the partners page:
// who keeps sending without a partner profile that names them.
func (s *Server) unknownSenderRoutes() []pageRoute {
	return []pageRoute{{"GET /ui/unknown-senders", http.HandlerFunc(s.unknownSendersPage)}}
}

// unknownSenderRow is a counted unknown sender as the page shows it.
type unknownSenderRow struct {
	persistence.UnknownSender
	First, Last string
}

// unknownSendersPage shows the whole table, which the store bounds.
func (s *Server) unknownSendersPage(w http.ResponseWriter, r *http.Request) {
	list, total, err := s.store.ListUnknownSenders(r.Context(), persistence.ListOptions{Limit: persistence.MaxUnknownSenders})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rows := make([]unknownSenderRow, len(list))
	for i, u := range list {
		rows[i] = unknownSenderRow{UnknownSender: u, First: formatTime(&u.FirstSeen), Last: formatTime(&u.LastSeen)}
	}
	s.render(w, r, http.StatusOK, "unknown_senders", pageData{Title: "Unknown senders", Data: struct {
		Senders []unknownSenderRow
		Total   int
		Max     int
	}{rows, total, persistence.MaxUnknownSenders}})
}
