package ui

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"wharf/internal/auth/setuplink"
	"wharf/internal/persistence"
	"wharf/internal/records"
	"wharf/internal/ui/session"
)

var _ = registerPages([]string{"users", "user", "user_link", "forbidden"}, (*Server).userRoutes)

var _ = registerFlashes(map[string]flash{
	"user-last": {Kind: "danger", Text: "Refused: nobody else could sign in as an administrator afterwards. " +
		"Create or enable another administrator first."},
	"user-disabled":   {Kind: "success", Text: "User disabled; their sessions have ended."},
	"user-enabled":    {Kind: "success", Text: "User enabled."},
	"user-deleted":    {Kind: "success", Text: "User deleted."},
	"user-signed-out": {Kind: "success", Text: "Every session of the user has ended."},
	"user-role":       {Kind: "success", Text: "Role changed."},
	"user-role-self":  {Kind: "success", Text: "Your role is now operator; the users page is for administrators."},
})

// userRoutes lists the users pages; every one is for administrators only.
func (s *Server) userRoutes() []pageRoute {
	admin := func(h http.HandlerFunc) http.Handler { return s.adminOnly(h) }
	return []pageRoute{
		{"GET /ui/users", admin(s.usersPage)},
		{"POST /ui/users", admin(s.createUserPage)},
		{"GET /ui/users/{name}", admin(s.userPage)},
		{"POST /ui/users/{name}/role", admin(s.userRolePage)},
		{"POST /ui/users/{name}/reset", admin(s.resetUserPage)},
		{"POST /ui/users/{name}/disable", admin(s.userDisabledPage(true))},
		{"POST /ui/users/{name}/enable", admin(s.userDisabledPage(false))},
		{"POST /ui/users/{name}/sign-out", admin(s.signOutUserPage)},
		{"POST /ui/users/{name}/delete", admin(s.deleteUserPage)},
	}
}

// isAdmin reports whether the request's session is an administrator's. The role is read
// from the user as stored on this request, so a demotion applies at once.
func isAdmin(r *http.Request) bool {
	sess, ok := session.FromContext(r.Context())
	return ok && sess.User.Role == persistence.RoleAdmin
}

// adminOnly answers 403 to anyone but an administrator, for every method alike.
func (s *Server) adminOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isAdmin(r) {
			s.forbidden(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) forbidden(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusForbidden, "forbidden", pageData{Title: "Administrators only"})
}

// userRow is a user as the list shows it.
type userRow struct {
	persistence.User
	State      string
	LastSignIn string
}

// userForm is the new-user form: what was typed, and why it was refused.
type userForm struct {
	Name, DisplayName, Role string
	Errors                  map[string]string
}

func (s *Server) usersPage(w http.ResponseWriter, r *http.Request) {
	s.renderUsers(w, r, http.StatusOK, userForm{Role: string(persistence.RoleOperator)})
}

func (s *Server) renderUsers(w http.ResponseWriter, r *http.Request, status int, f userForm) {
	now := s.now()
	var rows []userRow
	for offset := 0; ; {
		users, total, err := s.store.ListUsers(r.Context(), persistence.ListOptions{Limit: 1000, Offset: offset})
		if err != nil {
			s.fail(w, r, err)
			return
		}
		for _, u := range users {
			rows = append(rows, userRow{User: u, State: u.State(now), LastSignIn: formatTime(u.LastSignInAt)})
		}
		offset += len(users)
		if len(users) == 0 || offset >= total {
			break
		}
	}
	s.render(w, r, status, "users", pageData{Title: "Users", Data: struct {
		Users     []userRow
		Roles     []persistence.UserRole
		Form      userForm
		CSRFField string
		CSRFToken string
	}{rows, persistence.AllUserRoles, f, session.CSRFField, sessionCSRFToken(r)}})
}

