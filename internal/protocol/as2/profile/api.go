package profile

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/retry"
)

// REST paths of the profiles.
const (
	LocalProfilesPath  = "/api/v1/as2/local-profiles"
	RemoteProfilesPath = "/api/v1/as2/remote-profiles"
)

// Routes are the profiles' REST operations under /api/v1.
func (s *Store) Routes() []module.APIRoute {
	return []module.APIRoute{
		{Method: "GET", Path: LocalProfilesPath, Handle: s.listLocals},
		{Method: "POST", Path: LocalProfilesPath, Body: module.BodyJSON, Handle: s.createLocal},
		{Method: "GET", Path: LocalProfilesPath + "/{organization}", Handle: s.getLocal},
		{Method: "PUT", Path: LocalProfilesPath + "/{organization}", Body: module.BodyJSON, Handle: s.updateLocal},
		{Method: "DELETE", Path: LocalProfilesPath + "/{organization}", Handle: s.deleteLocal},

		{Method: "GET", Path: RemoteProfilesPath, Handle: s.listRemotes},
		{Method: "POST", Path: RemoteProfilesPath, Body: module.BodyJSON, Handle: s.createRemote},
		{Method: "GET", Path: RemoteProfilesPath + "/{partner}", Handle: s.getRemote},
		{Method: "PUT", Path: RemoteProfilesPath + "/{partner}", Body: module.BodyJSON, Handle: s.updateRemote},
		{Method: "DELETE", Path: RemoteProfilesPath + "/{partner}", Handle: s.deleteRemote},
	}
}

// RemoteView is a remote profile as the REST API shows it: with the certificate that
// encrypts what we send now, also the single-certificate form scripts may send.
type RemoteView struct {
	Remote
	// PartnerCertificateID is the partner certificate used for encryption now (the newest
	// valid one), or null when none qualifies.
	PartnerCertificateID *int64 `json:"partner_certificate_id"`
}

func (s *Store) listLocals(r *http.Request) (int, any, error) {
	p, err := parsePage(r)
	if err != nil {
		return 0, nil, err
	}
	all, total, err := s.ListLocals(r.Context(), p)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, listBody("local_profiles", all, total, p), nil
}

func (s *Store) createLocal(r *http.Request) (int, any, error) {
	l := NewLocal()
	got, err := decodeProfile(r, &l, "organization", nil)
	if err != nil {
		return 0, nil, err
	}
	org := got.name
	if org == "" {
		return 0, nil, fieldErr("organization", "required")
	}
	l.Organization = org
	out, err := s.CreateLocal(r.Context(), l)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, out, nil
}

func (s *Store) getLocal(r *http.Request) (int, any, error) {
	org, err := pathParty(r, "organization")
	if err != nil {
		return 0, nil, err
	}
	out, err := s.GetLocal(r.Context(), org)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, out, nil
}

func (s *Store) updateLocal(r *http.Request) (int, any, error) {
	org, err := pathParty(r, "organization")
	if err != nil {
		return 0, nil, err
	}
	l := NewLocal()
	got, err := decodeProfile(r, &l, "organization", nil)
	if err != nil {
		return 0, nil, err
	}
	if named := got.name; named != "" && named != org {
		return 0, nil, fieldErr("organization", fmt.Sprintf("must be %q as in the path, or left out", org))
	}
	l.Organization = org
	out, err := s.UpdateLocal(r.Context(), l)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, out, nil
}

func (s *Store) deleteLocal(r *http.Request) (int, any, error) {
	org, err := pathParty(r, "organization")
	if err != nil {
		return 0, nil, err
	}
	if err := s.DeleteLocal(r.Context(), org); err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, nil
}

func (s *Store) listRemotes(r *http.Request) (int, any, error) {
	p, err := parsePage(r)
	if err != nil {
		return 0, nil, err
	}
	all, total, err := s.ListRemotes(r.Context(), p)
	if err != nil {
		return 0, nil, err
	}
	views := make([]RemoteView, 0, len(all))
	certs := certCache{}
	for _, rem := range all {
		v, err := s.view(r.Context(), rem, certs)
		if err != nil {
			return 0, nil, err
		}
		views = append(views, v)
	}
	return http.StatusOK, listBody("remote_profiles", views, total, p), nil
}

