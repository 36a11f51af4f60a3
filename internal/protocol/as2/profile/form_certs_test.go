package profile

import (
	"encoding/json"
	"net/url"
	"reflect"
	"testing"

	"wharf/internal/certs"
	"wharf/internal/module"
)

func fieldNamed(t *testing.T, fields []module.PanelField, name string) module.PanelField {
	t.Helper()
	for _, f := range fields {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("no field %s", name)
	return module.PanelField{}
}

func choiceValues(f module.PanelField) []string {
	var out []string
	for _, c := range f.Choices {
		out = append(out, c.Value)
	}
	return out
}

// TestCertificateSelects offers our key-holding certificates where a key signs or
// decrypts and the others where the partner's certificates and TLS roots go; a stored
// value that does not fit stays selectable.
func TestCertificateSelects(t *testing.T) {
	choices := []certs.Choice{
		{ID: 1, Role: certs.RoleOurs, Label: "CN=ours"},
		{ID: 2, Role: certs.RolePartner, Label: "CN=partner"},
		{ID: 3, Role: certs.RoleTLSRoot, Label: "CN=root"},
		{ID: 4, Role: certs.RoleOurs, Label: "CN=ours too"},
	}
	local := NewLocal()
	local.SigningCertificateID = 4
	lf := CertificateSelects(LocalFields(local), choices)
	remote := NewRemote()
	remote.PartnerCertificateIDs = []int64{2, 9}
	rf := CertificateSelects(RemoteFields(remote), choices)
	for _, tc := range []struct {
		fields   []module.PanelField
		name     string
		multiple bool
		values   []string
	}{
		{lf, "signing_certificate_id", false, []string{"0", "1", "4"}},
		{lf, "decryption_certificate_id", false, []string{"0", "1", "4"}},
		{lf, "previous_decryption_certificate_id", false, []string{"", "1", "4"}},
		{lf, "mdn_signing_certificate_id", false, []string{"", "1", "4"}},
		{rf, "our_signing_certificate_id", false, []string{"", "1", "4"}},
		{rf, "partner_certificate_ids", true, []string{"2", "3", "9"}},
		{rf, "tls_trust_certificate_ids", true, []string{"3", "2"}},
	} {
		f := fieldNamed(t, tc.fields, tc.name)
		if f.Kind != module.FieldSelect || f.Multiple != tc.multiple || !reflect.DeepEqual(choiceValues(f), tc.values) {
			t.Errorf("%s: kind %s, multiple %v, values %v; want select, %v, %v", tc.name, f.Kind, f.Multiple, choiceValues(f), tc.multiple, tc.values)
		}
	}
	if f := fieldNamed(t, lf, "signing_certificate_id"); !f.Selected("4") || f.Selected("1") || f.Choices[2].Label != "CN=ours too" {
		t.Errorf("signing select %+v", f)
	}
	if f := fieldNamed(t, rf, "partner_certificate_ids"); !f.Selected("2") || !f.Selected("9") || f.Selected("3") ||
		f.Choices[0].Group != "Partner certificates" || f.Choices[2].Group != "Not offered" {
		t.Errorf("partner select %+v", f)
	}
	// Other fields stay as they are.
	if f := fieldNamed(t, rf, "endpoint_url"); f.Kind != module.FieldURL || f.Choices != nil {
		t.Errorf("endpoint_url %+v", f)
	}
}

// TestMultipleSelectFormJSON turns a multiple select's values, each sent on its own, into
// the same id list REST takes, as a typed list would.
func TestMultipleSelectFormJSON(t *testing.T) {
	for _, form := range []url.Values{
		{"partner_certificate_ids": {"2", "3"}, "tls_trust_certificate_ids": {"5"}},
		{"partner_certificate_ids": {"2, 3"}, "tls_trust_certificate_ids": {"5"}},
	} {
		var spec []formField
		for _, f := range remoteForm {
			if f.enc == encIDs {
				spec = append(spec, f)
			}
		}
		raw, err := formJSON(spec, form)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Partner []int64 `json:"partner_certificate_ids"`
			TLS     []int64 `json:"tls_trust_certificate_ids"`
		}
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Partner, []int64{2, 3}) || !reflect.DeepEqual(got.TLS, []int64{5}) {
			t.Errorf("%v: %+v", form, got)
		}
	}
}
