package ui

import (
	"errors"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"

	"wharf/internal/auth/password"
	"wharf/internal/auth/qrsvg"
	"wharf/internal/auth/recovery"
	"wharf/internal/auth/throttle"
	"wharf/internal/auth/totp"
	"wharf/internal/persistence"
	"wharf/internal/ui/session"
)

var _ = registerPages([]string{"account", "account_authenticator", "account_recovery"}, (*Server).accountRoutes)

var _ = registerFlashes(map[string]flash{
	"password-changed":      {Kind: "success", Text: "Password changed. Every other session of yours has ended."},
	"authenticator-changed": {Kind: "success", Text: "Authenticator replaced: sign in with codes from the new one. Every other session of yours has ended."},
	"signed-out-everywhere": {Kind: "info", Text: "You are signed out everywhere."},
	"authenticator-expired": {Kind: "warning", Text: "That form had expired; here is a new key to scan."},
})

// authenticatorStateTTL is how long a new TOTP secret waits for its confirming code.
const authenticatorStateTTL = 15 * time.Minute

const purposeAuthenticator = "authenticator"

// accountRoutes lists the signed-in user's own account page and its actions.
func (s *Server) accountRoutes() []pageRoute {
	return []pageRoute{
		{"GET /ui/account", http.HandlerFunc(s.accountPage)},
		{"POST /ui/account/password", http.HandlerFunc(s.changePassword)},
		{"GET /ui/account/authenticator", http.HandlerFunc(s.authenticatorForm)},
		{"POST /ui/account/authenticator", http.HandlerFunc(s.replaceAuthenticator)},
		{"POST /ui/account/recovery-codes", http.HandlerFunc(s.renewRecoveryCodes)},
		{"POST /ui/account/sign-out-everywhere", http.HandlerFunc(s.signOutEverywhere)},
	}
}

// accountData is the account page; PasswordErrors and RecoveryErrors belong to its two
// forms that take the current password. No password is ever put back into a form.
type accountData struct {
	User           persistence.User
	State          string
	LastSignIn     string
	RecoveryLeft   int
	PasswordErrors map[string]string
	RecoveryErrors map[string]string
	CSRFField      string
	CSRFToken      string
}

// currentUser is the signed-in user as the session loaded it, on this request.
func currentUser(r *http.Request) persistence.User {
	sess, _ := session.FromContext(r.Context())
	return sess.User
}

func (s *Server) accountPage(w http.ResponseWriter, r *http.Request) {
	s.renderAccount(w, r, http.StatusOK, accountData{})
}

func (s *Server) renderAccount(w http.ResponseWriter, r *http.Request, status int, d accountData) {
	u := currentUser(r)
	d.User, d.State, d.RecoveryLeft = u, u.State(s.now()), len(u.RecoveryHashes)
	d.LastSignIn = formatTime(u.LastSignInAt)
	d.CSRFField, d.CSRFToken = session.CSRFField, sessionCSRFToken(r)
	s.render(w, r, status, "account", pageData{Title: "Account", Data: d})
}

// confirmPassword checks the current password a sensitive account action asks for, under
// the sign-in throttle of the account, so a session left open is no way to guess the
// password. It returns the message for the field, or "" when the password is right.
func (s *Server) confirmPassword(w http.ResponseWriter, u persistence.User, pw string, now time.Time) (msg string, status int) {
	key := accountKey(string(u.Name))
	if wait := s.byAccount.Check(key, now); wait > 0 {
		secs := throttle.RetryAfter(wait)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		return "Too many wrong passwords. Try again in " + strconv.Itoa(secs) + " s.", http.StatusTooManyRequests
	}
	ok, _, err := password.Verify(pw, u.PasswordHash)
	if err != nil || !ok {
		s.byAccount.Fail(key, now)
		return "The current password is not right.", http.StatusUnprocessableEntity
	}
	s.byAccount.Succeed(key)
	return "", 0
}

// changePassword replaces the password and ends every other session of the user: a
// password is changed because it may be known to someone else, whose sessions must not
// outlive it. This browser gets a new session at the new generation.
func (s *Server) changePassword(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		badForm(w, err)
		return
	}
	now := s.now()
	u := currentUser(r)
	pw, pw2 := r.PostForm.Get("password"), r.PostForm.Get("password_confirm")
	// Every field is checked, so one refusal says all that is wrong.
	errs := map[string]string{}
	status := http.StatusUnprocessableEntity
	if msg, st := s.confirmPassword(w, u, r.PostForm.Get("current_password"), now); msg != "" {
		errs["current_password"], status = msg, st
	}
	if err := password.CheckStrength(pw, string(u.Name), u.DisplayName, s.issuer, "wharf"); err != nil {
		errs["password"] = sentence(err.Error())
	}
	if pw != pw2 {
		errs["password_confirm"] = "The two passwords are not the same."
	}
	if len(errs) > 0 {
		s.renderAccount(w, r, status, accountData{PasswordErrors: errs})
		return
	}
	hash, err := password.Hash(pw)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	updated, err := s.store.SetUserPassword(r.Context(), u.ID, hash)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if _, err := s.sessions.Issue(w, r, updated); err != nil {
		s.fail(w, r, err)
		return
	}
	s.log.InfoContext(r.Context(), "user changed password", "user", u.Name)
	setFlash(w, "password-changed")
	http.Redirect(w, r, "/ui/account", http.StatusSeeOther)
}

