package as2_test

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"wharf/internal/certs/certstest"
	"wharf/internal/protocol/as2/as2test"
	"wharf/internal/protocol/as2/profile"
)

// identify gives the peer's organization "local" an AS2 identity with a key of its own
// and returns the certificate's fingerprint.
func (p *peer) identify(idName string) string {
	p.t.Helper()
	id := as2test.NewIdentity(p.t, idName)
	own := p.upload(append(certstest.CertsPEM(id.Cert), certstest.KeyPEM(p.t, id.Key, "pkcs8")...))
	p.json("POST", "/api/v1/as2/local-profiles", map[string]any{"organization": "local", "as2_id": p.name,
		"signing_certificate_id": own, "decryption_certificate_id": own}, nil)
	return profile.CertificateFingerprint(id.Cert.Raw)
}

// TestPartnerProfileRoundTrip exports each gateway's partner profile file over REST and
// imports it into the other: the partner made of it has the same AS2 id, URLs and
// certificate, and the two then exchange a message with a signed receipt.
func TestPartnerProfileRoundTrip(t *testing.T) {
	eachGatewayDB(t, func(t *testing.T, url string) {
		a := startPeer(t, "WHARF-A", url)
		b := startPeer(t, "WHARF B", "")
		printA, printB := a.identify("gateway-a"), b.identify("gateway-b")

		var fileA, fileB json.RawMessage
		a.do("GET", "/api/v1/as2/local-profiles/local/partner-profile", "", nil, &fileA)
		b.do("GET", "/api/v1/as2/local-profiles/local/partner-profile", "", nil, &fileB)
		for _, f := range []json.RawMessage{fileA, fileB} {
			if strings.Contains(string(f), "PRIVATE KEY") {
				t.Fatalf("a profile file holds a private key:\n%s", f)
			}
		}
		var created struct {
			Partner struct {
				Name string `json:"name"`
			} `json:"partner"`
			Remote struct {
				AS2ID         string   `json:"as2_id"`
				EndpointURL   string   `json:"endpoint_url"`
				AsyncMDNHosts []string `json:"async_mdn_hosts"`
				DupContent    string   `json:"duplicate_content"`
			} `json:"remote_profile"`
			CertificateIDs []int64 `json:"certificate_ids"`
		}
		status := a.do("POST", "/api/v1/as2/partners", "application/json", jsonBody(t, map[string]any{"name": "b", "profile_file": fileB, "preset": "openas2"}), &created)
		if status != http.StatusCreated || created.Partner.Name != "b" || created.Remote.AS2ID != "WHARF B" ||
			created.Remote.EndpointURL != b.as2+"/as2" || created.Remote.DupContent != "refuse" {
			t.Fatalf("A imported B's file as %d %+v", status, created)
		}
		var cert struct {
			Fingerprint   string `json:"fingerprint"`
			HasPrivateKey bool   `json:"has_private_key"`
		}
		a.do("GET", "/api/v1/certificates/"+itoa(created.CertificateIDs[0]), "", nil, &cert)
		if len(created.CertificateIDs) != 1 || cert.Fingerprint != printB || cert.HasPrivateKey {
			t.Errorf("A stored B's certificate as %v %+v, want fingerprint %s without a key", created.CertificateIDs, cert, printB)
		}
		b.do("POST", "/api/v1/as2/partners", "application/json", jsonBody(t, map[string]any{"name": "a", "profile_file": fileA}), &created)
		if created.Remote.AS2ID != "WHARF-A" || created.Remote.EndpointURL != a.as2+"/as2" {
			t.Fatalf("B imported A's file as %+v", created)
		}
		b.do("GET", "/api/v1/certificates/"+itoa(created.CertificateIDs[0]), "", nil, &cert)
		if cert.Fingerprint != printA {
			t.Errorf("B stored A's certificate %s, want %s", cert.Fingerprint, printA)
		}

		// The file's URLs are the receivers' as this host reaches them, said to be a guess.
		var parsed profile.PartnerFile
		if err := json.Unmarshal(fileA, &parsed); err != nil {
			t.Fatal(err)
		}
		if parsed.AsyncMDNURL != a.as2+"/as2/mdn" || parsed.Format != profile.PartnerFileFormat {
			t.Errorf("A's file: %+v", parsed)
		}
		block, _ := pem.Decode([]byte(parsed.Certificates.Signing))
		if c, err := x509.ParseCertificate(block.Bytes); err != nil || profile.CertificateFingerprint(c.Raw) != printA {
			t.Errorf("A's file names another signing certificate: %v", err)
		}

		// Partners made of each other's files exchange a message with a signed MDN.
		sendAndVerify(t, a, b, protection{name: "defaults", compress: true, sign: true, encrypt: true}, "sync", true)
	})
}

// TestPartnerProfileRefusedOverREST: a foreign file is refused naming profile_file, and
// a second import of the same partner is refused on its name.
func TestPartnerProfileRefusedOverREST(t *testing.T) {
	a := startPeer(t, "WHARF-A", "")
	tests := []struct {
		name string
		body map[string]any
		says string
	}{
		{"foreign format", map[string]any{"profile_file": map[string]any{"format": "x"}}, "profile_file"},
		{"not an object", map[string]any{"profile_file": "text"}, "profile_file"},
		{"nothing", map[string]any{}, "as2_id"},
		{"unknown field", map[string]any{"as2": "x"}, "as2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := a.gw.API("POST", "/api/v1/as2/partners", "application/json", jsonBody(t, tt.body))
			if status != http.StatusBadRequest || !strings.Contains(string(body), tt.says) {
				t.Errorf("= %d %s, want 400 naming %s", status, body, tt.says)
			}
		})
	}
	// Without a local profile there is no file to give.
	if status, body := a.gw.API("GET", "/api/v1/as2/local-profiles/local/partner-profile", "", nil); status != http.StatusNotFound {
		t.Errorf("file without a local profile = %d %s", status, body)
	}
}

func jsonBody(t *testing.T, v any) *bytes.Reader {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.NewReader(b)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
