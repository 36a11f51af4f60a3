package api

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"

	"wharf/internal/persistence"
)

// handoffBody is what an in-house system reports about a delivery it accepted: a note
// with a completion, a reason with a failure, and optionally the reference it answered
// with, which must then match the delivery's.
type handoffBody struct {
	Note      string `json:"note"`
	Reason    string `json:"reason"`
	Reference string `json:"reference"`
}

// settleHandoff answers POST /api/v1/deliveries/{id}/complete (completed) and …/fail.
// A token scoped to a target settles only that target's deliveries.
func (s *Server) settleHandoff(completed bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := pathID(r, "id")
		if err != nil {
			s.fail(w, r, err)
			return
		}
		report, err := decodeHandoff(r, completed)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		d, err := s.store.GetDelivery(r.Context(), id)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if scope := infoOf(r.Context()).scope; scope != "" && d.Target != scope {
			s.fail(w, r, outOfScope(scope))
			return
		}
		report.DeliveryID, report.Actor = id, actor(r)
		d, err = s.store.SettleHandoff(r.Context(), report)
		if err != nil {
			s.fail(w, r, handoffError(err))
			return
		}
		writeJSON(w, http.StatusOK, d)
	}
}

// decodeHandoff reads a report's body: optional for a completion, with a reason for a
// failure. Texts longer than a stored reason are refused rather than cut, so what the
// history shows is what was sent (control characters and runs of space become one space).
func decodeHandoff(r *http.Request, completed bool) (persistence.HandoffReport, error) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return persistence.HandoffReport{}, err
	}
	var body handoffBody
	if completed && len(bytes.TrimSpace(raw)) == 0 {
		return persistence.HandoffReport{Completed: true}, nil
	}
	if err := decodeStrict(raw, &body); err != nil {
		return persistence.HandoffReport{}, err
	}
	text, field, other := body.Note, "note", "reason"
	if !completed {
		text, field, other = body.Reason, "reason", "note"
	}
	switch {
	case completed && body.Reason != "", !completed && body.Note != "":
		return persistence.HandoffReport{}, invalid(other, fmt.Sprintf("belongs to the other report; send %s", field))
	case !completed && persistence.SanitizeReason(text) == "":
		return persistence.HandoffReport{}, invalid("reason", "is required: say why the work failed")
	case len(text) > persistence.MaxReasonBytes:
		return persistence.HandoffReport{}, invalid(field, fmt.Sprintf("must be at most %d bytes", persistence.MaxReasonBytes))
	}
	if body.Reference != "" {
		if err := persistence.CheckExternalRef(body.Reference); err != nil {
			return persistence.HandoffReport{}, invalid("reference", err.Error())
		}
	}
	return persistence.HandoffReport{Completed: completed, Text: persistence.SanitizeReason(text), Reference: body.Reference}, nil
}

// handoffError gives the store's refusals of a report their codes.
func handoffError(err error) error {
	for _, c := range []struct {
		target error
		code   string
	}{
		{persistence.ErrDeliverySettled, "DELIVERY_SETTLED"},
		{persistence.ErrDeliveryNotAwaiting, "DELIVERY_NOT_AWAITING"},
		{persistence.ErrReferenceMismatch, "REFERENCE_MISMATCH"},
	} {
		if errors.Is(err, c.target) {
			return withCode(err, c.target, c.code)
		}
	}
	return err
}

// outOfScope refuses a scoped token anything but settling its target's deliveries.
func outOfScope(scope persistence.InstanceName) error {
	return &apiError{status: http.StatusForbidden, code: "TOKEN_OUT_OF_SCOPE",
		message: fmt.Sprintf("this token may only complete and fail deliveries of target %s", scope)}
}

// limitScope lets a token scoped to a target through only to the routes that take one.
func (s *Server) limitScope(rt route, next http.Handler) http.Handler {
	if rt.scoped {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if scope := infoOf(r.Context()).scope; scope != "" {
			s.fail(w, r, outOfScope(scope))
			return
		}
		next.ServeHTTP(w, r)
	})
}