func (s *Store) createRemote(r *http.Request) (int, any, error) {
	rem := NewRemote()
	partner, err := decodeRemote(r, &rem)
	if err != nil {
		return 0, nil, err
	}
	if partner == "" {
		return 0, nil, fieldErr("partner", "required")
	}
	rem.Partner = partner
	out, err := s.CreateRemote(r.Context(), rem)
	if err != nil {
		return 0, nil, err
	}
	v, err := s.view(r.Context(), out, certCache{})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, v, nil
}

func (s *Store) getRemote(r *http.Request) (int, any, error) {
	partner, err := pathParty(r, "partner")
	if err != nil {
		return 0, nil, err
	}
	out, err := s.GetRemote(r.Context(), partner)
	if err != nil {
		return 0, nil, err
	}
	v, err := s.view(r.Context(), out, certCache{})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, v, nil
}

func (s *Store) updateRemote(r *http.Request) (int, any, error) {
	partner, err := pathParty(r, "partner")
	if err != nil {
		return 0, nil, err
	}
	rem := NewRemote()
	named, err := decodeRemote(r, &rem)
	if err != nil {
		return 0, nil, err
	}
	if named != "" && named != partner {
		return 0, nil, fieldErr("partner", fmt.Sprintf("must be %q as in the path, or left out", partner))
	}
	rem.Partner = partner
	out, err := s.UpdateRemote(r.Context(), rem)
	if err != nil {
		return 0, nil, err
	}
	v, err := s.view(r.Context(), out, certCache{})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, v, nil
}

func (s *Store) deleteRemote(r *http.Request) (int, any, error) {
	partner, err := pathParty(r, "partner")
	if err != nil {
		return 0, nil, err
	}
	if err := s.DeleteRemote(r.Context(), partner); err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, nil
}

// decodeRemote decodes a remote profile, taking partner_certificate_id (DESIGN §9's
// single-certificate form) as the list when partner_certificate_ids is absent. When both
// come, as in an object read back from GET, the single one must be in the list.
func decodeRemote(r *http.Request, rem *Remote) (persistence.PartyName, error) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return "", err
	}
	return decodeRemoteJSON(raw, rem)
}

// decodeRemoteJSON is decodeRemote of a body already read; the UI's form arrives here too.
func decodeRemoteJSON(raw []byte, rem *Remote) (persistence.PartyName, error) {
	var single json.RawMessage
	got, err := decodeProfileJSON(raw, rem, "partner", map[string]*json.RawMessage{"partner_certificate_id": &single})
	if err != nil {
		return "", err
	}
	partner := got.name
	if single == nil {
		return partner, nil
	}
	var id *int64
	if err := json.Unmarshal(single, &id); err != nil {
		return "", fieldErr("partner_certificate_id", "must be a JSON number or null")
	}
	if id != nil && *id < 1 {
		return "", fieldErr("partner_certificate_id", "must be a certificate id, or null")
	}
	if got.keys["partner_certificate_ids"] {
		if id != nil && !slices.Contains(rem.PartnerCertificateIDs, *id) {
			return "", fieldErr("partner_certificate_id", "must be one of partner_certificate_ids when both are given")
		}
		return partner, nil
	}
	rem.PartnerCertificateIDs = []int64{}
	if id != nil {
		rem.PartnerCertificateIDs = []int64{*id}
	}
	return partner, nil
}

// decoded is what decodeProfile found besides the fields it set.
type decoded struct {
	// name is the party the body names, "" when it names none.
	name persistence.PartyName
	keys map[string]bool
}

// decodeProfile reads a JSON object onto dst (a profile holding its defaults) one key at
// a time, so that an error names the key, even when the value's own type refuses it. The
// key nameKey (the party) is returned rather than decoded, so the path can win; keys in
// extra are handed back raw.
func decodeProfile(r *http.Request, dst any, nameKey string, extra map[string]*json.RawMessage) (decoded, error) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return decoded{}, err
	}
	return decodeProfileJSON(raw, dst, nameKey, extra)
}

