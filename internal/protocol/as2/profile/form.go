package profile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"wharf/internal/module"
	"wharf/internal/persistence"
)

// The web UI edits profiles in forms whose field names are the JSON keys: a form is turned
// into the JSON object REST would take and goes through the same decoding and rules, so a
// refusal names the same field either way. Fields a form leaves out (a remote profile's
// retry policy) keep their stored value.

// encoding is how a form value becomes a JSON value.
type encoding int

const (
	encString      encoding = iota
	encInt                  // a whole number
	encOptionalInt          // a whole number, or empty for null
	encBool                 // a checkbox
	encIDs                  // certificate ids separated by commas or spaces
	encStrings              // words separated by commas or spaces
)

type formField struct {
	name, label, hint string
	kind              module.PanelFieldKind
	enc               encoding
	options           []string
	// pick makes the field a select of stored certificates (see CertificateSelects).
	pick certPick
	// group is the part of the form the field is shown in (see form_groups.go).
	group formGroup
}

func names[T ~string](all []T) []string {
	out := make([]string, len(all))
	for i, v := range all {
		out[i] = string(v)
	}
	return out
}

var localForm = []formField{
	{name: "as2_id", label: "Our AS2 id", hint: "How partners address this organization.", kind: module.FieldText, group: groupIdentity},
	{name: "signing_certificate_id", label: "Signing certificate", hint: "One of our certificates with its private key; it signs our messages.", kind: module.FieldNumber, enc: encInt, pick: certPick{ours: true, none: "0", noneLabel: "None"}, group: groupIdentity},
	{name: "decryption_certificate_id", label: "Decryption certificate", hint: "One of our RSA certificates with its private key; partners encrypt to it.", kind: module.FieldNumber, enc: encInt, pick: certPick{ours: true, none: "0", noneLabel: "None"}, group: groupIdentity},
	{name: "previous_decryption_certificate_id", label: "Previous decryption certificate", hint: "Also tried during a key rollover.", kind: module.FieldNumber, enc: encOptionalInt, pick: certPick{ours: true, noneLabel: "None"}, group: groupAdvanced},
	{name: "mdn_notification_to", label: "Receipts requested from", hint: "The address our messages ask receipts for (the Disposition-Notification-To header); empty for our AS2 id.", kind: module.FieldText, group: groupReceipts},
	{name: "max_message_size_mib", label: "Largest inbound message (MiB)", kind: module.FieldNumber, enc: encInt, group: groupLimits},
	{name: "mdn_signing_certificate_id", label: "MDN signing certificate", hint: "Signs our MDNs.", kind: module.FieldNumber, enc: encOptionalInt, pick: certPick{ours: true, noneLabel: "The signing certificate"}, group: groupReceipts},
	{name: "include_chain", label: "Send the certificate chain in signatures", hint: "The intermediates above our certificates, from the certificate store.", kind: module.FieldCheckbox, enc: encBool, group: groupAdvanced},
}

