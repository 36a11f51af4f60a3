package profile

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"wharf/internal/certs/certstest"
)

var (
	sampleOnce sync.Once
	sampleSign certstest.Pair
	sampleEnc  certstest.Pair
)

// sampleFile is a valid partner profile file as a fresh JSON object, with its
// certificates (made once: RSA keys are slow).
func sampleFile(t testing.TB) (map[string]any, certstest.Pair, certstest.Pair) {
	t.Helper()
	sampleOnce.Do(func() {
		ca := certstest.CA(t, "File CA")
		sampleSign = certstest.ValidLeaf(t, ca, "ACME signing", certstest.RSAKey(t))
		sampleEnc = certstest.ValidLeaf(t, ca, "ACME encryption", certstest.RSAKey(t))
	})
	sign, enc := sampleSign, sampleEnc
	return map[string]any{
		"format":        PartnerFileFormat,
		"name":          "local",
		"display_name":  "ACME Corp",
		"as2_id":        "ACME AS2",
		"endpoint_url":  "https://as2.acme.example:8443/as2",
		"async_mdn_url": "https://mdn.acme.example/as2/mdn",
		"certificates": map[string]any{
			"signing":    string(certstest.CertsPEM(sign.Cert)),
			"encryption": string(certstest.CertsPEM(enc.Cert)),
		},
		"preferences": map[string]any{"signing_algorithm": "sha384", "encryption_algorithm": "aes128-cbc",
			"key_transport": "rsa-oaep", "compress": false},
		"accepts": map[string]any{"signing_algorithms": []string{"sha256", "sha384"},
			"encryption_algorithms": []string{"aes128-cbc", "aes256-cbc"}, "key_transports": []string{"rsa-oaep"}},
		"mdn":                  map[string]any{"modes": []string{"async"}, "signed": true, "mic_algorithm": "sha512"},
		"max_message_size_mib": 64,
	}, sign, enc
}

