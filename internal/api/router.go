package api

import (
	"net/http"
	"strings"

	"wharf/internal/persistence"
	"wharf/internal/probe"
)

// bodyKind is what a route's request body must be.
type bodyKind int

const (
	bodyNone      bodyKind = iota // no body is read
	bodyJSON                      // Content-Type application/json, at most maxJSONBody
	bodyMultipart                 // multipart/form-data with an X-Requested-With header
)

// route is one mounted operation. The table is data so that the OpenAPI test can compare
// it with the document.
type route struct {
	method string
	path   string
	// public routes need no token.
	public bool
	// scoped routes admit a token scoped to a target instance; no other route does.
	scoped bool
	body   bodyKind
	handle http.HandlerFunc
}

func (rt route) pattern() string { return rt.method + " " + rt.path }

// routes lists every route the server mounts.
func (s *Server) routes() []route {
	return append([]route{
		{method: "GET", path: "/healthz", public: true, handle: probe.Healthz},
		{method: "GET", path: "/readyz", public: true, handle: probe.Readyz(s.ready)},
		{method: "GET", path: "/api/v1/openapi.yaml", public: true, handle: s.openAPI},
		{method: "GET", path: "/api/v1/health", handle: s.health},
		{method: "GET", path: "/api/v1/events", handle: s.events},

		{method: "GET", path: "/api/v1/organizations", handle: s.listParties(organizations)},
		{method: "POST", path: "/api/v1/organizations", body: bodyJSON, handle: s.createParty(organizations)},
		{method: "GET", path: "/api/v1/organizations/{name}", handle: s.getParty(organizations)},
		{method: "PUT", path: "/api/v1/organizations/{name}", body: bodyJSON, handle: s.updateParty(organizations)},
		{method: "DELETE", path: "/api/v1/organizations/{name}", handle: s.deleteParty(organizations)},

		{method: "GET", path: "/api/v1/partners", handle: s.listParties(partners)},
		{method: "POST", path: "/api/v1/partners", body: bodyJSON, handle: s.createParty(partners)},
		{method: "GET", path: "/api/v1/partners/{name}", handle: s.getParty(partners)},
		{method: "PUT", path: "/api/v1/partners/{name}", body: bodyJSON, handle: s.updateParty(partners)},
		{method: "DELETE", path: "/api/v1/partners/{name}", handle: s.deleteParty(partners)},
		{method: "GET", path: "/api/v1/partners/{name}/pause", handle: s.getPartnerPause},
		{method: "POST", path: "/api/v1/partners/{name}/pause", body: bodyJSON, handle: s.pausePartner},
		{method: "POST", path: "/api/v1/partners/{name}/resume", body: bodyJSON, handle: s.resumePartner},

		// Retention (docs/retention.md).
		{method: "GET", path: "/api/v1/organizations/{name}/retention", handle: s.getPartyRetention(organizations)},
		{method: "PUT", path: "/api/v1/organizations/{name}/retention", body: bodyJSON, handle: s.putPartyRetention(organizations)},
		{method: "GET", path: "/api/v1/partners/{name}/retention", handle: s.getPartyRetention(partners)},
		{method: "PUT", path: "/api/v1/partners/{name}/retention", body: bodyJSON, handle: s.putPartyRetention(partners)},
		{method: "GET", path: "/api/v1/history", handle: s.listHistory},

		{method: "GET", path: "/api/v1/routes", handle: s.listRoutes},
		{method: "POST", path: "/api/v1/routes", body: bodyJSON, handle: s.createRoute},
		{method: "GET", path: "/api/v1/routes/{id}", handle: s.getRoute},
		{method: "PUT", path: "/api/v1/routes/{id}", body: bodyJSON, handle: s.updateRoute},
		{method: "DELETE", path: "/api/v1/routes/{id}", handle: s.deleteRoute},

		{method: "GET", path: "/api/v1/certificates", handle: s.listCertificates},
		{method: "POST", path: "/api/v1/certificates", body: bodyMultipart, handle: s.createCertificates},
		{method: "GET", path: "/api/v1/certificates/{id}", handle: s.getCertificate},
		{method: "DELETE", path: "/api/v1/certificates/{id}", handle: s.deleteCertificate},
		{method: "POST", path: "/api/v1/certificates/generate", body: bodyJSON, handle: s.generateCertificate},
		{method: "GET", path: "/api/v1/certificates/{id}/csr", handle: s.certificateRequest},
		{method: "GET", path: "/api/v1/certificates/{id}/pem", handle: s.downloadCertificate(false)},
		{method: "GET", path: "/api/v1/certificates/{id}/der", handle: s.downloadCertificate(true)},

		{method: "GET", path: "/api/v1/plugins/types", handle: s.listPluginTypes},
		{method: "GET", path: "/api/v1/plugins/configs/{type}", handle: s.listPluginConfigs},
		{method: "POST", path: "/api/v1/plugins/configs/{type}", body: bodyJSON, handle: s.createPluginConfig},
		{method: "GET", path: "/api/v1/plugins/configs/{type}/{name}", handle: s.getPluginConfig},
		{method: "PUT", path: "/api/v1/plugins/configs/{type}/{name}", body: bodyJSON, handle: s.updatePluginConfig},
		{method: "DELETE", path: "/api/v1/plugins/configs/{type}/{name}", handle: s.deletePluginConfig},

		{method: "GET", path: "/api/v1/messages", handle: s.listMessages},
		{method: "POST", path: "/api/v1/messages", body: bodyMultipart, handle: s.sendMessage},
		{method: "GET", path: "/api/v1/messages/{id}", handle: s.getMessage},
		{method: "GET", path: "/api/v1/messages/{id}/payload", handle: s.downloadPayload},
		{method: "POST", path: "/api/v1/messages/{id}/redispatch", body: bodyJSON, handle: s.redispatch},
		{method: "POST", path: "/api/v1/messages/{id}/deliveries/{delivery_id}/redeliver", body: bodyJSON, handle: s.redeliver},
		{method: "POST", path: "/api/v1/messages/{id}/erase", body: bodyJSON, handle: s.eraseMessage},
		{method: "POST", path: "/api/v1/erasures", body: bodyJSON, handle: s.erase},

		{method: "GET", path: "/api/v1/trace", handle: s.trace},

		{method: "POST", path: "/api/v1/deliveries/{id}/complete", body: bodyJSON, scoped: true, handle: s.settleHandoff(true)},
		{method: "POST", path: "/api/v1/deliveries/{id}/fail", body: bodyJSON, scoped: true, handle: s.settleHandoff(false)},

		{method: "POST", path: "/api/v1/callbacks/{target}", public: true, body: bodyJSON, handle: s.acceptCallback},
		{method: "GET", path: "/api/v1/callbacks/{target}/secrets", handle: s.listCallbackSecrets},
		{method: "POST", path: "/api/v1/callbacks/{target}/secrets", body: bodyJSON, handle: s.createCallbackSecret},
		{method: "POST", path: "/api/v1/callbacks/{target}/secrets/{id}/revoke", body: bodyJSON, handle: s.revokeCallbackSecret},

		{method: "GET", path: "/api/v1/tokens", handle: s.listTokens},
		{method: "POST", path: "/api/v1/tokens", body: bodyJSON, handle: s.createToken},
		{method: "POST", path: "/api/v1/tokens/{name}/revoke", body: bodyJSON, handle: s.revokeToken},
		{method: "GET", path: "/api/v1/sessions", handle: s.listSessions},
		{method: "POST", path: "/api/v1/deliveries/{id}/resubmit", body: bodyJSON, handle: s.deliveryAction(resubmitOp, "NOT_RESUBMITTABLE")},
		{method: "POST", path: "/api/v1/deliveries/{id}/skip", body: bodyJSON, handle: s.deliveryAction(skipOp, "NOT_SKIPPABLE")},

		{method: "GET", path: "/api/v1/dead-letters", handle: s.listDeadLetters},
		{method: "POST", path: "/api/v1/dead-letters/redeliver", body: bodyJSON, handle: s.bulkDeadLetters(persistence.ActionRedeliver)},
		{method: "POST", path: "/api/v1/dead-letters/resubmit", body: bodyJSON, handle: s.bulkDeadLetters(persistence.ActionResubmit)},
		{method: "POST", path: "/api/v1/dead-letters/skip", body: bodyJSON, handle: s.bulkDeadLetters(persistence.ActionSkip)},

		{method: "GET", path: "/api/v1/settings", handle: s.getSettings},
		{method: "PUT", path: "/api/v1/settings", body: bodyJSON, handle: s.putSettings},
		{method: "GET", path: "/api/v1/settings/storage", handle: s.getStorageStatus},
		{method: "POST", path: "/api/v1/settings/storage/test", handle: s.testStorage},

		{method: "GET", path: "/api/v1/identity-providers", handle: s.listProviders},
		{method: "POST", path: "/api/v1/identity-providers", body: bodyJSON, handle: s.createProvider},
		{method: "GET", path: "/api/v1/identity-providers/{name}", handle: s.getProvider},
		{method: "PUT", path: "/api/v1/identity-providers/{name}", body: bodyJSON, handle: s.updateProvider},
		{method: "DELETE", path: "/api/v1/identity-providers/{name}", handle: s.deleteProvider},

		{method: "GET", path: "/api/v1/unknown-senders", handle: s.listUnknownSenders},

		{method: "GET", path: "/api/v1/audit", handle: s.listAudit},
		{method: "POST", path: "/api/v1/audit/verify", body: bodyJSON, handle: s.verifyAudit},

		{method: "GET", path: "/api/v1/services", handle: s.listServices},
		{method: "POST", path: "/api/v1/services/{type}/{name}/start", body: bodyJSON, handle: s.serviceAction(actionStart)},
		{method: "POST", path: "/api/v1/services/{type}/{name}/stop", body: bodyJSON, handle: s.serviceAction(actionStop)},
		{method: "POST", path: "/api/v1/services/{type}/{name}/restart", body: bodyJSON, handle: s.serviceAction(actionRestart)},
	}, s.moduleRoutes()...)
}