// createUserPage stores a new user with a set-up link, as wharf users create does, and
// shows the link in this response only: the store keeps its hash.
func (s *Server) createUserPage(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		badForm(w, err)
		return
	}
	f := userForm{Name: strings.TrimSpace(r.PostForm.Get("name")), DisplayName: r.PostForm.Get("display_name"),
		Role: r.PostForm.Get("role")}
	f.Errors = map[string]string{}
	name, err := persistence.ParseUserName(f.Name)
	if err != nil {
		f.Errors["name"] = "Use 1 to 64 of a-z, 0-9, _, . and -."
	}
	display, err := records.ParseDisplayName(f.DisplayName)
	if err != nil {
		if errs, ok := fieldMessages(err); ok {
			f.Errors["display_name"] = sentence(errs["display_name"])
		}
	}
	role, err := persistence.ParseUserRole(f.Role)
	if err != nil {
		f.Errors["role"] = "Choose administrator or operator."
	}
	if len(f.Errors) == 0 {
		u, token, err := setuplink.Create(r.Context(), s.store, persistence.User{Name: name, DisplayName: display, Role: role}, s.now())
		switch {
		case errors.Is(err, persistence.ErrConflict):
			f.Errors["name"] = "A user with this name already exists; open it to give them a new set-up link."
		case err != nil:
			s.fail(w, r, err)
			return
		default:
			s.log.InfoContext(r.Context(), "user created", "user", u.Name, "role", u.Role, "by", currentUser(r).Name)
			s.renderUserLink(w, r, u, token, false)
			return
		}
	}
	s.renderUsers(w, r, http.StatusUnprocessableEntity, f)
}

// renderUserLink shows a new set-up link once.
func (s *Server) renderUserLink(w http.ResponseWriter, r *http.Request, u persistence.User, token string, reset bool) {
	s.render(w, r, http.StatusOK, "user_link", pageData{Title: "Set-up link for " + string(u.Name), Data: struct {
		User    persistence.User
		Link    string
		Expires string
		Reset   bool
	}{u, setuplink.URL(s.baseURL(r), token), formatTime(u.SetupExpiresAt), reset}})
}

// secureCookies reports whether cookies must be Secure: the browser reaches the UI over
// https, either here or at a proxy in front that the public URL names.
func (s *Server) secureCookies(r *http.Request) bool {
	return r.TLS != nil || strings.HasPrefix(s.publicURL, "https://")
}

