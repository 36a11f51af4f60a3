package browsertest

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"regexp"
	"strconv"
	"testing"

	"wharf/internal/certs/certstest"
	"wharf/internal/persistence/db/dbtest"
	"wharf/internal/protocol/as2/as2test"
)

// chosen reads the value a select of the page has selected.
func chosen(t *testing.T, page, id string) string {
	t.Helper()
	sel := regexp.MustCompile(`(?s)<select id="` + id + `"[^>]*>(.*?)</select>`).FindStringSubmatch(page)
	if sel == nil {
		t.Fatalf("no select #%s", id)
	}
	opt := regexp.MustCompile(`<option value="([^"]*)" selected>`).FindStringSubmatch(sel[1])
	if opt == nil {
		return ""
	}
	return opt[1]
}

type certificateList struct {
	Total        int `json:"total"`
	Certificates []struct {
		ID      int64  `json:"id"`
		Subject string `json:"subject"`
	} `json:"certificates"`
}

// TestIdentityFormMakesKeyPair: the organization's AS2 profile form chooses a new key pair
// while the gateway holds no key of its own and makes it on saving, named by the AS2 id;
// a refused form makes none; with one key of our own, the form chooses that one.
func TestIdentityFormMakesKeyPair(t *testing.T) {
	for dbName, url := range dbtest.URLs() {
		t.Run(dbName, func(t *testing.T) {
			h := startOn(t, url)
			c, _ := h.signedIn(t, "ada")
			const edit, save = "/ui/organizations/local/panels/as2/edit", "/ui/organizations/local/panels/as2"
			form := c.get(t, edit).body
			for _, f := range []string{"f-signing_certificate_id", "f-decryption_certificate_id"} {
				if got := chosen(t, form, f); got != "generate" {
					t.Errorf("%s chooses %q, not a new key pair, without a key of ours", f, got)
				}
			}
			post := func(as2ID, size string) response {
				return c.post(t, save, map[string][]string{"as2_id": {as2ID}, "signing_certificate_id": {"generate"},
					"decryption_certificate_id": {"generate"}, "max_message_size_mib": {size}})
			}
			if r := post("", "lots"); r.status != http.StatusUnprocessableEntity {
				t.Fatalf("a refused identity form = %d\n%s", r.status, r.body)
			}
			var list certificateList
			h.mustJSON("GET", "/api/v1/certificates", nil, &list)
			if list.Total != 0 {
				t.Fatalf("a refused form made %d certificates", list.Total)
			}
			if r := post("WHARF-ID", "512"); r.status != http.StatusSeeOther {
				t.Fatalf("the identity form = %d\n%s", r.status, r.body)
			}
			h.mustJSON("GET", "/api/v1/certificates", nil, &list)
			if list.Total != 1 || list.Certificates[0].Subject != "CN=WHARF-ID" {
				t.Fatalf("certificates after the identity form: %+v", list)
			}
			var local struct {
				AS2ID      string `json:"as2_id"`
				Signing    int64  `json:"signing_certificate_id"`
				Decryption int64  `json:"decryption_certificate_id"`
			}
			h.mustJSON("GET", "/api/v1/as2/local-profiles/local", nil, &local)
			if id := list.Certificates[0].ID; local.AS2ID != "WHARF-ID" || local.Signing != id || local.Decryption != id {
				t.Errorf("the local profile: %+v, want the new key %d", local, id)
			}
		})
	}
}

// TestIdentityFormChoosesTheOneKey: with exactly one key of our own stored, a new local
// profile's form chooses it.
func TestIdentityFormChoosesTheOneKey(t *testing.T) {
	h := start(t)
	id := as2test.NewIdentity(t, "the-one")
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, _ := mw.CreateFormFile("file", "own.pem")
	_, _ = fw.Write(append(certstest.CertsPEM(id.Cert), certstest.KeyPEM(t, id.Key, "pkcs8")...))
	_ = mw.Close()
	code, data := h.api("POST", "/api/v1/certificates", mw.FormDataContentType(), &buf)
	if code != http.StatusCreated {
		t.Fatalf("upload = %d %s", code, data)
	}
	var up struct {
		Certificates []struct {
			ID int64 `json:"id"`
		} `json:"certificates"`
	}
	if err := json.Unmarshal(data, &up); err != nil {
		t.Fatal(err)
	}
	c, _ := h.signedIn(t, "ada")
	form := c.get(t, "/ui/organizations/local/panels/as2/edit").body
	want := strconv.FormatInt(up.Certificates[0].ID, 10)
	for _, f := range []string{"f-signing_certificate_id", "f-decryption_certificate_id"} {
		if got := chosen(t, form, f); got != want {
			t.Errorf("%s chooses %q, want the one key %s", f, got, want)
		}
	}
}
