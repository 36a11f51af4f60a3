package as2

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"wharf/internal/api"
	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/protocol/as2/profile"
	"wharf/internal/records"
)

// CheckStep is one stage of a connection check.
type CheckStep struct {
	Step       string `json:"step"` // dns, tcp, tls, http
	OK         bool   `json:"ok"`
	Detail     string `json:"detail"`
	DurationMS int64  `json:"duration_ms"`
}

// CheckResult is what a connection check found; it stops at the first failed step.
type CheckResult struct {
	Partner     string      `json:"partner"`
	EndpointURL string      `json:"endpoint_url"`
	OK          bool        `json:"ok"`
	Steps       []CheckStep `json:"steps"`
}

// checkConnection walks the way to a partner's endpoint step by step (name lookup, TCP,
// TLS with the profile's trust, one HTTP request), so an operator sees where it breaks.
// The HTTP answer is judged by judgeProbe: AS2 endpoints answer a GET with anything from
// 200 to 405.
func checkConnection(ctx context.Context, out profile.Outbound, userAgent string) CheckResult {
	res := CheckResult{Partner: string(out.Remote.Partner), EndpointURL: out.Remote.EndpointURL}
	timeout := time.Duration(out.Remote.ConnectTimeoutSeconds) * time.Second
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	step := func(name string, fn func() (string, error)) bool {
		start := time.Now()
		detail, err := fn()
		s := CheckStep{Step: name, OK: err == nil, Detail: detail, DurationMS: time.Since(start).Milliseconds()}
		if err != nil {
			s.Detail = err.Error()
		}
		res.Steps = append(res.Steps, s)
		return err == nil
	}
	u, err := url.Parse(out.Remote.EndpointURL)
	if err != nil || u.Host == "" {
		res.Steps = append(res.Steps, CheckStep{Step: "url", Detail: "the endpoint URL cannot be read"})
		return res
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = map[string]string{"https": "443"}[u.Scheme]
		if port == "" {
			port = "80"
		}
	}
	var addrs []string
	if !step("dns", func() (string, error) {
		lctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		var err error
		addrs, err = net.DefaultResolver.LookupHost(lctx, host)
		if err != nil {
			return "", fmt.Errorf("look up %s: %w", host, err)
		}
		return strings.Join(addrs, ", "), nil
	}) {
		return res
	}
	var conn net.Conn
	if !step("tcp", func() (string, error) {
		d := net.Dialer{Timeout: timeout}
		var err error
		conn, err = d.DialContext(ctx, "tcp", net.JoinHostPort(host, port))
		if err != nil {
			return "", fmt.Errorf("connect to %s: %w", net.JoinHostPort(host, port), err)
		}
		return "connected to " + conn.RemoteAddr().String(), nil
	}) {
		return res
	}
	conn.Close()
	tlsConf := out.TLSConfig()
	tlsConf.ServerName = host
	if u.Scheme == "https" {
		if !step("tls", func() (string, error) {
			d := tls.Dialer{NetDialer: &net.Dialer{Timeout: timeout}, Config: tlsConf}
			c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, port))
			if err != nil {
				return "", fmt.Errorf("TLS handshake with %s: %w; %s", host, err, out.Remote.TrustHint())
			}
			defer c.Close()
			st := c.(*tls.Conn).ConnectionState()
			leaf := st.PeerCertificates[0]
			return fmt.Sprintf("%s, certificate %s valid until %s", tls.VersionName(st.Version),
				leaf.Subject.String(), leaf.NotAfter.UTC().Format(time.RFC3339)), nil
		}) {
			return res
		}
	}
	res.OK = step("http", func() (string, error) {
		client := &http.Client{
			Timeout:       timeout,
			Transport:     &http.Transport{TLSClientConfig: tlsConf, Proxy: http.ProxyFromEnvironment},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
		defer client.CloseIdleConnections()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, out.Remote.EndpointURL, nil)
		if err != nil {
			return "", err
		}
		req.Header.Set("User-Agent", userAgent)
		resp, err := client.Do(req)
		if err != nil {
			return "", fmt.Errorf("GET %s: %w", u.Redacted(), err)
		}
		resp.Body.Close()
		return judgeProbe(resp)
	})
	return res
}

// testMessageInput is the body of a test-message request; both fields are optional.
type testMessageInput struct {
	Organization string `json:"organization"`
	Sender       string `json:"sender"`
}