// wrap composes a route's middleware: the token check first (a caller without one learns
// nothing else), then the body's media type and size.
func (s *Server) wrap(rt route) http.Handler {
	var h http.Handler = rt.handle
	switch rt.body {
	case bodyJSON:
		h = s.requireJSON(h)
	case bodyMultipart:
		h = s.requireUpload(h)
	}
	if !rt.public {
		h = s.authenticate(s.limitScope(rt, h))
	}
	return h
}

// fallback answers paths under /api/v1/ that no route serves: 405 with Allow when the
// path exists for other methods, else 404, both as JSON errors.
func (s *Server) fallback(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var allowed []string
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
			probe := r.WithContext(r.Context())
			probe.Method = m
			if _, p := mux.Handler(probe); strings.HasPrefix(p, m+" ") {
				allowed = append(allowed, m)
			}
		}
		if len(allowed) > 0 {
			w.Header().Set("Allow", strings.Join(allowed, ", "))
			s.fail(w, r, &apiError{status: http.StatusMethodNotAllowed, code: "METHOD_NOT_ALLOWED",
				message: "method " + r.Method + " is not allowed here; use " + strings.Join(allowed, ", ")})
			return
		}
		s.fail(w, r, &apiError{status: http.StatusNotFound, code: "NOT_FOUND", message: "no such resource"})
	})
}