var remoteForm = []formField{
	{name: "as2_id", label: "The partner's AS2 id", hint: "As the partner gave it.", kind: module.FieldText, group: groupIdentity},
	{name: "endpoint_url", label: "Where to send messages", hint: "The partner's AS2 address.", kind: module.FieldURL, group: groupIdentity},
	{name: "partner_certificate_ids", label: "Partner certificates", hint: "The partner's own certificates (never one with our key); the newest valid one encrypts.", kind: module.FieldText, enc: encIDs, pick: certPick{multiple: true}, group: groupIdentity},
	{name: "our_signing_certificate_id", label: "Our signing certificate", hint: "Overrides the organization's.", kind: module.FieldNumber, enc: encOptionalInt, pick: certPick{ours: true, noneLabel: "The organization's"}, group: groupAdvanced},
	{name: "our_decryption_certificate_id", label: "Our decryption certificate", hint: "Overrides the organization's.", kind: module.FieldNumber, enc: encOptionalInt, pick: certPick{ours: true, noneLabel: "The organization's"}, group: groupAdvanced},
	{name: "compress", label: "Compress our messages", kind: module.FieldCheckbox, enc: encBool, group: groupSecurity},
	{name: "compression_order", label: "Compression order", hint: "When also signed: compress before signing (the signature covers the compressed data) or after.", kind: module.FieldSelect, options: names(AllCompressionOrders), group: groupAdvanced},
	{name: "chunked", label: "Chunked requests", hint: "auto: a large message is sent as it is built (Transfer-Encoding: chunked); never: it is built into a temporary file first and sent with its length, for products that refuse chunked requests.", kind: module.FieldSelect, options: names(AllChunkings), group: groupAdvanced},
	{name: "signing_algorithm", label: "Sign our messages with", hint: "none sends them unsigned.", kind: module.FieldSelect, options: names(AllSigningAlgorithms), group: groupSecurity},
	{name: "encryption_algorithm", label: "Encrypt our messages with", hint: "none sends them unencrypted.", kind: module.FieldSelect, options: names(AllEncryptionAlgorithms), group: groupSecurity},
	{name: "gcm_confirmed", label: "Partner confirmed it opens AES-GCM", hint: "Needed for aes128-gcm and aes256-gcm; OpenAS2 4.9.0 and pyas2-lib 1.4.4 cannot open it.", kind: module.FieldCheckbox, enc: encBool, group: groupSecurity},
	{name: "key_transport", label: "How the message key is wrapped", hint: "rsa-pkcs1v15 is what most products expect; rsa-oaep where the partner asks for it.", kind: module.FieldSelect, options: names(AllKeyTransports), group: groupAdvanced},
	{name: "mdn_mode", label: "Receipt to ask for", hint: "sync: in the same connection; async: later, at our receipt address; none: no receipt.", kind: module.FieldSelect, options: names(AllMDNModes), group: groupReceipts},
	{name: "signed_mdn", label: "Ask for a signed receipt", kind: module.FieldCheckbox, enc: encBool, group: groupReceipts},
	{name: "mdn_mic_algorithm", label: "Checksum (MIC) the receipt should carry", kind: module.FieldSelect, options: names(AllMICAlgorithms), group: groupReceipts},
	{name: "async_mdn_url", label: "Where the partner sends asynchronous receipts", hint: "Empty: our receiver's receipt address.", kind: module.FieldURL, group: groupReceipts},
	{name: "require_signed", label: "Refuse unsigned messages from the partner", kind: module.FieldCheckbox, enc: encBool, group: groupSecurity},
	{name: "require_encrypted", label: "Refuse unencrypted messages from the partner", kind: module.FieldCheckbox, enc: encBool, group: groupSecurity},
	{name: "allow_sha1", label: "Accept SHA-1 signatures from the partner", hint: "Only for old products that cannot use SHA-2.", kind: module.FieldCheckbox, enc: encBool, group: groupSecurity},
	{name: "mic_preference", label: "Checksum (MIC) of our receipts", hint: "When the partner signs with one digest and asks for another MIC: auto follows its product (OpenAS2 the requested one, pyas2-lib the signature's), else the requested one.", kind: module.FieldSelect, options: names(AllMICPreferences), group: groupReceipts},
	{name: "async_mdn_hosts", label: "Other hosts our asynchronous receipts may go to", hint: "Hosts besides the endpoint URL's that our async MDNs may go to (e.g. localhost, which some products send by default), separated by commas.", kind: module.FieldText, enc: encStrings, group: groupReceipts},
	{name: "duplicate_filename", label: "A file name the partner sends again", hint: "accept, warn (delivered and flagged) or refuse.", kind: module.FieldSelect, options: names(AllDuplicateFilenames), group: groupLimits},
	{name: "duplicate_filename_window_hours", label: "…counts as sent again within (hours)", kind: module.FieldNumber, enc: encInt, group: groupLimits},
	{name: "duplicate_content", label: "A document the partner sends again under a new Message-ID", hint: "A document the partner sent before under another Message-ID; warn or refuse for OpenAS2.", kind: module.FieldSelect, options: names(AllDuplicateFilenames), group: groupLimits},
	{name: "duplicate_content_window_hours", label: "…counts as sent again within (hours)", kind: module.FieldNumber, enc: encInt, group: groupLimits},
	{name: "connect_timeout_seconds", label: "Time to connect (seconds)", kind: module.FieldNumber, enc: encInt, group: groupLimits},
	{name: "request_timeout_seconds", label: "Time for a whole request (seconds)", kind: module.FieldNumber, enc: encInt, group: groupLimits},
	{name: "receipt_timeout_minutes", label: "Time to wait for an asynchronous receipt (minutes)", kind: module.FieldNumber, enc: encInt, group: groupLimits},
	{name: "tls_trust", label: "TLS trust", hint: "system roots (plus the roots below), the profile's roots alone, or a pinned certificate.", kind: module.FieldSelect, options: names(AllTLSTrusts), group: groupAdvanced},
	{name: "tls_trust_certificate_ids", label: "TLS roots", hint: "Authorities the partner's HTTPS server certificate chains to.", kind: module.FieldText, enc: encIDs, pick: certPick{multiple: true, roots: true}, group: groupAdvanced},
	{name: "tls_pinned_sha256", label: "Pinned server certificate (SHA-256)", hint: "With pinned trust: the fingerprint of the partner's server certificate.", kind: module.FieldText, group: groupAdvanced},
	{name: "max_message_size_mib", label: "Largest message (MiB)", kind: module.FieldNumber, enc: encInt, group: groupLimits},
	{name: "algorithm_protection", label: "CMS algorithm protection (RFC 6211)", hint: "Adds the attribute to our signatures; some IBM products require it.", kind: module.FieldCheckbox, enc: encBool, group: groupAdvanced},
	{name: "correlation_header", label: "Header carrying the correlation id", hint: "A header of the partner's messages (e.g. X-Correlation-ID) whose value becomes the message's correlation id, to trace it; empty: the AS2 Message-ID.", kind: module.FieldText, group: groupAdvanced},
}

