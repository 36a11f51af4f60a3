package api

import (
	"errors"
	"net/http"
	"strings"

	"wharf/internal/audit"
	"wharf/internal/auth/apitoken"
	"wharf/internal/persistence"
)

// HashToken is how an API token is stored and looked up (see package apitoken).
func HashToken(token string) string { return apitoken.Hash(token) }

// authenticate admits a request carrying "Authorization: Bearer <token>" for an unrevoked
// token and records token:<name> as its actor.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearerToken(r)
		if !ok {
			s.unauthorized(w, r, "an API token is required: send Authorization: Bearer <token>")
			return
		}
		t, err := s.store.FindAPIToken(r.Context(), HashToken(token))
		if errors.Is(err, persistence.ErrNotFound) || (err == nil && t.RevokedAt != nil) {
			s.unauthorized(w, r, "the API token is unknown or revoked")
			return
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
		infoOf(r.Context()).actor = "token:" + t.Name
		// Changes the request makes are audited as the token's.
		next.ServeHTTP(w, r.WithContext(audit.WithActor(r.Context(), "token:"+t.Name)))
	})
}

func bearerToken(r *http.Request) (string, bool) {
	vals := r.Header.Values("Authorization")
	if len(vals) != 1 {
		return "", false
	}
	scheme, token, ok := strings.Cut(vals[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	if token == "" || strings.ContainsAny(token, " \t") {
		return "", false
	}
	return token, true
}

func (s *Server) unauthorized(w http.ResponseWriter, r *http.Request, msg string) {
	w.Header().Set("WWW-Authenticate", "Bearer")
	s.fail(w, r, &apiError{status: http.StatusUnauthorized, code: "UNAUTHORIZED", message: msg})
}
