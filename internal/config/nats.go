package config

import "errors"

// NATSAuth is how a process authenticates to an external NATS cluster and checks its
// certificate. Credentials live in variables of their own, never in the URL, so the URL
// can be logged and shown.
type NATSAuth struct {
	CredsFile string // WHARF_NATS_CREDS: a NATS credentials file (JWT and NKey seed)
	User      string // WHARF_NATS_USER, with Password
	Password  string // WHARF_NATS_PASSWORD
	Token     string // WHARF_NATS_TOKEN
	TLSCA     string // WHARF_NATS_TLS_CA: PEM bundle the servers' certificates chain to
	TLSCert   string // WHARF_NATS_TLS_CERT: client certificate, with TLSKey
	TLSKey    string // WHARF_NATS_TLS_KEY
}

// natsProblems checks the bus settings against each other: one way to authenticate,
// pairs given whole, and nothing for an external bus without one. Messages name the
// variables only, never their values.
func (c *Config) natsProblems() []error {
	var errs []error
	a := c.NATS
	ways := 0
	for _, set := range []bool{a.CredsFile != "", a.User != "" || a.Password != "", a.Token != ""} {
		if set {
			ways++
		}
	}
	if ways > 1 {
		errs = append(errs, errors.New("WHARF_NATS_CREDS, WHARF_NATS_USER/WHARF_NATS_PASSWORD and WHARF_NATS_TOKEN: set only one of them"))
	}
	if (a.User == "") != (a.Password == "") {
		errs = append(errs, errors.New("WHARF_NATS_USER and WHARF_NATS_PASSWORD: set both or neither"))
	}
	if (a.TLSCert == "") != (a.TLSKey == "") {
		errs = append(errs, errors.New("WHARF_NATS_TLS_CERT and WHARF_NATS_TLS_KEY: set both or neither"))
	}
	if c.NATSURL == "" && a != (NATSAuth{}) {
		errs = append(errs, errors.New("WHARF_NATS_* credentials and TLS files apply to an external bus only; set --nats (WHARF_NATS_URL) as well"))
	}
	return errs
}
