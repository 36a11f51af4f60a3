package session

import (
	"fmt"
	"net/http"
	"net/url"
)

// SameOrigin refuses, with 403, a state-changing request (any method but GET, HEAD and
// OPTIONS) that a browser marks as coming from another origin. It is the second line
// behind the CSRF token and also covers the forms that have no session yet (sign-in,
// set-up), so another site cannot sign a browser in as someone else.
//
// A browser says where a request comes from in Sec-Fetch-Site (every current browser)
// and Origin (on every cross-origin POST): Sec-Fetch-Site must be "same-origin" or "none"
// (typed by the user); without it, Origin must name this host. An Origin equal to
// publicURL's origin passes either way, which covers a proxy that rewrites Host. A
// request with neither header is let through:
// browsers send at least one of them on every cross-origin POST, so it comes from a
// script or a tool, which the CSRF token still holds to the session. The checks are the
// standard library's http.CrossOriginProtection.
func SameOrigin(publicURL string) (func(http.Handler) http.Handler, error) {
	p := http.NewCrossOriginProtection()
	if publicURL != "" {
		u, err := url.Parse(publicURL)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, fmt.Errorf("same-origin check: public URL %q is not an absolute URL", publicURL)
		}
		if err := p.AddTrustedOrigin(u.Scheme + "://" + u.Host); err != nil {
			return nil, fmt.Errorf("same-origin check: %w", err)
		}
	}
	p.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "cross-origin request refused", http.StatusForbidden)
	}))
	return p.Handler, nil
}
