package ui

import (
	"net/http"

	"wharf/internal/ui/session"
)

// signOut expires this browser's session cookie; Require and CSRF run first,
// so a cross-site form cannot sign anyone out.
func (s *Server) signOut(w http.ResponseWriter, r *http.Request) {
	s.sessions.Clear(w)
	setFlash(w, "signed-out")
	http.Redirect(w, r, session.SignInPath, http.StatusSeeOther)
}
