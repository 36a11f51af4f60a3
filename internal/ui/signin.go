package ui

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"wharf/internal/auth/password"
	"wharf/internal/auth/recovery"
	"wharf/internal/auth/throttle"
	"wharf/internal/auth/totp"
	"wharf/internal/persistence"
	"wharf/internal/ui/session"
)

// The refusals say which step failed. The first never tells whether the account exists;
// the second is reached only with the right password, so naming the code gives nothing
// away.
const (
	refusal     = "The name or password is not right."
	codeRefusal = "The code is not right. Type the code your authenticator app shows now, or one of your recovery codes; check the device's clock if it keeps failing."
	// codeReused answers the code just spent (at set-up, or by the previous sign-in) while
	// the app still shows it: the user could not have typed another.
	codeReused = "This code was already used. Wait until your authenticator app shows a new code (at most 30 seconds), then type that one."
)

// signInStateTTL is how long the code step stays open after the password step.
const signInStateTTL = 5 * time.Minute

type signInData struct {
	Name    string
	Next    string
	State   string
	Refusal string
	// Token is the sign-in form's CSRF token (see signInToken).
	Token string
	// Providers are the "Sign in with …" buttons.
	Providers []signInProvider
}

// signInCookie holds the sign-in form's CSRF token. Without a session there is no session
// token, yet another site must not sign a browser into an account of its choosing: the
// form carries the cookie's value, and a post whose value differs is refused.
const (
	signInCookie = "wharf_sign_in"
	signInField  = "sign_in_token"
)

// signInToken returns the browser's sign-in token, giving it one when it has none.
func (s *Server) signInToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(signInCookie); err == nil && len(c.Value) == 43 {
		return c.Value
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	tok := base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: signInCookie, Value: tok, Path: "/ui/sign-in",
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.secureCookies(r)})
	return tok
}

func (s *Server) signInForm(w http.ResponseWriter, r *http.Request) {
	next := r.URL.Query().Get("next")
	if _, err := s.sessions.Load(r); err == nil {
		http.Redirect(w, r, session.SafeNext(next), http.StatusSeeOther)
		return
	}
	s.render(w, r, http.StatusOK, "sign_in", pageData{Title: "Sign in", Data: signInData{Next: next, Token: s.signInToken(w, r),
		Providers: s.signInProviders(r.Context())}})
}

// signInSubmit is step one (name and password) or, when the form carries the
// sealed state step one handed out, step two (a TOTP or recovery code).
func (s *Server) signInSubmit(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		badForm(w, err)
		return
	}
	c, err := r.Cookie(signInCookie)
	if err != nil || subtle.ConstantTimeCompare([]byte(c.Value), []byte(r.PostForm.Get(signInField))) != 1 {
		http.Error(w, "The sign-in form has expired or came from another site; load the sign-in page again.", http.StatusForbidden)
		return
	}
	if r.PostForm.Has("state") {
		s.signInCode(w, r)
		return
	}
	s.signInPassword(w, r)
}

func (s *Server) signInPassword(w http.ResponseWriter, r *http.Request) {
	now := s.now()
	name, next := strings.TrimSpace(r.PostForm.Get("name")), r.PostForm.Get("next")
	data := signInData{Name: name, Next: next, Token: r.PostForm.Get(signInField)}
	if s.throttled(w, r, "sign_in", data, name, now) {
		return
	}
	u, found, err := s.userByName(r, name)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	hash := s.dummyHash()
	if found && u.SetUp() {
		hash = u.PasswordHash
	}
	ok, _, err := password.Verify(r.PostForm.Get("password"), hash)
	if err != nil {
		s.log.ErrorContext(r.Context(), "verify password", "user", name, "err", err)
	}
	if !ok || !found || !u.SetUp() || !u.CanSignIn(now) {
		s.refuse(w, r, "sign_in", data, name, now)
		return
	}
	state, err := s.sealState(formState{Purpose: purposeSignIn, Expires: now.Add(signInStateTTL).Unix(),
		UserID: u.ID, Generation: u.Generation, Next: next})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "sign_in_code", pageData{Title: "Sign in",
		Data: signInData{Name: string(u.Name), State: state, Token: r.PostForm.Get(signInField)}})
}

