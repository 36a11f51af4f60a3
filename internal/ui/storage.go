package ui

import (
	"context"
	"net/http"

	"wharf/internal/records"
	"wharf/internal/storage"
)

// Storage reports where payloads go and tests the store the settings name.
type Storage interface {
	StorageStatus(ctx context.Context) (storage.Status, error)
	TestStorage(ctx context.Context) (storage.ProbeResult, error)
}

var _ = registerPages(nil, (*Server).storageRoutes)

func (s *Server) storageRoutes() []pageRoute {
	return []pageRoute{
		{"POST /ui/settings/storage/test", s.adminOnly(http.HandlerFunc(s.testStoragePage))},
	}
}

// storageCard is the settings page's payload storage card: what runs, what the settings
// name, and the result of a test when one was asked for.
type storageCard struct {
	Status storage.Status
	Error  string
	Probe  *storage.ProbeResult
}

func (s *Server) storageCard(r *http.Request, probe *storage.ProbeResult) *storageCard {
	if s.storage == nil {
		return nil
	}
	st, err := s.storage.StorageStatus(r.Context())
	if err != nil {
		s.log.ErrorContext(r.Context(), "read the payload storage status", "err", err)
		return &storageCard{Error: "The storage status could not be read; the server log says why.", Probe: probe}
	}
	return &storageCard{Status: st, Probe: probe}
}

// testStoragePage runs the storage test and shows its result on the settings page.
func (s *Server) testStoragePage(w http.ResponseWriter, r *http.Request) {
	if s.storage == nil {
		http.Error(w, "payload storage is not run by this process", http.StatusServiceUnavailable)
		return
	}
	res, err := s.storage.TestStorage(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	cur, err := records.CurrentSettings(r.Context(), s.store)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	status := http.StatusOK
	if !res.OK {
		status = http.StatusUnprocessableEntity
	}
	s.renderSettingsWith(w, r, status, cur, nil, &res)
}
