package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"wharf/internal/persistence"
)

// Erasure erases messages' content (erasure.Service).
type Erasure interface {
	Count(ctx context.Context, f persistence.ErasureFilter) (persistence.ErasureCount, error)
	Erase(ctx context.Context, f persistence.ErasureFilter, actor string) (persistence.ErasureResult, error)
	EraseMessage(ctx context.Context, id int64, actor string) (persistence.ErasureResult, error)
}

var errNoErasure = &apiError{status: http.StatusServiceUnavailable, code: "ERASURE_UNAVAILABLE",
	message: "erasure is not available in this process"}

// erasureAnswer is the answer of POST /api/v1/erasures: the count of a dry run, or what
// the erasure did.
type erasureAnswer struct {
	DryRun bool `json:"dry_run"`
	persistence.ErasureResult
	Erasable int `json:"erasable"`
}

// erase erases every message of a party in a time range, or with ?dry_run=true says how
// many it would erase. Erasure destroys data, so only administrators (and API tokens)
// may ask for it.
func (s *Server) erase(w http.ResponseWriter, r *http.Request) {
	if !s.requireAdminFor(w, r, "erasures") {
		return
	}
	if s.erasure == nil {
		s.fail(w, r, errNoErasure)
		return
	}
	dry, err := dryRun(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var f persistence.ErasureFilter
	if err := decodeJSON(r, &f); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := f.Check(); err != nil {
		s.fail(w, r, err)
		return
	}
	if dry {
		c, err := s.erasure.Count(r.Context(), f)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, erasureAnswer{DryRun: true, Erasable: c.Erasable,
			ErasureResult: persistence.ErasureResult{InFlight: c.InFlight, AlreadyErased: c.AlreadyErased}})
		return
	}
	res, err := s.erasure.Erase(r.Context(), f, actor(r))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, erasureAnswer{ErasureResult: res})
}

// eraseMessage erases one message's content; it answers with the message's detail as it
// now stands.
func (s *Server) eraseMessage(w http.ResponseWriter, r *http.Request) {
	if !s.requireAdminFor(w, r, "erasures") {
		return
	}
	if s.erasure == nil {
		s.fail(w, r, errNoErasure)
		return
	}
	s.messageAction(w, r, func(r *http.Request, id int64) error {
		_, err := s.erasure.EraseMessage(r.Context(), id, actor(r))
		return erasedCode(err, "NOT_ERASABLE")
	})
}

// dryRun reads the dry_run query parameter.
func dryRun(r *http.Request) (bool, error) {
	v := r.URL.Query().Get("dry_run")
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, invalid("dry_run", fmt.Sprintf("%q is not true or false", v))
	}
	return b, nil
}

// erasedCode names an erased message's refusal MESSAGE_ERASED and any other conflict
// code.
func erasedCode(err error, code string) error {
	if errors.Is(err, persistence.ErrErased) {
		return withCode(err, persistence.ErrErased, "MESSAGE_ERASED")
	}
	return withCode(err, persistence.ErrConflict, code)
}

// errErasedPayload answers a download of an erased message's payload.
func errErasedPayload(m persistence.Message) error {
	return &apiError{status: http.StatusGone, code: "MESSAGE_ERASED",
		message: fmt.Sprintf("message %d was erased at %s: its payloads were deleted", m.ID, m.ErasedAt.UTC().Format("2006-01-02T15:04:05Z"))}
}
