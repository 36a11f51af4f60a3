package receiver

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"testing"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
)

// With tls_port as well as tls_certificate_id, one receiver takes messages over plain
// HTTP on port and over HTTPS on tls_port, and says so.
func TestHTTPAndHTTPS(t *testing.T) {
	cert, key := serverCert(t)
	org, partner := testParty(t, "wharf"), testParty(t, "acme")
	forEachDB(t, func(t *testing.T, s *db.Store) {
		b := newBench(t, s, []party{org}, []party{partner})
		dir := newDirectory()
		dir.add(inbound(org, partner, nil))
		rc := b.start("as2_both", dir, func(c *Config, d *Deps) {
			id, port := int64(7), 0
			c.TLSCertificateID, c.TLSPort = &id, &port
			d.Certs = certs{cert: cert, key: key}
		})
		if rc.TLSAddr() == nil {
			t.Fatal("no HTTPS listener")
		}
		pool := x509.NewCertPool()
		pool.AddCert(cert)
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		defer client.CloseIdleConnections()
		for _, url := range []string{"http://" + rc.Addr().String() + "/as2", "https://" + rc.TLSAddr().String() + "/as2"} {
			r := build(t, partner, org, []byte("to "+url+"\r\n"), "both.txt", secureOpts(partner, org))
			req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(r.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header = r.header.Clone()
			req.Header.Set("Content-Type", r.contentType)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("%s: %v", url[:5], err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if m := parseMDN(t, reply{status: resp.StatusCode, header: resp.Header, body: body}, org.cert); !m.Disposition.Successful() {
				t.Errorf("%s: MDN %s", url[:5], m.Disposition)
			}
		}
		got := rc.Listening()
		if len(got) != 2 || got[0] != rc.Addr().String()+" (http)" || got[1] != rc.TLSAddr().String()+" (https)" {
			t.Errorf("Listening() = %q", got)
		}
	})
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
			fe, _ := err.(*persistence.FieldError)
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
