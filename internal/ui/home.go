package ui

import (
	"net/http"
	"strings"

	"wharf/internal/persistence"
	"wharf/internal/ui/session"
)

type statusCount struct {
	Status persistence.MessageStatus
	Label  string
	Count  int
}

// home is the signed-in start page: who is signed in and how many messages
// are in each status.
func (s *Server) home(w http.ResponseWriter, r *http.Request) {
	sess, _ := session.FromContext(r.Context())
	counts := make([]statusCount, 0, len(persistence.AllMessageStatuses))
	for _, st := range persistence.AllMessageStatuses {
		// Limit 1: only the total is wanted.
		_, total, err := s.store.ListMessages(r.Context(), persistence.MessageFilter{Status: st,
			ListOptions: persistence.ListOptions{Limit: 1}})
		if err != nil {
			s.fail(w, r, err)
			return
		}
		label := strings.ReplaceAll(string(st), "_", " ")
		counts = append(counts, statusCount{Status: st, Label: strings.ToUpper(label[:1]) + label[1:], Count: total})
	}
	s.render(w, r, http.StatusOK, "home", pageData{Title: "Dashboard", Session: sess,
		Data: struct {
			Name   persistence.UserName
			Counts []statusCount
		}{sess.User.Name, counts}})
}