func (s *Server) signInCode(w http.ResponseWriter, r *http.Request) {
	now := s.now()
	stateValue := r.PostForm.Get("state")
	st, err := s.openState(stateValue, purposeSignIn, now)
	if err != nil {
		s.render(w, r, http.StatusUnprocessableEntity, "sign_in", pageData{Title: "Sign in",
			Flash: &flash{Kind: "warning", Text: "The sign-in took too long. Please start again."}})
		return
	}
	u, err := s.store.GetUser(r.Context(), st.UserID)
	if err != nil && !errors.Is(err, persistence.ErrNotFound) {
		s.fail(w, r, err)
		return
	}
	data := signInData{Name: string(u.Name), State: stateValue, Token: r.PostForm.Get(signInField)}
	if s.throttled(w, r, "sign_in_code", data, string(u.Name), now) {
		return
	}
	// A reset, disabling or deletion since step one voids the password proof.
	if err != nil || u.Generation != st.Generation || !u.SetUp() || !u.CanSignIn(now) {
		s.refuse(w, r, "sign_in", signInData{Next: st.Next, Token: r.PostForm.Get(signInField)}, string(u.Name), now)
		return
	}
	ok, reused, err := s.checkCode(r, u, r.PostForm.Get("code"), now)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if reused {
		// Not a failure: nothing was guessed, and the next code must not meet a delay.
		data.Refusal = codeReused
		s.render(w, r, http.StatusUnprocessableEntity, "sign_in_code", pageData{Title: "Sign in", Data: data})
		return
	}
	if !ok {
		s.refuse(w, r, "sign_in_code", data, string(u.Name), now)
		return
	}
	s.byAccount.Succeed(accountKey(string(u.Name)))
	if _, err := s.sessions.Issue(w, r, u); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.store.TouchUserSignIn(r.Context(), u.ID, now); err != nil {
		s.log.ErrorContext(r.Context(), "record sign-in", "user", u.Name, "err", err)
	}
	s.log.InfoContext(r.Context(), "user signed in", "user", u.Name)
	http.Redirect(w, r, session.SafeNext(st.Next), http.StatusSeeOther)
}

// checkCode accepts a TOTP code or an unused recovery code, and spends it in
// the store, which refuses a second use even under concurrent sign-ins. reused reports
// a TOTP code already spent that is still in the app's window.
func (s *Server) checkCode(r *http.Request, u persistence.User, code string, now time.Time) (ok, reused bool, err error) {
	code = strings.TrimSpace(code)
	if isDigits(strings.ReplaceAll(code, " ", "")) {
		secret, err := s.sealer.Open(u.SealedTOTP)
		if err != nil {
			return false, false, err
		}
		defer clear(secret)
		step, ok := totp.Validate(string(secret), code, now, u.LastTOTPStep)
		if !ok {
			return false, totp.Reused(string(secret), code, now, u.LastTOTPStep), nil
		}
		err = s.store.AcceptTOTPStep(r.Context(), u.ID, step)
		if errors.Is(err, persistence.ErrConflict) {
			// A concurrent sign-in spent it first.
			return false, true, nil
		}
		return err == nil, false, err
	}
	i, ok := recovery.Match(code, u.RecoveryHashes)
	if !ok {
		return false, false, nil
	}
	err = s.store.UseRecoveryCode(r.Context(), u.ID, i, u.RecoveryHashes[i])
	if errors.Is(err, persistence.ErrConflict) {
		return false, false, nil
	}
	if err == nil {
		s.log.InfoContext(r.Context(), "recovery code used", "user", u.Name, "left", len(u.RecoveryHashes)-1)
	}
	return err == nil, false, err
}

// userByName looks the typed name up; a name that is not valid is simply not found.
func (s *Server) userByName(r *http.Request, name string) (persistence.User, bool, error) {
	n, err := persistence.ParseUserName(name)
	if err != nil {
		return persistence.User{}, false, nil
	}
	u, err := s.store.GetUserByName(r.Context(), n)
	if errors.Is(err, persistence.ErrNotFound) {
		return persistence.User{}, false, nil
	}
	return u, err == nil, err
}

// throttled answers 429 with Retry-After when the account or the client
// address must wait, before any credential is checked.
func (s *Server) throttled(w http.ResponseWriter, r *http.Request, view string, data signInData, name string, now time.Time) bool {
	wait := max(s.byAccount.Check(accountKey(name), now), s.byAddress.Check(clientAddress(r), now))
	if wait <= 0 {
		return false
	}
	secs := throttle.RetryAfter(wait)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	unit := " seconds."
	if secs == 1 {
		unit = " second."
	}
	data.Refusal = "Too many attempts. Try again in " + strconv.Itoa(secs) + unit
	if view == "sign_in" {
		data.Providers = s.signInProviders(r.Context())
	}
	s.render(w, r, http.StatusTooManyRequests, view, pageData{Title: "Sign in", Data: data})
	return true
}

// refuse records the failure for the account and the address and shows the form again.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, view string, data signInData, name string, now time.Time) {
	s.byAccount.Fail(accountKey(name), now)
	s.byAddress.Fail(clientAddress(r), now)
	data.Refusal = refusal
	if view == "sign_in_code" {
		data.Refusal = codeRefusal
	}
	if view == "sign_in" {
		data.Providers = s.signInProviders(r.Context())
	}
	s.render(w, r, http.StatusUnprocessableEntity, view, pageData{Title: "Sign in", Data: data})
}

func accountKey(name string) string { return "account:" + strings.ToLower(name) }

// clientAddress is the peer's IP. Forwarded headers are not trusted: any
// client could set them to escape the per-address limit.
func clientAddress(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "address:" + host
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
