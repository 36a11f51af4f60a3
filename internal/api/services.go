package api

import (
	"cmp"
	"context"
	"net/http"
	"slices"

	"wharf/internal/persistence"
)

func (s *Server) listServices(w http.ResponseWriter, r *http.Request) {
	p, err := parsePage(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	all := s.ops.Services(r.Context())
	slices.SortFunc(all, func(a, b ServiceStatus) int { return cmp.Compare(a.Name, b.Name) })
	writeJSON(w, http.StatusOK, listBody("services", slicePage(all, p), len(all), p))
}

// serviceActionFunc is one of Ops' start, stop and restart.
type serviceActionFunc func(o Ops, ctx context.Context, name persistence.InstanceName) error

var (
	actionStart   serviceActionFunc = Ops.StartService
	actionStop    serviceActionFunc = Ops.StopService
	actionRestart serviceActionFunc = Ops.RestartService
)

// serviceAction starts, stops or restarts the instance the path names (type and name must
// agree) and answers with its status afterwards.
func (s *Server) serviceAction(act serviceActionFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rec, err := s.storedConfig(r)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if err := decodeNoBody(r); err != nil {
			s.fail(w, r, err)
			return
		}
		if err := act(s.ops, r.Context(), rec.Name); err != nil {
			s.fail(w, r, err)
			return
		}
		for _, st := range s.ops.Services(r.Context()) {
			if st.Name == rec.Name {
				writeJSON(w, http.StatusOK, st)
				return
			}
		}
		w.WriteHeader(http.StatusNoContent)
	}
}
