package receiver

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"testing"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
)

// With tls_certificate_id the receiver serves HTTPS on port; with tls_port as well, one
// receiver takes messages over plain HTTP on port and over HTTPS on tls_port. Each
// listener is named with its scheme.
func TestListeners(t *testing.T) {
	cert, key := serverCert(t)
	org, partner := testParty(t, "wharf"), testParty(t, "acme")
	zero := 0
	for _, tt := range []struct {
		name    string
		tlsPort *int
	}{{"HTTPS on port", nil}, {"HTTP on port and HTTPS on tls_port", &zero}} {
		t.Run(tt.name, func(t *testing.T) {
			forEachDB(t, func(t *testing.T, s *db.Store) {
				b := newBench(t, s, []party{org}, []party{partner})
				dir := newDirectory()
				dir.add(inbound(org, partner, nil))
				rc := b.start("as2_tls", dir, func(c *Config, d *Deps) {
					id := int64(7)
					c.TLSCertificateID, c.TLSPort = &id, tt.tlsPort
					d.Certs = certs{cert: cert, key: key}
				})
				client := trusting(t, cert)
				addr := rc.Addr().String()
				if tt.tlsPort == nil {
					postSecure(t, client, "https://"+addr+"/as2", partner, org)
					if resp, err := http.Get("http://" + addr + "/as2"); err == nil {
						resp.Body.Close()
						if resp.StatusCode != http.StatusBadRequest {
							t.Errorf("plain HTTP on the TLS listener: HTTP %d", resp.StatusCode)
						}
					}
					if got := rc.Listening(); len(got) != 1 || got[0] != addr+" (https)" || rc.TLSAddr() != nil {
						t.Errorf("Listening() = %q, TLSAddr() = %v", got, rc.TLSAddr())
					}
					return
				}
				if rc.TLSAddr() == nil {
					t.Fatal("no HTTPS listener")
				}
				tlsAddr := rc.TLSAddr().String()
				postSecure(t, client, "http://"+addr+"/as2", partner, org)
				postSecure(t, client, "https://"+tlsAddr+"/as2", partner, org)
				if got := rc.Listening(); len(got) != 2 || got[0] != addr+" (http)" || got[1] != tlsAddr+" (https)" {
					t.Errorf("Listening() = %q", got)
				}
			})
		})
	}
}

// trusting is a client that trusts cert alone.
func trusting(t *testing.T, cert *x509.Certificate) *http.Client {
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	t.Cleanup(client.CloseIdleConnections)
	return client
}

// postSecure posts a signed and encrypted message from partner to org at url and wants
// a positive MDN.
func postSecure(t *testing.T, client *http.Client, url string, partner, org party) {
	t.Helper()
	r := build(t, partner, org, []byte("to "+url+"\r\n"), "secure.txt", secureOpts(partner, org))
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = r.header.Clone()
	req.Header.Set("Content-Type", r.contentType)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if m := parseMDN(t, reply{status: resp.StatusCode, header: resp.Header, body: body}, org.cert); !m.Disposition.Successful() {
		t.Errorf("POST %s: MDN %s", url, m.Disposition)
	}
}

func TestTLSPortConfig(t *testing.T) {
	id, same, other, bad := int64(3), DefaultPort, 8443, 70000
	tests := []struct {
		name  string
		edit  func(c *Config)
		field string
	}{
		{"both", func(c *Config) { c.TLSCertificateID, c.TLSPort = &id, &other }, ""},
		{"no certificate", func(c *Config) { c.TLSPort = &other }, "tls_port"},
		{"same port", func(c *Config) { c.TLSCertificateID, c.TLSPort = &id, &same }, "tls_port"},
		{"out of range", func(c *Config) { c.TLSCertificateID, c.TLSPort = &id, &bad }, "tls_port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newConfig()
			tt.edit(c)
			err := c.Validate()
			var fe *persistence.FieldError
			errors.As(err, &fe)
			switch {
			case tt.field == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.field != "" && (fe == nil || fe.Field != tt.field):
				t.Fatalf("error %v, want one naming %s", err, tt.field)
			}
		})
	}
	c := newConfig()
	c.TLSCertificateID, c.TLSPort = &id, &other
	ls := c.Listeners()
	if len(ls) != 2 || ls[0].Scheme() != "http" || ls[1].Scheme() != "https" || ls[1].Addr != "127.0.0.1:8443" {
		t.Errorf("Listeners() = %+v", ls)
	}
}