func marshalFile(t testing.TB, obj map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParsePartnerFileAppliesEveryField(t *testing.T) {
	obj, sign, enc := sampleFile(t)
	pf, err := ParsePartnerFile(marshalFile(t, obj))
	if err != nil {
		t.Fatal(err)
	}
	if !pf.Signing.Equal(sign.Cert) || !pf.Encryption.Equal(enc.Cert) || len(pf.Certificates()) != 2 {
		t.Fatalf("certificates = %v, %v", pf.Signing.Subject, pf.Encryption.Subject)
	}
	r := NewRemote()
	pf.ApplyTo(&r)
	want := NewRemote()
	want.AS2ID, want.EndpointURL = "ACME AS2", "https://as2.acme.example:8443/as2"
	want.SigningAlgorithm, want.EncryptionAlgorithm, want.KeyTransport, want.Compress = SignSHA384, EncryptAES128CBC, KeyTransportOAEP, false
	want.MDNMode, want.SignedMDN, want.MDNMICAlgorithm = MDNAsync, true, MICSHA512
	want.MaxMessageSizeMiB = 64
	want.AsyncMDNHosts = []string{"mdn.acme.example"}
	got, _ := json.Marshal(r)
	exp, _ := json.Marshal(want)
	if string(got) != string(exp) {
		t.Errorf("applied:\n got %s\nwant %s", got, exp)
	}
	// Written and read again, the file is the same.
	again, err := pf.File.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	pf2, err := ParsePartnerFile(again)
	if err != nil {
		t.Fatalf("the file written does not parse: %v\n%s", err, again)
	}
	if b1, _ := json.Marshal(pf.File); string(b1) != string(mustJSON(t, pf2.File)) {
		t.Errorf("round trip changed the file")
	}
}

func mustJSON(t testing.TB, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParsePartnerFileRefusals(t *testing.T) {
	_, sign, _ := sampleFile(t)
	keyPEM := string(certstest.KeyPEM(t, sign.Key, "pkcs8"))
	certPEM := string(certstest.CertsPEM(sign.Cert))
	tests := []struct {
		name string
		edit func(obj map[string]any)
		raw  string // used instead of the edited object when set
		key  string // the key the refusal names
		says string
	}{
		{name: "empty", raw: " ", key: "", says: "empty"},
		{name: "not JSON", raw: "format: x", key: "", says: "not valid JSON"},
		{name: "an array", raw: "[]", key: "", says: "JSON object"},
		{name: "two objects", raw: `{"format":"wharf-partner-profile/1"} {}`, key: "", says: "unexpected data"},
		{name: "no format", edit: func(o map[string]any) { delete(o, "format") }, key: "format", says: "not a Wharf partner profile file"},
		{name: "foreign format", edit: func(o map[string]any) { o["format"] = "openas2-partnership" }, key: "format", says: "not a format this Wharf reads"},
		{name: "newer version", edit: func(o map[string]any) { o["format"] = "wharf-partner-profile/2" }, key: "format", says: "wharf-partner-profile/1"},
		{name: "unknown key", edit: func(o map[string]any) { o["password"] = "x" }, key: "password", says: "unknown key"},
		{name: "unknown nested key", edit: func(o map[string]any) { o["mdn"].(map[string]any)["url"] = "x" }, key: "url", says: "unknown key"},
		{name: "wrong type", edit: func(o map[string]any) { o["as2_id"] = 7 }, key: "as2_id", says: "JSON string"},
		{name: "no AS2 id", edit: func(o map[string]any) { delete(o, "as2_id") }, key: "as2_id", says: "required"},
		{name: "bad AS2 id", edit: func(o map[string]any) { o["as2_id"] = `a"b` }, key: "as2_id", says: "not allowed"},
		{name: "no endpoint", edit: func(o map[string]any) { delete(o, "endpoint_url") }, key: "endpoint_url", says: "required"},
		{name: "endpoint not http", edit: func(o map[string]any) { o["endpoint_url"] = "ftp://x/as2" }, key: "endpoint_url", says: "http or https"},
		{name: "endpoint with credentials", edit: func(o map[string]any) { o["endpoint_url"] = "https://u:p@x/as2" }, key: "endpoint_url", says: "credentials"},
		{name: "bad async MDN URL", edit: func(o map[string]any) { o["async_mdn_url"] = "mdn" }, key: "async_mdn_url", says: "http"},
		{name: "unknown algorithm", edit: func(o map[string]any) { o["preferences"].(map[string]any)["signing_algorithm"] = "md5" }, key: "preferences.signing_algorithm", says: "md5"},
		{name: "preference not accepted", edit: func(o map[string]any) { o["preferences"].(map[string]any)["encryption_algorithm"] = "aes192-cbc" }, key: "preferences.encryption_algorithm", says: "not in accepts"},
		{name: "no accepts", edit: func(o map[string]any) { o["accepts"].(map[string]any)["key_transports"] = []string{} }, key: "accepts.key_transports", says: "at least one"},
		{name: "accepts twice", edit: func(o map[string]any) {
			o["accepts"].(map[string]any)["signing_algorithms"] = []string{"sha256", "sha256"}
		}, key: "accepts.signing_algorithms", says: "twice"},
		{name: "MDN mode none", edit: func(o map[string]any) { o["mdn"].(map[string]any)["modes"] = []string{"none"} }, key: "mdn.modes", says: "sync, async"},
		{name: "size out of range", edit: func(o map[string]any) { o["max_message_size_mib"] = 100000 }, key: "max_message_size_mib", says: "between"},
		{name: "no certificate", edit: func(o map[string]any) { o["certificates"].(map[string]any)["signing"] = "" }, key: "certificates.signing", says: "required"},
		{name: "certificate not PEM", edit: func(o map[string]any) { o["certificates"].(map[string]any)["signing"] = "MIIB..." }, key: "certificates.signing", says: "not a PEM certificate"},
		{name: "private key alone", edit: func(o map[string]any) { o["certificates"].(map[string]any)["encryption"] = keyPEM }, key: "certificates.encryption", says: "private key"},
		{name: "certificate with its key", edit: func(o map[string]any) { o["certificates"].(map[string]any)["encryption"] = certPEM + keyPEM }, key: "certificates.encryption", says: "private key"},
		{name: "two certificates", edit: func(o map[string]any) { o["certificates"].(map[string]any)["signing"] = certPEM + certPEM }, key: "certificates.signing", says: "more than one"},
		{name: "damaged certificate", edit: func(o map[string]any) {
			o["certificates"].(map[string]any)["signing"] = "-----BEGIN CERTIFICATE-----\nMIIBAA==\n-----END CERTIFICATE-----\n"
		}, key: "certificates.signing", says: "does not parse"},
		{name: "too large", raw: `{"format":"` + strings.Repeat("x", MaxPartnerFileSize) + `"}`, key: "", says: "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := []byte(tt.raw)
			if tt.raw == "" {
				obj, _, _ := sampleFile(t)
				tt.edit(obj)
				data = marshalFile(t, obj)
			}
			_, err := ParsePartnerFile(data)
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, ErrPartnerFile) {
				t.Errorf("error %v is not ErrPartnerFile", err)
			}
			var pe *PartnerFileError
			if !errors.As(err, &pe) || pe.Key != tt.key {
				t.Errorf("error %q names key %q, want %q", err, keyOf(err), tt.key)
			}
			if !strings.Contains(err.Error(), tt.says) {
				t.Errorf("error %q does not say %q", err, tt.says)
			}
			if fe := PartnerFileFieldError("profile_file", err); fieldOf(fe) != "profile_file" || !strings.Contains(fe.Error(), tt.says) {
				t.Errorf("as a field error: %v", fe)
			}
		})
	}
}

func keyOf(err error) string {
	var pe *PartnerFileError
	if errors.As(err, &pe) {
		return pe.Key
	}
	return "(none)"
}

// FuzzParsePartnerFile holds the parser to its contract on any input: a refusal is
// ErrPartnerFile, and a file it accepts is written back as one it accepts the same.
func FuzzParsePartnerFile(f *testing.F) {
	obj, _, _ := sampleFile(f)
	f.Add(marshalFile(f, obj))
	f.Add([]byte(`{"format":"wharf-partner-profile/1"}`))
	f.Add([]byte(`{"format":"wharf-partner-profile/1","as2_id":"A","endpoint_url":"http://x/as2"}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"format":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		pf, err := ParsePartnerFile(data)
		if err != nil {
			if !errors.Is(err, ErrPartnerFile) {
				t.Fatalf("refusal %v is not ErrPartnerFile", err)
			}
			return
		}
		out, err := pf.File.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParsePartnerFile(out)
		if err != nil {
			t.Fatalf("an accepted file, written back, is refused: %v", err)
		}
		if string(mustJSON(t, again.File)) != string(mustJSON(t, pf.File)) {
			t.Fatal("an accepted file changed when written back")
		}
	})
}
