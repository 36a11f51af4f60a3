package session

import (
	"context"
	"crypto/subtle"
	"errors"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"wharf/internal/audit"
)

type contextKey struct{}

// NewContext returns ctx carrying s; Require does this for every request it lets
// through, and handler tests use it to stand in for a signed-in request.
func NewContext(ctx context.Context, s *Session) context.Context {
	return context.WithValue(ctx, contextKey{}, s)
}

// FromContext returns the session Require put in ctx.
func FromContext(ctx context.Context) (*Session, bool) {
	s, ok := ctx.Value(contextKey{}).(*Session)
	return s, ok && s != nil
}

// SignInPath is where Require sends a browser that has no session.
const SignInPath = "/ui/sign-in"

// HomePath is where SafeNext sends a browser whose "next" is not a local path.
const HomePath = "/ui/"

// Require lets through only requests with a valid session, which it keeps alive (Touch)
// and puts in the context. Without one, a GET or HEAD is redirected to sign in with the
// page to return to; any other method is 401, because replaying it after sign-in would
// repeat a change the user may no longer intend.
func (m *Manager) Require(next http.Handler) http.Handler { return m.require(next, true) }

// RequireWithoutRenewal is Require for requests the browser makes by itself (a live
// stream, its reconnects): they neither keep an idle session alive nor set a cookie, so
// a stream's late answer cannot bring back a cookie that signing out removed.
func (m *Manager) RequireWithoutRenewal(next http.Handler) http.Handler {
	return m.require(next, false)
}

func (m *Manager) require(next http.Handler, renew bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, err := m.Load(r)
		if err != nil && !errors.Is(err, ErrNoSession) {
			m.log.ErrorContext(r.Context(), "load session", "err", err)
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		if err != nil {
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				http.Redirect(w, r, SignInPath+"?next="+url.QueryEscape(SafeNext(r.URL.RequestURI())), http.StatusSeeOther)
				return
			}
			http.Error(w, "sign in required", http.StatusUnauthorized)
			return
		}
		if renew {
			if err := m.Touch(w, s); err != nil {
				m.log.ErrorContext(r.Context(), "touch session", "err", err)
			}
		}
		// Changes the request makes are audited as the signed-in user's.
		ctx := audit.WithActor(NewContext(r.Context(), s), "user:"+string(s.User.Name))
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// SafeNext returns next when it is a path on this site and HomePath otherwise, so a
// sign-in link cannot send the user to another origin ("//evil.example",
// "https://evil.example", "/\evil.example" which browsers read as "//").
func SafeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n\t") {
		return HomePath
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return HomePath
	}
	return next
}

// CSRFField and CSRFHeader carry the session's CSRF token in a form and in a script's
// request respectively.
const (
	CSRFField  = "csrf_token"
	CSRFHeader = "X-CSRF-Token"
)

// CSRF refuses a state-changing request (any method but GET, HEAD and OPTIONS, so an
// unusual method is not a way around it) that does not carry the session's token. It runs inside Require; a request without a session is refused
// too, since there is no token to hold it to. The header is checked first so a script's
// request never needs its body parsed here.
func CSRF(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			next.ServeHTTP(w, r)
			return
		}
		s, ok := FromContext(r.Context())
		if !ok {
			http.Error(w, "invalid or missing CSRF token", http.StatusForbidden)
			return
		}
		got := r.Header.Get(CSRFHeader)
		if got == "" {
			var err error
			if got, err = formToken(r); err != nil {
				if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
					http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
					return
				}
				http.Error(w, "malformed form", http.StatusBadRequest)
				return
			}
		}
		if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(s.CSRFToken)) != 1 {
			http.Error(w, "invalid or missing CSRF token", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// multipartMemory is the standard library's default, so a handler's own
// ParseMultipartForm or FormFile after CSRF finds the form already parsed.
const multipartMemory = 32 << 20

// formToken parses the request's form and returns its CSRF field. Only the body is read:
// a token in the URL leaks through logs and Referer, so it is not accepted.
func formToken(r *http.Request) (string, error) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var err error
	if ct == "multipart/form-data" {
		err = r.ParseMultipartForm(multipartMemory)
	} else {
		err = r.ParseForm()
	}
	if err != nil {
		return "", err
	}
	return r.PostForm.Get(CSRFField), nil
}

// ContentSecurityPolicy allows nothing inline and nothing from another origin, and no
// framing of any page.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// SecurityHeaders sets the headers every UI response carries. Cache-Control is no-store
// because pages show signed-in data; a handler for static assets sets its own.
func SecurityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// LimitBody caps request bodies at n bytes; reading past it fails with
// *http.MaxBytesError and closes the connection after the response.
func LimitBody(n int64) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Body != nil {
				r.Body = http.MaxBytesReader(w, r.Body, n)
			}
			next.ServeHTTP(w, r)
		})
	}
}
