package api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/records"
	"wharf/internal/stdwebhook"
)

// Callbacks takes signed status callbacks: Verify checks the Standard Webhooks signature
// with the target's secrets (false: it does not verify, and nothing may be written),
// Append queues a verified callback durably (callbacks.Intake).
type Callbacks interface {
	Verify(ctx context.Context, target persistence.InstanceName, header http.Header, body []byte) (bool, error)
	Append(ctx context.Context, cb persistence.StatusCallback) error
}

// callbackBody is what an in-house system reports: the delivery (by exactly one of
// delivery_id, message_id, external_ref), its status, a reason (required with a
// rejection), its own time and optional detail.
type callbackBody struct {
	DeliveryID  int64  `json:"delivery_id"`
	MessageID   int64  `json:"message_id"`
	ExternalRef string `json:"external_ref"`
	Status      string `json:"status"`
	Reason      string `json:"reason"`
	Timestamp   string `json:"timestamp"`
	Detail      string `json:"detail"`
}

// acceptCallback answers POST /api/v1/callbacks/{target}: 401 and nothing written unless
// the signature verifies; then 400 naming the field for a body that is not a valid
// report; else 202 once the callback is durably queued.
func (s *Server) acceptCallback(w http.ResponseWriter, r *http.Request) {
	if s.callbacks == nil {
		s.fail(w, r, &apiError{status: http.StatusServiceUnavailable, code: "CALLBACKS_UNAVAILABLE",
			message: "this process does not take status callbacks"})
		return
	}
	target, err := persistence.ParseInstanceName(r.PathValue("target"))
	if err != nil {
		s.fail(w, r, unauthorizedCallback())
		return
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ok, err := s.callbacks.Verify(r.Context(), target, r.Header, raw)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if !ok {
		s.fail(w, r, unauthorizedCallback())
		return
	}
	cb, err := decodeCallback(raw)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	cb.Target, cb.WebhookID = target, r.Header.Get(stdwebhook.HeaderID)
	if err := persistence.CheckWebhookID(cb.WebhookID); err != nil {
		s.fail(w, r, invalid("webhook-id", err.Error()))
		return
	}
	if err := s.callbacks.Append(r.Context(), cb); err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"status": "accepted", "webhook_id": cb.WebhookID})
}

// decodeCallback reads a callback's body strictly, every invalid field at once.
func decodeCallback(raw []byte) (persistence.StatusCallback, error) {
	var body callbackBody
	if err := decodeStrict(raw, &body); err != nil {
		return persistence.StatusCallback{}, err
	}
	var fes persistence.FieldErrors
	named := 0
	for _, set := range []bool{body.DeliveryID != 0, body.MessageID != 0, body.ExternalRef != ""} {
		if set {
			named++
		}
	}
	switch {
	case named != 1:
		fes.Add("delivery_id", "name the delivery by exactly one of delivery_id, message_id and external_ref")
	case body.DeliveryID < 0:
		fes.Add("delivery_id", "must be a positive id")
	case body.MessageID < 0:
		fes.Add("message_id", "must be a positive id")
	case body.ExternalRef != "":
		if err := persistence.CheckExternalRef(body.ExternalRef); err != nil {
			fes.Add("external_ref", err.Error())
		}
	}
	if _, err := persistence.ParseDownstreamStatus(body.Status); err != nil {
		fes.Add("status", err.Error())
	}
	switch {
	case len(body.Reason) > persistence.MaxReasonBytes:
		fes.Add("reason", fmt.Sprintf("must be at most %d bytes", persistence.MaxReasonBytes))
	case persistence.DownstreamFailure(body.Status) && persistence.SanitizeReason(body.Reason) == "":
		fes.Add("reason", "is required with status "+body.Status+": say why")
	}
	if len(body.Detail) > persistence.MaxReasonBytes {
		fes.Add("detail", fmt.Sprintf("must be at most %d bytes", persistence.MaxReasonBytes))
	}
	at, err := time.Parse(time.RFC3339Nano, body.Timestamp)
	if err != nil {
		fes.Add("timestamp", "must be an RFC 3339 time, e.g. 2026-01-02T15:04:05Z")
	}
	if len(fes) > 0 {
		return persistence.StatusCallback{}, fes
	}
	return persistence.StatusCallback{DeliveryID: body.DeliveryID, MessageID: body.MessageID, ExternalRef: body.ExternalRef,
		Status: body.Status, Reason: persistence.SanitizeReason(body.Reason), Detail: persistence.SanitizeReason(body.Detail),
		ReportedAt: at.UTC()}, nil
}

func unauthorizedCallback() error {
	return &apiError{status: http.StatusUnauthorized, code: "BAD_SIGNATURE",
		message: "the webhook signature or timestamp does not verify with a secret of this target"}
}

// callbackTarget reads the {target} of a secrets route: an existing target instance.
func (s *Server) callbackTarget(r *http.Request) (persistence.InstanceName, error) {
	return records.CallbackTarget(r.Context(), s.store, r.PathValue("target"))
}

// createdCallbackSecret is the answer of a generation: the record and the secret, shown
// this once.
type createdCallbackSecret struct {
	persistence.CallbackSecret
	Secret string `json:"secret"`
}

func (s *Server) listCallbackSecrets(w http.ResponseWriter, r *http.Request) {
	target, err := s.callbackTarget(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	secs, err := s.store.ListCallbackSecrets(r.Context(), target)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if secs == nil {
		secs = []persistence.CallbackSecret{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"secrets": secs})
}

// secretAction reads an administrator's action on a target's secrets, which has no body;
// false when it was refused, and answered.
func (s *Server) secretAction(w http.ResponseWriter, r *http.Request) (persistence.InstanceName, bool) {
	if !s.requireAdminFor(w, r, "callback secrets") {
		return "", false
	}
	if err := decodeNoBody(r); err != nil {
		s.fail(w, r, err)
		return "", false
	}
	target, err := s.callbackTarget(r)
	if err != nil {
		s.fail(w, r, err)
		return "", false
	}
	return target, true
}

func (s *Server) createCallbackSecret(w http.ResponseWriter, r *http.Request) {
	target, ok := s.secretAction(w, r)
	if !ok {
		return
	}
	rec, secret, err := records.CreateCallbackSecret(r.Context(), s.store, s.sealer, string(target))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, createdCallbackSecret{CallbackSecret: rec, Secret: secret})
}

func (s *Server) revokeCallbackSecret(w http.ResponseWriter, r *http.Request) {
	target, ok := s.secretAction(w, r)
	if !ok {
		return
	}
	id, err := pathID(r, "id")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.store.RevokeCallbackSecret(r.Context(), target, id); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
