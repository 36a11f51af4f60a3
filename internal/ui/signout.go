package ui

import (
	"net/http"

	"wharf/internal/ui/session"
)

// signOut ends this browser's session on the server and expires its cookie, so a copy
// of the cookie is worthless afterwards; Require and CSRF run first, so a cross-site
// form cannot sign anyone out.
func (s *Server) signOut(w http.ResponseWriter, r *http.Request) {
	sess, _ := session.FromContext(r.Context())
	if err := s.sessions.End(r.Context(), w, sess); err != nil {
		s.fail(w, r, err)
		return
	}
	setFlash(w, "signed-out")
	http.Redirect(w, r, session.SignInPath, http.StatusSeeOther)
}
