package profile

import (
	"net/url"
	"testing"

	"wharf/internal/module"
	"wharf/internal/persistence"
)

func valueOf(fields []module.PanelField, name string) string {
	for _, f := range fields {
		if f.Name == name {
			return f.Value
		}
	}
	return "(no field)"
}

// TestFormFieldsShowProfiles holds the forms' values equal to the profiles', new ones
// (whose empty AS2 id cannot be marshalled) included.
func TestFormFieldsShowProfiles(t *testing.T) {
	stored := NewRemote()
	stored.AS2ID, stored.Partner, stored.PartnerCertificateIDs, stored.AsyncMDNHosts = "PARTNER", "b", []int64{3, 4}, []string{"a.example", "b.example"}
	own := int64(7)
	stored.OurSigningCertificateID = &own
	stored.AlgorithmProtection = true
	for _, tc := range []struct {
		name   string
		fields []module.PanelField
		want   map[string]string
	}{
		{"new remote", RemoteFields(NewRemote()), map[string]string{"as2_id": "", "connect_timeout_seconds": "10",
			"signing_algorithm": "sha256", "compress": "true", "allow_sha1": "", "partner_certificate_ids": "", "our_signing_certificate_id": "",
			"algorithm_protection": "", "gcm_confirmed": "", "duplicate_content": "accept", "duplicate_content_window_hours": "24",
			"chunked": "auto"}},
		{"stored remote", RemoteFields(stored), map[string]string{"as2_id": "PARTNER", "partner_certificate_ids": "3, 4",
			"async_mdn_hosts": "a.example, b.example", "our_signing_certificate_id": "7", "algorithm_protection": "true"}},
		{"new local", LocalFields(NewLocal()), map[string]string{"as2_id": "", "max_message_size_mib": "512",
			"signing_certificate_id": "0", "previous_decryption_certificate_id": ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for name, want := range tc.want {
				if got := valueOf(tc.fields, name); got != want {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
		})
	}
}

// TestFormJSON turns form values into the JSON REST takes, refusing what is not a number.
func TestFormJSON(t *testing.T) {
	got, err := formJSON(localForm, url.Values{"as2_id": {"A"}, "signing_certificate_id": {"2"}, "decryption_certificate_id": {"0"},
		"max_message_size_mib": {"8"}, "mdn_notification_to": {"ops@example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"as2_id":"A","decryption_certificate_id":0,"include_chain":false,"max_message_size_mib":8,"mdn_notification_to":"ops@example.com","mdn_signing_certificate_id":null,"previous_decryption_certificate_id":null,"signing_certificate_id":2}`
	if string(got) != want {
		t.Errorf("formJSON = %s\nwant %s", got, want)
	}
	_, err = formJSON(localForm, url.Values{"signing_certificate_id": {"two"}, "decryption_certificate_id": {"0"}, "max_message_size_mib": {"8"}})
	if err == nil || err.Error() != "signing_certificate_id: enter a whole number" {
		t.Errorf("a word for a number: %v", err)
	}
}

// storedRemoteForm stores the world's partner profile and returns its form as filled in.
func storedRemoteForm(e *env) url.Values {
	w := e.world()
	e.mustCreate(w)
	form := url.Values{}
	for _, f := range RemoteFields(w.remote) {
		if f.Value != "" {
			form.Set(f.Name, f.Value)
		}
	}
	return form
}

// TestRemoteFormNamesEveryField: a refused partner form names every invalid field at
// once, the ones that are not numbers and the ones the profile's checks refuse.
func TestRemoteFormNamesEveryField(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		form := storedRemoteForm(e)
		form.Set("connect_timeout_seconds", "ten")
		form.Set("endpoint_url", "ftp://acme.example/as2")
		form.Set("receipt_timeout_minutes", "0")
		_, err := e.store.SaveRemoteForm(e.ctx, "acme", form)
		got, ok := persistence.AllFieldErrors(err)
		fields := map[string]bool{}
		for _, fe := range got {
			fields[fe.Field] = true
		}
		if !ok || !fields["connect_timeout_seconds"] || !fields["endpoint_url"] || !fields["receipt_timeout_minutes"] {
			t.Errorf("refusal = %v, want connect_timeout_seconds, endpoint_url and receipt_timeout_minutes", err)
		}
	})
}

// The partner form takes the AES-GCM acknowledgement beside the cipher, by the REST rule,
// and the duplicate content policy.
func TestRemoteFormGCMAndDuplicateContent(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		form := storedRemoteForm(e)
		form.Set("encryption_algorithm", "aes256-gcm")
		if _, err := e.store.SaveRemoteForm(e.ctx, "acme", form); fieldOf(err) != "gcm_confirmed" {
			t.Fatalf("GCM without the acknowledgement: %v", err)
		}
		form.Set("gcm_confirmed", "on")
		form.Set("duplicate_content", "refuse")
		form.Set("duplicate_content_window_hours", "36")
		r, err := e.store.SaveRemoteForm(e.ctx, "acme", form)
		if err != nil {
			t.Fatal(err)
		}
		if r.EncryptionAlgorithm != EncryptAES256GCM || !r.GCMConfirmed || r.DuplicateContent != DuplicateRefuse || r.DuplicateContentWindowH != 36 {
			t.Errorf("saved %s, confirmed %v, duplicate content %s within %d h", r.EncryptionAlgorithm, r.GCMConfirmed, r.DuplicateContent, r.DuplicateContentWindowH)
		}
		if got := valueOf(RemoteFields(r), "gcm_confirmed"); got != "true" {
			t.Errorf("the form shows gcm_confirmed %q", got)
		}
	})
}

// TestFormsAreGrouped: every field of the profile forms is in a part of the form, and
// only the advanced part is folded away.
func TestFormsAreGrouped(t *testing.T) {
	for name, fields := range map[string][]module.PanelField{"local": LocalFields(NewLocal()), "remote": RemoteFields(NewRemote())} {
		for _, f := range fields {
			if f.Group == "" {
				t.Errorf("%s form: %s is in no group", name, f.Name)
			}
			if f.Folded != (f.Group == groupAdvanced.title) {
				t.Errorf("%s form: %s in %q folded %v", name, f.Name, f.Group, f.Folded)
			}
			if f.Label == f.Name {
				t.Errorf("%s form: %s has no label for people", name, f.Name)
			}
		}
	}
}

// The partner form sets chunked, and refuses a value outside its list.
func TestRemoteFormChunked(t *testing.T) {
	forEachDB(t, func(t *testing.T, e *env) {
		form := storedRemoteForm(e)
		form.Set("chunked", "sometimes")
		if _, err := e.store.SaveRemoteForm(e.ctx, "acme", form); fieldOf(err) != "chunked" {
			t.Fatalf("chunked sometimes: %v", err)
		}
		form.Set("chunked", "never")
		r, err := e.store.SaveRemoteForm(e.ctx, "acme", form)
		if err != nil {
			t.Fatal(err)
		}
		if r.Chunked != ChunkedNever {
			t.Errorf("saved chunked %q, want never", r.Chunked)
		}
		stored, err := e.store.GetRemote(e.ctx, "acme")
		if err != nil {
			t.Fatal(err)
		}
		if stored.Chunked != ChunkedNever || valueOf(RemoteFields(stored), "chunked") != "never" {
			t.Errorf("stored chunked %q, the form shows %q", stored.Chunked, valueOf(RemoteFields(stored), "chunked"))
		}
	})
}
