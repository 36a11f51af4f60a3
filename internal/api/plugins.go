package api

import (
	"io"
	"net/http"

	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/records"
)

type pluginTypeView struct {
	Type persistence.PluginType `json:"type"`
	Role module.Role            `json:"role"`
}

func (s *Server) listPluginTypes(w http.ResponseWriter, r *http.Request) {
	p, err := parsePage(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var all []pluginTypeView
	for _, pl := range module.Plugins() {
		all = append(all, pluginTypeView{Type: pl.Type, Role: pl.Role})
	}
	writeJSON(w, http.StatusOK, listBody("types", slicePage(all, p), len(all), p))
}

// The plugin config object is module.Present's: name, type, enabled and the type's own
// fields, never the write-only ones.

func (s *Server) listPluginConfigs(w http.ResponseWriter, r *http.Request) {
	typ, err := pathPluginType(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	p, err := parsePage(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	recs, err := s.store.ListPluginConfigs(r.Context(), typ)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	all := make([]map[string]any, 0, len(recs))
	for _, rec := range recs {
		all = append(all, module.Present(rec))
	}
	writeJSON(w, http.StatusOK, listBody("configs", slicePage(all, p), len(all), p))
}

func (s *Server) createPluginConfig(w http.ResponseWriter, r *http.Request) {
	typ, err := pathPluginType(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rec, err := records.SavePluginConfig(r.Context(), s.store, s.sealer, typ, "", body)
	if err != nil {
		s.fail(w, r, withCode(err, persistence.ErrConflict, "NAME_TAKEN"))
		return
	}
	s.ops.RoutesChanged(r.Context())
	w.Header().Set("Location", "/api/v1/plugins/configs/"+string(typ)+"/"+string(rec.Name))
	writeJSON(w, http.StatusCreated, module.Present(rec))
}

// storedConfig reads the instance the path names; one of another type is not found.
func (s *Server) storedConfig(r *http.Request) (persistence.PluginConfig, error) {
	typ, err := pathPluginType(r)
	if err != nil {
		return persistence.PluginConfig{}, err
	}
	name, err := pathInstanceName(r)
	if err != nil {
		return persistence.PluginConfig{}, err
	}
	rec, err := s.store.GetPluginConfig(r.Context(), name)
	if err != nil {
		return persistence.PluginConfig{}, err
	}
	if rec.Type != typ {
		return persistence.PluginConfig{}, &apiError{status: http.StatusNotFound, code: "NOT_FOUND",
			message: "no " + string(typ) + " instance named " + string(name)}
	}
	return rec, nil
}

func (s *Server) getPluginConfig(w http.ResponseWriter, r *http.Request) {
	rec, err := s.storedConfig(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, module.Present(rec))
}

func (s *Server) updatePluginConfig(w http.ResponseWriter, r *http.Request) {
	stored, err := s.storedConfig(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rec, err := records.SavePluginConfig(r.Context(), s.store, s.sealer, stored.Type, stored.Name, body)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.ops.RoutesChanged(r.Context())
	writeJSON(w, http.StatusOK, module.Present(rec))
}

func (s *Server) deletePluginConfig(w http.ResponseWriter, r *http.Request) {
	stored, err := s.storedConfig(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.store.DeletePluginConfig(r.Context(), stored.Name); err != nil {
		s.fail(w, r, withCode(err, persistence.ErrInUse, "INSTANCE_IN_USE"))
		return
	}
	if err := records.ReleaseCertificates(r.Context(), s.store, stored.Name); err != nil {
		s.log.WarnContext(r.Context(), "release the certificates of a deleted instance", "instance", string(stored.Name), "err", err)
	}
	s.ops.RoutesChanged(r.Context())
	w.WriteHeader(http.StatusNoContent)
}
