package bus

import (
	"errors"
	"fmt"
	"os"

	"github.com/nats-io/nats.go"
)

// Auth is how Connect authenticates to an external cluster and checks its certificate;
// empty fields are left out. At most one of CredsFile, User/Password and Token is set.
type Auth struct {
	CredsFile string
	User      string
	Password  string
	Token     string
	// TLSCA is a PEM bundle the servers' certificates must chain to; TLSCert and TLSKey
	// are the client's certificate for servers that ask for one.
	TLSCA   string
	TLSCert string
	TLSKey  string
}

// options turns a into client options, checking first that the files it names can be
// read, so a wrong path is named rather than reported as a failed handshake.
func (a Auth) options() ([]nats.Option, error) {
	var opts []nats.Option
	for _, f := range []struct{ what, path string }{
		{"credentials file", a.CredsFile}, {"CA file", a.TLSCA}, {"client certificate", a.TLSCert}, {"client key", a.TLSKey},
	} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); err != nil {
			return nil, fmt.Errorf("%s: %w", f.what, err)
		}
	}
	switch {
	case a.CredsFile != "":
		opts = append(opts, nats.UserCredentials(a.CredsFile))
	case a.User != "":
		opts = append(opts, nats.UserInfo(a.User, a.Password))
	case a.Token != "":
		opts = append(opts, nats.Token(a.Token))
	}
	if (a.TLSCert == "") != (a.TLSKey == "") {
		return nil, errors.New("a client certificate needs its key and a key its certificate")
	}
	if a.TLSCA != "" {
		opts = append(opts, nats.RootCAs(a.TLSCA))
	}
	if a.TLSCert != "" {
		opts = append(opts, nats.ClientCert(a.TLSCert, a.TLSKey))
	}
	return opts, nil
}
