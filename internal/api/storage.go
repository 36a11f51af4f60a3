package api

import (
	"context"
	"net/http"

	"wharf/internal/storage"
)

// Storage reports where payloads go and tests the configured store.
type Storage interface {
	// StorageStatus is the payload storage the process runs with beside the one the
	// settings name, which applies at the next start.
	StorageStatus(ctx context.Context) (storage.Status, error)
	// TestStorage writes, reads back, compares and deletes a probe in the store the
	// settings name.
	TestStorage(ctx context.Context) (storage.ProbeResult, error)
}

// errNoStorage answers the storage routes of a process without payload storage.
var errNoStorage = &apiError{status: http.StatusServiceUnavailable, code: "UNAVAILABLE", message: "payload storage is not run by this process"}

func (s *Server) getStorageStatus(w http.ResponseWriter, r *http.Request) {
	if s.storage == nil {
		s.fail(w, r, errNoStorage)
		return
	}
	st, err := s.storage.StorageStatus(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// testStorage answers 200 with the probe's result whether or not the store passed: the
// request itself succeeded, and the body names the step that failed.
func (s *Server) testStorage(w http.ResponseWriter, r *http.Request) {
	if s.storage == nil {
		s.fail(w, r, errNoStorage)
		return
	}
	res, err := s.storage.TestStorage(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}
