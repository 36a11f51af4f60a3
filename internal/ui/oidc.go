package ui

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"wharf/internal/auth/oidc"
	"wharf/internal/persistence"
	"wharf/internal/ui/session"
)

// Single sign-on: GET /ui/oidc/start/{name} sends the browser to the provider with a
// fresh state, nonce and PKCE verifier, which travel sealed in a short-lived cookie;
// GET /ui/oidc/callback checks the state, redeems the code, verifies the ID token and
// issues the same session as a password sign-in.

const (
	oidcCookie      = "wharf_oidc"
	oidcCookiePath  = "/ui/oidc/"
	oidcFlowTTL     = 10 * time.Minute
	oidcPurpose     = "oidc"
	oidcCallbackURL = "/ui/oidc/callback"
)

// oidcFlow is the sealed content of the flow cookie.
type oidcFlow struct {
	Purpose  string `json:"k"`
	Provider string `json:"p"`
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	Next     string `json:"x,omitempty"`
	Expires  int64  `json:"e"`
}

// signInProvider is a "Sign in with …" button.
type signInProvider struct {
	Name        string
	DisplayName string
}

// signInProviders lists the enabled providers for the sign-in page. A store failure
// leaves the buttons out: password sign-in must still work.
func (s *Server) signInProviders(ctx context.Context) []signInProvider {
	if s.oidc == nil {
		return nil
	}
	list, err := s.store.ListIdentityProviders(ctx)
	if err != nil {
		s.log.ErrorContext(ctx, "list identity providers for the sign-in page", "err", err)
		return nil
	}
	var out []signInProvider
	for _, p := range list {
		if p.Enabled {
			out = append(out, signInProvider{Name: p.Name, DisplayName: p.DisplayName})
		}
	}
	return out
}

func (s *Server) callbackURL(r *http.Request) string { return s.baseURL(r) + oidcCallbackURL }

// oidcRefuse shows the sign-in page again with why single sign-on did not work.
func (s *Server) oidcRefuse(w http.ResponseWriter, r *http.Request, status int, msg string) {
	s.render(w, r, status, "sign_in", pageData{Title: "Sign in", Data: signInData{
		Refusal: msg, Token: s.signInToken(w, r), Providers: s.signInProviders(r.Context())}})
}

func (s *Server) oidcStart(w http.ResponseWriter, r *http.Request) {
	if s.oidc == nil {
		s.notFound(w, r)
		return
	}
	rec, err := s.store.GetIdentityProvider(r.Context(), r.PathValue("name"))
	if errors.Is(err, persistence.ErrNotFound) || (err == nil && !rec.Enabled) {
		s.notFound(w, r)
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	f, err := s.oidc.Begin(r.Context(), rec, s.callbackURL(r))
	if err != nil {
		s.log.WarnContext(r.Context(), "single sign-on unavailable", "provider", rec.Name, "err", err)
		s.oidcRefuse(w, r, http.StatusServiceUnavailable, "Signing in with "+rec.DisplayName+
			" is not possible right now: the provider cannot be reached. Try again later, or sign in with your password.")
		return
	}
	plain, err := json.Marshal(oidcFlow{Purpose: oidcPurpose, Provider: rec.Name, State: f.State, Nonce: f.Nonce,
		Verifier: f.Verifier, Next: r.URL.Query().Get("next"), Expires: s.now().Add(oidcFlowTTL).Unix()})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	sealed, err := s.sealer.Seal(plain)
	clear(plain)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// Lax, not Strict: the provider sends the browser back with a cross-site navigation.
	http.SetCookie(w, &http.Cookie{Name: oidcCookie, Value: base64.RawURLEncoding.EncodeToString(sealed), Path: oidcCookiePath,
		MaxAge: int(oidcFlowTTL / time.Second), HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.secureCookies(r)})
	http.Redirect(w, r, f.URL, http.StatusSeeOther)
}

// openFlow reads and removes the flow cookie; a missing, forged or expired one is false.
func (s *Server) openFlow(w http.ResponseWriter, r *http.Request) (oidcFlow, bool) {
	var f oidcFlow
	c, err := r.Cookie(oidcCookie)
	if err != nil {
		return f, false
	}
	// A flow is used once, whatever comes of it.
	http.SetCookie(w, &http.Cookie{Name: oidcCookie, Value: "", Path: oidcCookiePath, MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.secureCookies(r)})
	raw, err := base64.RawURLEncoding.DecodeString(c.Value)
	if err != nil {
		return f, false
	}
	plain, err := s.sealer.Open(raw)
	if err != nil {
		return f, false
	}
	err = json.Unmarshal(plain, &f)
	clear(plain)
	if err != nil || f.Purpose != oidcPurpose || s.now().Unix() >= f.Expires {
		return oidcFlow{}, false
	}
	return f, true
}

func (s *Server) oidcCallback(w http.ResponseWriter, r *http.Request) {
	if s.oidc == nil {
		s.notFound(w, r)
		return
	}
	q := r.URL.Query()
	f, ok := s.openFlow(w, r)
	if !ok {
		s.oidcRefuse(w, r, http.StatusBadRequest, "The sign-in took too long or was started in another browser. Please start again.")
		return
	}
	if q.Get("state") == "" || subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(f.State)) != 1 {
		s.log.WarnContext(r.Context(), "single sign-on refused: the state does not match", "provider", f.Provider)
		s.oidcRefuse(w, r, http.StatusBadRequest, "The sign-in answer does not belong to this sign-in. Please start again.")
		return
	}
	rec, err := s.store.GetIdentityProvider(r.Context(), f.Provider)
	if errors.Is(err, persistence.ErrNotFound) || (err == nil && !rec.Enabled) {
		s.oidcRefuse(w, r, http.StatusBadRequest, "This way of signing in is no longer offered.")
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if e := q.Get("error"); e != "" || q.Get("code") == "" {
		s.log.InfoContext(r.Context(), "single sign-on refused by the provider", "provider", rec.Name, "error", e)
		s.oidcRefuse(w, r, http.StatusUnauthorized, rec.DisplayName+" did not sign you in.")
		return
	}
	id, err := s.oidc.Finish(r.Context(), rec, s.callbackURL(r), q.Get("code"),
		oidc.Flow{State: f.State, Nonce: f.Nonce, Verifier: f.Verifier})
	if err != nil {
		s.log.WarnContext(r.Context(), "single sign-on failed", "provider", rec.Name, "err", err)
		if errors.Is(err, oidc.ErrUnavailable) {
			s.oidcRefuse(w, r, http.StatusServiceUnavailable, rec.DisplayName+" cannot be reached right now. Try again later, or sign in with your password.")
			return
		}
		s.oidcRefuse(w, r, http.StatusUnauthorized, "The answer of "+rec.DisplayName+" could not be verified. Please start again.")
		return
	}
	u, err := oidc.SignInUser(r.Context(), s.store, rec.Name, id)
	if errors.Is(err, oidc.ErrDisabled) {
		s.log.InfoContext(r.Context(), "single sign-on refused: the user is disabled", "provider", rec.Name, "err", err)
		s.oidcRefuse(w, r, http.StatusForbidden, "Your account cannot sign in. Ask an administrator.")
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if _, err := s.sessions.Issue(w, r, u); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.store.TouchUserSignIn(r.Context(), u.ID, s.now()); err != nil {
		s.log.ErrorContext(r.Context(), "record sign-in", "user", u.Name, "err", err)
	}
	s.log.InfoContext(r.Context(), "user signed in", "user", u.Name, "provider", rec.Name)
	http.Redirect(w, r, session.SafeNext(f.Next), http.StatusSeeOther)
}