// LocalFields is the local profile's form showing l.
func LocalFields(l Local) []module.PanelField {
	// An AS2 id or a party name refuses to be marshalled empty, as a new profile's are;
	// the form shows them as they are.
	id := l.AS2ID
	l.AS2ID, l.Organization = "placeholder", "placeholder"
	return withValue(fieldsOf(localForm, l), "as2_id", string(id))
}

// RemoteFields is the remote profile's form showing r.
func RemoteFields(r Remote) []module.PanelField {
	id := r.AS2ID
	r.AS2ID, r.Partner = "placeholder", "placeholder"
	return withValue(fieldsOf(remoteForm, r.normalized()), "as2_id", string(id))
}

func withValue(fields []module.PanelField, name, value string) []module.PanelField {
	for i := range fields {
		if fields[i].Name == name {
			fields[i].Value = value
		}
	}
	return fields
}

func (f formField) panelField() module.PanelField {
	return module.PanelField{Name: f.name, Label: f.label, Hint: f.hint, Kind: f.kind, Options: f.options,
		Group: f.group.title, Folded: f.group.folded}
}

// fieldsOf reads each field's value from the profile's JSON form. A profile that cannot
// be marshalled is a programming error (see LocalFields), caught by the tests.
func fieldsOf(spec []formField, profile any) []module.PanelField {
	raw, err := json.Marshal(profile)
	if err != nil {
		panic(fmt.Sprintf("profile form: %v", err))
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		panic(fmt.Sprintf("profile form: %v", err))
	}
	out := make([]module.PanelField, 0, len(spec))
	for _, f := range spec {
		pf := f.panelField()
		pf.Value = formValue(obj[f.name])
		out = append(out, pf)
	}
	return out
}

func formValue(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case bool:
		if v {
			return "true"
		}
		return ""
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = formValue(x)
		}
		return strings.Join(parts, ", ")
	default:
		return fmt.Sprint(v)
	}
}