// baseURL is the configured public URL, or the one the browser used.
func (s *Server) baseURL(r *http.Request) string {
	if s.publicURL != "" {
		return strings.TrimSuffix(s.publicURL, "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// loadUser reads the user the path names; an invalid or unknown name is a 404, answered.
func (s *Server) loadUser(w http.ResponseWriter, r *http.Request) (persistence.User, bool) {
	name, err := persistence.ParseUserName(r.PathValue("name"))
	if err != nil {
		s.notFound(w, r)
		return persistence.User{}, false
	}
	u, err := s.store.GetUserByName(r.Context(), name)
	if err != nil {
		s.fail(w, r, err)
		return persistence.User{}, false
	}
	return u, true
}

func (s *Server) userPage(w http.ResponseWriter, r *http.Request) {
	u, ok := s.loadUser(w, r)
	if !ok {
		return
	}
	now := s.now()
	s.render(w, r, http.StatusOK, "user", pageData{Title: string(u.Name), Data: struct {
		User       persistence.User
		State      string
		Self       bool
		Created    string
		LastSignIn string
		SetupUntil string
		Pending    bool
		Roles      []persistence.UserRole
		CSRFField  string
		CSRFToken  string
	}{u, u.State(now), u.ID == currentUser(r).ID, u.CreatedAt.UTC().Format(time.RFC3339), formatTime(u.LastSignInAt),
		formatTime(u.SetupExpiresAt), u.SetupPending(now), persistence.AllUserRoles, session.CSRFField, sessionCSRFToken(r)}})
}

// userDone finishes a user action: the store's last-user refusal becomes a flash on the
// user's page, a vanished user a 404, and success the flash named ok.
func (s *Server) userDone(w http.ResponseWriter, r *http.Request, u persistence.User, err error, ok string) {
	s.actionDone(w, r, err, "/ui/users/"+string(u.Name), persistence.ErrLastUser, "user-last", ok)
}

// actionDone finishes an action that redirects to path: the refusal refused becomes the
// flash refusedFlash, a vanished record a 404, another error the error page, and success
// the flash ok.
func (s *Server) actionDone(w http.ResponseWriter, r *http.Request, err error, path string, refused error, refusedFlash, ok string) {
	switch {
	case errors.Is(err, refused):
		setFlash(w, refusedFlash)
	case errors.Is(err, persistence.ErrNotFound):
		s.notFound(w, r)
		return
	case err != nil:
		s.fail(w, r, err)
		return
	default:
		setFlash(w, ok)
	}
	http.Redirect(w, r, path, http.StatusSeeOther)
}

func (s *Server) userRolePage(w http.ResponseWriter, r *http.Request) {
	u, ok := s.loadUser(w, r)
	if !ok {
		return
	}
	if err := r.ParseForm(); err != nil {
		badForm(w, err)
		return
	}
	role, err := persistence.ParseUserRole(r.PostForm.Get("role"))
	if err != nil {
		http.Error(w, "unknown role", http.StatusBadRequest)
		return
	}
	_, err = s.store.SetUserRole(r.Context(), u.ID, role)
	if err == nil {
		s.log.InfoContext(r.Context(), "user role changed", "user", u.Name, "role", role, "by", currentUser(r).Name)
		if u.ID == currentUser(r).ID && role != persistence.RoleAdmin {
			setFlash(w, "user-role-self")
			http.Redirect(w, r, "/ui/account", http.StatusSeeOther)
			return
		}
	}
	s.userDone(w, r, u, err, "user-role")
}

// resetUserPage ends every session of the user and shows a new set-up link once, as
// wharf users reset does.
func (s *Server) resetUserPage(w http.ResponseWriter, r *http.Request) {
	u, ok := s.loadUser(w, r)
	if !ok {
		return
	}
	token, expires, err := setuplink.Reset(r.Context(), s.store, u.ID, s.now())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.log.InfoContext(r.Context(), "user reset", "user", u.Name, "by", currentUser(r).Name)
	u.SetupExpiresAt = &expires
	s.renderUserLink(w, r, u, token, true)
}

func (s *Server) userDisabledPage(disabled bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		u, ok := s.loadUser(w, r)
		if !ok {
			return
		}
		err := s.store.SetUserDisabled(r.Context(), u.ID, disabled)
		done := "user-enabled"
		if disabled {
			done = "user-disabled"
		}
		if err == nil {
			s.log.InfoContext(r.Context(), strings.TrimPrefix(done, "user-")+" user", "user", u.Name, "by", currentUser(r).Name)
		}
		s.userDone(w, r, u, err, done)
	}
}

func (s *Server) signOutUserPage(w http.ResponseWriter, r *http.Request) {
	u, ok := s.loadUser(w, r)
	if !ok {
		return
	}
	err := s.store.BumpUserGeneration(r.Context(), u.ID)
	if err == nil {
		s.log.InfoContext(r.Context(), "user signed out everywhere", "user", u.Name, "by", currentUser(r).Name)
	}
	s.userDone(w, r, u, err, "user-signed-out")
}

func (s *Server) deleteUserPage(w http.ResponseWriter, r *http.Request) {
	u, ok := s.loadUser(w, r)
	if !ok {
		return
	}
	err := s.store.DeleteUser(r.Context(), u.ID)
	if err != nil {
		s.userDone(w, r, u, err, "")
		return
	}
	s.log.InfoContext(r.Context(), "user deleted", "user", u.Name, "by", currentUser(r).Name)
	setFlash(w, "user-deleted")
	http.Redirect(w, r, "/ui/users", http.StatusSeeOther)
}