// sendTestMessage sends a small text document to the partner through an as2-sender
// instance, as a message the operator can follow like any other.
func (rt *Runtime) sendTestMessage(ctx context.Context, partner persistence.PartyName, in testMessageInput, actor string) (persistence.Message, error) {
	org := in.Organization
	if org == "" {
		var err error
		if org, err = rt.defaultOrganization(ctx); err != nil {
			return persistence.Message{}, err
		}
	}
	if _, err := rt.dir.Outbound(ctx, org, string(partner)); err != nil {
		return persistence.Message{}, err
	}
	sender := in.Sender
	if sender == "" {
		cfgs, err := rt.core.Store.ListPluginConfigs(ctx, persistence.PluginAS2Sender)
		if err != nil {
			return persistence.Message{}, err
		}
		for _, c := range cfgs {
			if c.Enabled {
				sender = string(c.Name)
				break
			}
		}
		if sender == "" {
			return persistence.Message{}, &persistence.FieldError{Field: "sender", Message: "no enabled as2-sender instance exists"}
		}
	} else if c, err := rt.core.Store.GetPluginConfig(ctx, persistence.InstanceName(sender)); err != nil || c.Type != persistence.PluginAS2Sender {
		return persistence.Message{}, &persistence.FieldError{Field: "sender", Message: fmt.Sprintf("%q is not an as2-sender instance", sender)}
	}
	now := time.Now().UTC()
	body := fmt.Sprintf("Wharf AS2 test message from %s to %s, sent %s.\r\n", org, partner, now.Format(time.RFC3339))
	return records.SendMessage(ctx, rt.core.Store, rt.core.Ingest, records.SendInput{
		From: org, To: string(partner), Target: sender,
		FileName: "wharf-test-" + now.Format("20060102T150405Z") + ".txt",
		Body:     bytes.NewReader([]byte(body)),
		Actor:    actor,
	})
}

// defaultOrganization is the one organization with a local profile, else "local".
func (rt *Runtime) defaultOrganization(ctx context.Context) (string, error) {
	locals, total, err := rt.profiles.ListLocals(ctx, persistence.ListOptions{Limit: 2})
	if err != nil {
		return "", err
	}
	if total == 1 {
		return string(locals[0].Organization), nil
	}
	return "local", nil
}

func (rt *Runtime) toolRoutes() []module.APIRoute {
	partnerOf := func(r *http.Request) (persistence.PartyName, error) {
		p, err := persistence.ParsePartyName(r.PathValue("partner"))
		if err != nil {
			return "", &persistence.FieldError{Field: "partner", Message: err.Error()}
		}
		return p, nil
	}
	return []module.APIRoute{
		{Method: "POST", Path: "/api/v1/as2/remote-profiles/{partner}/connection-check", Body: module.BodyJSON,
			Handle: func(r *http.Request) (int, any, error) {
				partner, err := partnerOf(r)
				if err != nil {
					return 0, nil, err
				}
				var in testMessageInput
				if err := api.DecodeJSON(r, &in); err != nil {
					return 0, nil, err
				}
				org := in.Organization
				if org == "" {
					if org, err = rt.defaultOrganization(r.Context()); err != nil {
						return 0, nil, err
					}
				}
				out, err := rt.dir.Outbound(r.Context(), org, string(partner))
				if err != nil {
					return 0, nil, err
				}
				return http.StatusOK, checkConnection(r.Context(), out, rt.core.ProductName()), nil
			}},
		{Method: "POST", Path: "/api/v1/as2/remote-profiles/{partner}/test-message", Body: module.BodyJSON,
			Handle: func(r *http.Request) (int, any, error) {
				partner, err := partnerOf(r)
				if err != nil {
					return 0, nil, err
				}
				var in testMessageInput
				if err := api.DecodeJSON(r, &in); err != nil {
					return 0, nil, err
				}
				m, err := rt.sendTestMessage(r.Context(), partner, in, api.Actor(r))
				if err != nil {
					if errors.Is(err, module.ErrUnknownParty) {
						return 0, nil, fmt.Errorf("%w: %w", err, persistence.ErrNotFound)
					}
					return 0, nil, err
				}
				return http.StatusCreated, m, nil
			}},
	}
}

func isNotFound(err error) bool { return errors.Is(err, persistence.ErrNotFound) }
