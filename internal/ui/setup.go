package ui

import (
	"context"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"wharf/internal/audit"
	"wharf/internal/auth/password"
	"wharf/internal/auth/qrsvg"
	"wharf/internal/auth/recovery"
	"wharf/internal/auth/setuplink"
	"wharf/internal/auth/totp"
	"wharf/internal/persistence"
)

// setupData is the set-up form; Errors is keyed by field name.
type setupData struct {
	Name   persistence.UserName
	QR     template.HTML
	Secret string
	State  string
	Code   string
	Errors map[string]string
}

// setupTokenHash is how the store keys a set-up link (see package setuplink).
func setupTokenHash(token string) string { return setuplink.Hash(token) }

// setupUser finds the user whose set-up link has tokenHash and is valid at now,
// without using the link: only the completed form does.
func (s *Server) setupUser(ctx context.Context, tokenHash string, now time.Time) (persistence.User, bool, error) {
	u, err := s.store.FindUserBySetupToken(ctx, tokenHash, now)
	switch {
	case errors.Is(err, persistence.ErrNotFound):
		return persistence.User{}, false, nil
	case err != nil:
		return persistence.User{}, false, err
	}
	return u, true, nil
}

// setupForm shows the form for a valid link. The TOTP secret it offers lives
// only in the page and in a sealed hidden field until the form completes, so
// opening the link stores nothing and an abandoned form leaves no trace.
func (s *Server) setupForm(w http.ResponseWriter, r *http.Request) {
	now := s.now()
	tokenHash := setupTokenHash(r.PathValue("token"))
	u, ok, err := s.setupUser(r.Context(), tokenHash, now)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !ok {
		s.notFound(w, r)
		return
	}
	key, err := totp.NewSecret(s.issuer, string(u.Name))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	state, err := s.sealState(formState{Purpose: purposeSetup, Expires: u.SetupExpiresAt.Unix(),
		UserID: u.ID, TokenHash: tokenHash, Secret: key.Secret})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.renderSetup(w, r, http.StatusOK, u, key.Secret, setupData{State: state})
}

func (s *Server) renderSetup(w http.ResponseWriter, r *http.Request, status int, u persistence.User, secret string, d setupData) {
	key := totpURL(s.issuer, string(u.Name), secret)
	qr, err := qrsvg.SVG(key)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d.Name, d.QR, d.Secret = u.Name, qr, secret
	s.render(w, r, status, "setup", pageData{Title: "Set up your account", Data: d})
}

// setupSubmit checks the form against the new secret first and only then
// spends the link, so a refused form can be corrected and sent again.
func (s *Server) setupSubmit(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		badForm(w, err)
		return
	}
	now := s.now()
	tokenHash := setupTokenHash(r.PathValue("token"))
	u, ok, err := s.setupUser(r.Context(), tokenHash, now)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !ok {
		s.notFound(w, r)
		return
	}
	stateValue := r.PostForm.Get("state")
	st, err := s.openState(stateValue, purposeSetup, now)
	if err != nil || st.TokenHash != tokenHash || st.UserID != u.ID {
		// A stale or foreign form starts again with a fresh secret.
		http.Redirect(w, r, r.URL.Path, http.StatusSeeOther)
		return
	}

	pw, pw2 := r.PostForm.Get("password"), r.PostForm.Get("password_confirm")
	code := strings.TrimSpace(r.PostForm.Get("code"))
	errs := make(map[string]string)
	if err := password.CheckStrength(pw, string(u.Name), u.DisplayName, s.issuer, "wharf"); err != nil {
		errs["password"] = sentence(err.Error())
	}
	if pw != pw2 {
		errs["password_confirm"] = "The two passwords are not the same."
	}
	step, codeOK := totp.Validate(st.Secret, code, now, u.LastTOTPStep)
	if !codeOK {
		errs["code"] = "The code is not right. Type the code your app shows now; check the device's clock if it keeps failing."
	}
	if len(errs) > 0 {
		s.renderSetup(w, r, http.StatusUnprocessableEntity, u, st.Secret,
			setupData{State: stateValue, Code: code, Errors: errs})
		return
	}

	pwHash, err := password.Hash(pw)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	plainCodes, codeHashes, err := recovery.Generate()
	if err != nil {
		s.fail(w, r, err)
		return
	}
	sealedTOTP, err := s.sealer.Seal([]byte(st.Secret))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// One conditional write uses the link and completes the set-up: of two tabs posting
	// at once one wins, and a failure leaves the link usable.
	// The user completes their own set-up: the audit log names them.
	ctx := audit.WithActor(r.Context(), "user:"+string(u.Name))
	claimed, err := s.store.CompleteUserSetupWithToken(ctx, st.UserID, tokenHash, now, pwHash, sealedTOTP, codeHashes)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	// The enrolment code is spent, so it cannot also sign in.
	if err := s.store.AcceptTOTPStep(r.Context(), claimed.ID, step); err != nil && !errors.Is(err, persistence.ErrConflict) {
		s.log.ErrorContext(r.Context(), "record enrolment TOTP step", "user_id", claimed.ID, "err", err)
	}
	s.log.InfoContext(r.Context(), "user completed set-up", "user", claimed.Name)
	// The codes are rendered in this response only: they are stored hashed and
	// no later page can show them.
	s.render(w, r, http.StatusOK, "setup_done", pageData{Title: "Your recovery codes",
		Data: struct {
			Name  persistence.UserName
			Codes []string
		}{claimed.Name, plainCodes}})
}

// totpURL is the otpauth URL for an existing secret, built as totp.NewSecret
// builds it, so a re-shown form offers the same QR code the user may have scanned.
func totpURL(issuer, account, secret string) string {
	v := url.Values{}
	v.Set("secret", secret)
	v.Set("issuer", issuer)
	v.Set("period", "30")
	v.Set("algorithm", "SHA1")
	v.Set("digits", "6")
	u := url.URL{Scheme: "otpauth", Host: "totp", Path: "/" + issuer + ":" + account, RawQuery: v.Encode()}
	return u.String()
}

// sentence capitalises the first letter of a library error shown as a message.
func sentence(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:] + "."
}