// formJSON turns a submitted form into the JSON object of the fields in spec. A field
// that is not a number where one is wanted is left out of the object and refused in the
// error, so the caller can still check the rest and name every invalid field at once.
func formJSON(spec []formField, form url.Values) ([]byte, error) {
	obj := map[string]any{}
	var errs []error
	for _, f := range spec {
		v := strings.TrimSpace(form.Get(f.name))
		if f.enc == encIDs {
			// A multiple select sends each id as a value of its own.
			v = strings.Join(form[f.name], ",")
		}
		switch f.enc {
		case encString:
			obj[f.name] = v
		case encBool:
			obj[f.name] = v != ""
		case encInt, encOptionalInt:
			if v == "" && f.enc == encOptionalInt {
				obj[f.name] = nil
				continue
			}
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				errs = append(errs, fieldErr(f.name, "enter a whole number"))
				continue
			}
			obj[f.name] = n
		case encIDs:
			ids := []int64{}
			bad := false
			for _, w := range splitList(v) {
				n, err := strconv.ParseInt(w, 10, 64)
				if err != nil {
					errs = append(errs, fieldErr(f.name, "choose certificates: their ids separated by commas"))
					bad = true
					break
				}
				ids = append(ids, n)
			}
			if !bad {
				obj[f.name] = ids
			}
		case encStrings:
			obj[f.name] = append([]string{}, splitList(v)...)
		}
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	return raw, errors.Join(errs...)
}

// refuseForm answers a form some of whose fields are not numbers: those errors with what
// the profile's own checks find in the rest.
func refuseForm(formErr, decodeErr error, validate func() error) error {
	var errs persistence.FieldErrors
	errs.Merge(formErr)
	if !errs.Merge(decodeErr) {
		return decodeErr
	}
	if decodeErr == nil {
		if err := validate(); !errs.Merge(err) {
			return err
		}
	}
	return errs
}

func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' })
}

// SaveLocalForm creates or replaces org's local profile from the UI's form: the form's
// fields onto the stored profile (the defaults for a new one), checked like REST.
func (s *Store) SaveLocalForm(ctx context.Context, org persistence.PartyName, form url.Values) (Local, error) {
	l, creating, err := s.localFromForm(ctx, org, form)
	if err != nil {
		return Local{}, err
	}
	if creating {
		return s.CreateLocal(ctx, l)
	}
	return s.UpdateLocal(ctx, l)
}

// CheckLocalForm refuses the form as SaveLocalForm would, writing nothing.
func (s *Store) CheckLocalForm(ctx context.Context, org persistence.PartyName, form url.Values) error {
	l, creating, err := s.localFromForm(ctx, org, form)
	if err != nil {
		return err
	}
	if err := s.prepareLocal(ctx, l); err != nil {
		return err
	}
	return s.sql.Read(ctx, func(tx module.Tx) error { return checkLocalConflicts(ctx, tx, l, creating) })
}

// localFromForm is org's local profile as the form makes it, checked; creating tells
// that none is stored yet.
func (s *Store) localFromForm(ctx context.Context, org persistence.PartyName, form url.Values) (Local, bool, error) {
	l, err := s.GetLocal(ctx, org)
	creating := errors.Is(err, persistence.ErrNotFound)
	switch {
	case creating:
		l = NewLocal()
	case err != nil:
		return Local{}, false, err
	}
	raw, formErr := formJSON(localForm, form)
	if raw == nil {
		return Local{}, false, formErr
	}
	_, err = decodeProfileJSON(raw, &l, "organization", nil)
	l.Organization = org
	if formErr != nil {
		return Local{}, false, refuseForm(formErr, err, l.Validate)
	}
	if err != nil {
		return Local{}, false, err
	}
	return l, creating, nil
}

// SaveRemoteForm creates or replaces partner's remote profile from the UI's form, as
// SaveLocalForm does.
func (s *Store) SaveRemoteForm(ctx context.Context, partner persistence.PartyName, form url.Values) (Remote, error) {
	r, err := s.GetRemote(ctx, partner)
	creating := errors.Is(err, persistence.ErrNotFound)
	switch {
	case creating:
		r = NewRemote()
	case err != nil:
		return Remote{}, err
	}
	raw, formErr := formJSON(remoteForm, form)
	if raw == nil {
		return Remote{}, formErr
	}
	_, err = decodeRemoteJSON(raw, &r)
	r.Partner = partner
	if formErr != nil {
		return Remote{}, refuseForm(formErr, err, r.Validate)
	}
	if err != nil {
		return Remote{}, err
	}
	if creating {
		return s.CreateRemote(ctx, r)
	}
	return s.UpdateRemote(ctx, r)
}
