package api

import (
	"errors"
	"net/http"
	"strings"

	"wharf/internal/audit"
	"wharf/internal/auth/apitoken"
	"wharf/internal/auth/oidc"
	"wharf/internal/persistence"
)

// HashToken is how an API token is stored and looked up (see package apitoken).
func HashToken(token string) string { return apitoken.Hash(token) }

// authenticate admits a request carrying "Authorization: Bearer <token>" for an unrevoked
// API token, recording token:<name> as its actor, or for an enabled identity provider's
// access token (a JWT) of a user who may sign in, recording user:<name>.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearerToken(r)
		if !ok {
			s.unauthorized(w, r, "an API token is required: send Authorization: Bearer <token>")
			return
		}
		t, err := s.store.FindAPIToken(r.Context(), HashToken(token))
		if errors.Is(err, persistence.ErrNotFound) && s.oidc != nil && strings.Count(token, ".") == 2 {
			s.authenticateJWT(w, r, token, next)
			return
		}
		if errors.Is(err, persistence.ErrNotFound) || (err == nil && t.RevokedAt != nil) {
			s.unauthorized(w, r, "the API token is unknown or revoked")
			return
		}
		if err != nil {
			s.fail(w, r, err)
			return
		}
		info := infoOf(r.Context())
		info.actor, info.scope = "token:"+t.Name, t.Target
		// Changes the request makes are audited as the token's.
		next.ServeHTTP(w, r.WithContext(audit.WithActor(r.Context(), "token:"+t.Name)))
	})
}

// authenticateJWT admits a provider's access token: verified by the provider's keys
// (issuer, audience, expiry, an asymmetric algorithm) and mapped to its user by issuer and
// subject only. Why a token is refused is logged, not told.
func (s *Server) authenticateJWT(w http.ResponseWriter, r *http.Request, token string, next http.Handler) {
	id, p, err := s.oidc.VerifyAccessToken(r.Context(), token)
	if err != nil {
		if !errors.Is(err, oidc.ErrRejected) && !errors.Is(err, oidc.ErrNotJWT) && !errors.Is(err, oidc.ErrUnavailable) {
			s.fail(w, r, err)
			return
		}
		s.log.InfoContext(r.Context(), "bearer token refused", "request_id", requestID(r.Context()), "provider", p.Name, "err", err)
		s.unauthorized(w, r, "the bearer token is not a valid API token or access token")
		return
	}
	u, err := s.store.GetUserByOIDC(r.Context(), id.Issuer, id.Subject)
	if errors.Is(err, persistence.ErrNotFound) || (err == nil && u.Disabled) {
		s.log.InfoContext(r.Context(), "bearer token refused", "request_id", requestID(r.Context()), "provider", p.Name,
			"err", "no enabled user has the token's identity; a user is created by signing in to the web UI once")
		s.unauthorized(w, r, "the bearer token is not a valid API token or access token")
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	actor := "user:" + string(u.Name)
	info := infoOf(r.Context())
	info.actor, info.role = actor, u.Role
	next.ServeHTTP(w, r.WithContext(audit.WithActor(r.Context(), actor)))
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
