package api

import (
	"encoding/json"
	"net/http"

	"wharf/internal/records"
)

// currentSettings is every setting of the catalogue, the stored value or the default.
func (s *Server) currentSettings(r *http.Request) (map[string]string, error) {
	return records.CurrentSettings(r.Context(), s.store)
}

func (s *Server) getSettings(w http.ResponseWriter, r *http.Request) {
	cur, err := s.currentSettings(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, cur)
}

// putSettings takes an object of key → string value, validates all of them and only then
// writes them; keys it leaves out keep their values. It answers with every setting.
func (s *Server) putSettings(w http.ResponseWriter, r *http.Request) {
	var raw map[string]json.RawMessage
	if err := decodeJSON(r, &raw); err != nil {
		s.fail(w, r, err)
		return
	}
	if raw == nil {
		s.fail(w, r, invalid("body", "a JSON object of setting names to string values is required"))
		return
	}
	values := make(map[string]string, len(raw))
	for k, v := range raw {
		var str string
		if err := json.Unmarshal(v, &str); err != nil {
			s.fail(w, r, invalid(k, "must be a JSON string"))
			return
		}
		values[k] = str
	}
	if err := records.UpdateSettings(r.Context(), s.store, values); err != nil {
		s.fail(w, r, err)
		return
	}
	s.ops.SettingsChanged(r.Context())
	cur, err := s.currentSettings(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, cur)
}
