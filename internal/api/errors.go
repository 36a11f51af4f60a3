package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"wharf/internal/persistence"
	"wharf/internal/records"
)

// apiError is an answer decided by the API itself (authentication, media type, request
// syntax) rather than by the domain.
type apiError struct {
	status  int
	code    string
	message string
	details map[string]any
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

// codedError gives a domain error a more specific code than its sentinel's; the status
// still comes from the sentinel (see sentinels).
type codedError struct {
	code string
	err  error
}

func (e *codedError) Error() string { return e.err.Error() }
func (e *codedError) Unwrap() error { return e.err }

// withCode names err's code when err is target, such as PARTY_IN_USE for ErrInUse.
func withCode(err, target error, code string) error {
	if err != nil && errors.Is(err, target) {
		return &codedError{code: code, err: err}
	}
	return err
}

// sentinels is the one table from the store's sentinel errors to HTTP.
var sentinels = []struct {
	err    error
	status int
	code   string
}{
	{persistence.ErrNotFound, http.StatusNotFound, "NOT_FOUND"},
	{persistence.ErrInUse, http.StatusConflict, "IN_USE"},
	{persistence.ErrConflict, http.StatusConflict, "CONFLICT"},
	{persistence.ErrLostClaim, http.StatusConflict, "CONFLICT"},
}

// errorBody is the JSON of every error response.
type errorBody struct {
	Error errorObject `json:"error"`
}

type errorObject struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details"`
}

// fail answers a request with the error err maps to. This is the one place domain errors
// meet the wire; an error it does not know is a 500 that is logged once here and tells
// the client only the request id.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	writeError(w, s.classify(r, err))
}

func (s *Server) classify(r *http.Request, err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	if me := moduleError(err); me != nil {
		return me
	}
	if fes := fieldErrors(err); len(fes) > 0 {
		details := make(map[string]any, len(fes))
		msgs := make([]string, 0, len(fes))
		for _, fe := range fes {
			if _, dup := details[fe.Field]; !dup {
				details[fe.Field] = fe.Message
				msgs = append(msgs, fe.Error())
			}
		}
		return &apiError{status: http.StatusBadRequest, code: "INVALID_INPUT",
			message: "invalid input: " + strings.Join(msgs, "; "), details: details}
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return &apiError{status: http.StatusRequestEntityTooLarge, code: "PAYLOAD_TOO_LARGE",
			message: "the request body is larger than " + strconv.FormatInt(mbe.Limit, 10) + " bytes"}
	}
	var rre *records.RedundantRouteError
	if errors.As(err, &rre) {
		ae := &apiError{status: http.StatusConflict, code: "ROUTE_REDUNDANT", message: rre.Error(), details: map[string]any{}}
		if rre.Existing.ID != 0 {
			ae.details["route_id"] = rre.Existing.ID
		}
		return ae
	}
	for _, m := range sentinels {
		if errors.Is(err, m.err) {
			code := m.code
			var ce *codedError
			if errors.As(err, &ce) {
				code = ce.code
			}
			return &apiError{status: m.status, code: code, message: err.Error()}
		}
	}
	if errors.Is(err, persistence.ErrUnavailable) {
		// An outage, not a fault of the request: the client may try again later, and the
		// health monitor checks at once rather than at its interval.
		if s.ready != nil {
			s.ready.Unavailable()
		}
		s.log.WarnContext(r.Context(), "request failed: database unavailable", "request_id", requestID(r.Context()),
			"method", r.Method, "path", r.URL.Path, "error", err)
		return &apiError{status: http.StatusServiceUnavailable, code: "DATABASE_UNAVAILABLE",
			message: "the database is unavailable; try again later"}
	}
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		// The client went away; there is nobody to answer and nothing to fix.
		return &apiError{status: 499, code: "CANCELLED", message: "the request was cancelled"}
	}
	id := requestID(r.Context())
	s.log.ErrorContext(r.Context(), "request failed", "request_id", id, "method", r.Method, "path", r.URL.Path, "error", err)
	return &apiError{status: http.StatusInternalServerError, code: "INTERNAL",
		message: "internal error; the server log has the details under request id " + id}
}

// fieldErrors collects every *persistence.FieldError in err's tree, in order.
func fieldErrors(err error) []*persistence.FieldError {
	fes, _ := persistence.AllFieldErrors(err)
	return fes
}

func writeError(w http.ResponseWriter, e *apiError) {
	details := e.details
	if details == nil {
		details = map[string]any{}
	}
	writeJSON(w, e.status, errorBody{Error: errorObject{Code: e.code, Message: e.message, Details: details}})
}

// writeJSON answers with v as JSON. An encoding failure after the header is sent can only
// cut the body short; the access log shows the short size.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// invalid is a 400 naming one field or parameter.
func invalid(field, msg string) error {
	return &persistence.FieldError{Field: field, Message: msg}
}