// authenticatorData is the form that replaces the TOTP secret.
type authenticatorData struct {
	QR        template.HTML
	Secret    string
	State     string
	Code      string
	Errors    map[string]string
	CSRFField string
	CSRFToken string
}

// authenticatorForm offers a new TOTP secret. As on the set-up page, the secret lives only
// in the page and, sealed, in a hidden field until a code from it confirms it; the old
// secret stays in force until then.
func (s *Server) authenticatorForm(w http.ResponseWriter, r *http.Request) {
	sess, _ := session.FromContext(r.Context())
	key, err := totp.NewSecret(s.issuer, string(sess.User.Name))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	state, err := s.sealState(formState{Purpose: purposeAuthenticator, Expires: s.now().Add(authenticatorStateTTL).Unix(),
		UserID: sess.UserID, Generation: sess.User.Generation, Secret: key.Secret})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.renderAuthenticator(w, r, http.StatusOK, key.Secret, authenticatorData{State: state})
}

func (s *Server) renderAuthenticator(w http.ResponseWriter, r *http.Request, status int, secret string, d authenticatorData) {
	qr, err := qrsvg.SVG(totpURL(s.issuer, string(currentUser(r).Name), secret))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d.QR, d.Secret = qr, secret
	d.CSRFField, d.CSRFToken = session.CSRFField, sessionCSRFToken(r)
	s.render(w, r, status, "account_authenticator", pageData{Title: "Replace authenticator", Data: d})
}

// replaceAuthenticator stores the new secret once the current password and a code from the
// new secret prove both the person and the new device. Like a password change it ends every
// other session: a replaced authenticator is often a lost one.
func (s *Server) replaceAuthenticator(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		badForm(w, err)
		return
	}
	now := s.now()
	u := currentUser(r)
	stateValue := r.PostForm.Get("state")
	st, err := s.openState(stateValue, purposeAuthenticator, now)
	if err != nil || st.UserID != u.ID || st.Generation != u.Generation {
		// Expired, foreign, or from before a credential change: start again with a new secret.
		setFlash(w, "authenticator-expired")
		http.Redirect(w, r, "/ui/account/authenticator", http.StatusSeeOther)
		return
	}
	code := strings.TrimSpace(r.PostForm.Get("code"))
	d := authenticatorData{State: stateValue, Code: code, Errors: map[string]string{}}
	// Both fields are checked, so one refusal says all that is wrong.
	status := http.StatusUnprocessableEntity
	if msg, st := s.confirmPassword(w, u, r.PostForm.Get("current_password"), now); msg != "" {
		d.Errors["current_password"], status = msg, st
	}
	step, ok := totp.Validate(st.Secret, code, now, u.LastTOTPStep)
	if !ok {
		d.Errors["code"] = "The code is not right. Type the code the app shows now for the new key; check the device's clock if it keeps failing."
	}
	if len(d.Errors) > 0 {
		s.renderAuthenticator(w, r, status, st.Secret, d)
		return
	}
	sealed, err := s.sealer.Seal([]byte(st.Secret))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	updated, err := s.store.SetUserTOTP(r.Context(), u.ID, sealed)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// The confirming code is spent, so it cannot also sign in.
	if err := s.store.AcceptTOTPStep(r.Context(), u.ID, step); err != nil && !errors.Is(err, persistence.ErrConflict) {
		s.log.ErrorContext(r.Context(), "record TOTP step", "user_id", u.ID, "err", err)
	}
	if _, err := s.sessions.Issue(w, r, updated); err != nil {
		s.fail(w, r, err)
		return
	}
	s.log.InfoContext(r.Context(), "user replaced authenticator", "user", u.Name)
	setFlash(w, "authenticator-changed")
	http.Redirect(w, r, "/ui/account", http.StatusSeeOther)
}

// renewRecoveryCodes replaces every recovery code with ten new ones, shown in this response
// only. Sessions go on: nothing a session holds depends on the codes.
func (s *Server) renewRecoveryCodes(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		badForm(w, err)
		return
	}
	u := currentUser(r)
	if msg, status := s.confirmPassword(w, u, r.PostForm.Get("current_password"), s.now()); msg != "" {
		s.renderAccount(w, r, status, accountData{RecoveryErrors: map[string]string{"current_password": msg}})
		return
	}
	plain, hashes, err := recovery.Generate()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if _, err := s.store.SetUserRecoveryCodes(r.Context(), u.ID, hashes); err != nil {
		s.fail(w, r, err)
		return
	}
	s.log.InfoContext(r.Context(), "user renewed recovery codes", "user", u.Name)
	s.render(w, r, http.StatusOK, "account_recovery", pageData{Title: "New recovery codes", Data: struct {
		Name  persistence.UserName
		Codes []string
	}{u.Name, plain}})
}

// signOutEverywhere ends every session of the user, this one included.
func (s *Server) signOutEverywhere(w http.ResponseWriter, r *http.Request) {
	u := currentUser(r)
	if err := s.store.BumpUserGeneration(r.Context(), u.ID); err != nil {
		s.fail(w, r, err)
		return
	}
	s.sessions.Clear(w)
	s.log.InfoContext(r.Context(), "user signed out everywhere", "user", u.Name)
	setFlash(w, "signed-out-everywhere")
	http.Redirect(w, r, session.SignInPath, http.StatusSeeOther)
}

// formatTime is t in RFC 3339 (UTC), or "" for none.
func formatTime(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