// decodeProfileJSON is decodeProfile of a body already read.
func decodeProfileJSON(raw []byte, dst any, nameKey string, extra map[string]*json.RawMessage) (decoded, error) {
	var err error
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return decoded{}, fieldErr("body", "must be one JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return decoded{}, fieldErr("body", "unexpected data after the JSON object")
	}
	out := decoded{keys: map[string]bool{}}
	for _, key := range sortedKeys(obj) {
		val := obj[key]
		out.keys[key] = true
		switch {
		case key == nameKey:
			var s string
			if err := json.Unmarshal(val, &s); err != nil {
				return decoded{}, fieldErr(key, "must be a JSON string")
			}
			if s != "" {
				if out.name, err = persistence.ParsePartyName(s); err != nil {
					return decoded{}, fieldErr(key, err.Error())
				}
			}
		case extra[key] != nil:
			*extra[key] = val
		case key == "created_at" || key == "updated_at":
			// Read back from GET; the store sets them.
		default:
			if err := decodeKey(key, val, dst); err != nil {
				return decoded{}, err
			}
		}
	}
	return out, nil
}

// decodeKey decodes {key: val} onto dst strictly.
func decodeKey(key string, val json.RawMessage, dst any) error {
	one, err := json.Marshal(map[string]json.RawMessage{key: val})
	if err != nil {
		return fieldErr(key, "malformed JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(one))
	dec.DisallowUnknownFields()
	err = dec.Decode(dst)
	if err == nil {
		return nil
	}
	// A retry policy names its own refused field.
	var re *retry.FieldError
	if errors.As(err, &re) {
		return fieldErr(strings.TrimSuffix(key+"."+re.Field, "."), re.Message)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := key
		if te.Field != "" {
			field = te.Field
		}
		return fieldErr(field, "must be a JSON "+jsonKind(te.Type.Kind().String()))
	}
	if rest, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		inner := strings.Trim(rest, `"`)
		if inner == key {
			return fieldErr(key, "unknown field")
		}
		return fieldErr(key+"."+inner, "unknown field")
	}
	return fieldErr(key, err.Error())
}

func jsonKind(goKind string) string {
	switch goKind {
	case "struct", "map":
		return "object"
	case "slice", "array":
		return "array"
	case "bool":
		return "boolean"
	case "string":
		return "string"
	default:
		return "number"
	}
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// certCache holds the certificates one request has read.
type certCache map[int64]*x509.Certificate

// view adds the certificate used for encryption now, and shows the retry policy in
// effect: the stored one with the defaults filled in, which the sender applies.
func (s *Store) view(ctx context.Context, r Remote, cache certCache) (RemoteView, error) {
	r.Retry = r.Retry.WithDefaults()
	v := RemoteView{Remote: r}
	var certs []*x509.Certificate
	byCert := map[*x509.Certificate]int64{}
	for _, id := range r.PartnerCertificateIDs {
		c, ok := cache[id]
		if !ok {
			rec, err := s.core.GetCertificate(ctx, id)
			if errors.Is(err, persistence.ErrNotFound) {
				continue
			}
			if err != nil {
				return RemoteView{}, fmt.Errorf("read certificate %d: %w", id, err)
			}
			if c, err = x509.ParseCertificate(rec.DER); err != nil {
				continue // damaged: it cannot encrypt, which is what the view says
			}
			cache[id] = c
		}
		certs = append(certs, c)
		byCert[c] = id
	}
	if c := EncryptionCertificate(certs, time.Now()); c != nil {
		id := byCert[c]
		v.PartnerCertificateID = &id
	}
	return v, nil
}

// Paging of lists, as the core's.
const (
	defaultLimit = 100
	maxLimit     = 1000
)

func parsePage(r *http.Request) (persistence.ListOptions, error) {
	p := persistence.ListOptions{Limit: defaultLimit}
	q := r.URL.Query()
	if q.Has("limit") {
		n, err := strconv.Atoi(q.Get("limit"))
		if err != nil || n < 1 || n > maxLimit {
			return p, fieldErr("limit", fmt.Sprintf("must be a whole number from 1 to %d", maxLimit))
		}
		p.Limit = n
	}
	if q.Has("offset") {
		n, err := strconv.Atoi(q.Get("offset"))
		if err != nil || n < 0 {
			return p, fieldErr("offset", "must be a whole number of at least 0")
		}
		p.Offset = n
	}
	return p, nil
}

func listBody[T any](collection string, items []T, total int, p persistence.ListOptions) map[string]any {
	if items == nil {
		items = []T{}
	}
	return map[string]any{collection: items, "total": total, "limit": p.Limit, "offset": p.Offset}
}

func pathParty(r *http.Request, name string) (persistence.PartyName, error) {
	n, err := persistence.ParsePartyName(r.PathValue(name))
	if err != nil {
		return "", fieldErr(name, err.Error())
	}
	return n, nil
}
