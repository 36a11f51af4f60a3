package api

import (
	"bytes"
	"fmt"
	"io"
	"net/http"

	"wharf/internal/persistence"
)

// redispatch matches the routes again for a message; it answers with the message's
// detail as it now stands.
func (s *Server) redispatch(w http.ResponseWriter, r *http.Request) {
	s.messageAction(w, r, func(r *http.Request, id int64) error {
		if _, err := s.store.GetMessage(r.Context(), id); err != nil {
			return err
		}
		_, err := s.ops.Redispatch(r.Context(), id, actor(r))
		return erasedCode(err, "NOT_REDISPATCHABLE")
	})
}

// messageAction answers an action on the message of the path, whose body is empty or
// {}: act's error, or the message's detail as it now stands.
func (s *Server) messageAction(w http.ResponseWriter, r *http.Request, act func(r *http.Request, id int64) error) {
	id, err := pathID(r, "id")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := decodeNoBody(r); err != nil {
		s.fail(w, r, err)
		return
	}
	if err := act(r, id); err != nil {
		s.fail(w, r, err)
		return
	}
	d, err := s.messageDetail(r, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

// redeliverBody is the optional body of a redeliver: how the message presents itself
// when sent again (persistence.ResendMode; empty is the same message id).
type redeliverBody struct {
	Resend string `json:"resend"`
}

// decodeRedeliver reads a redeliver's body, empty or a JSON object, into its mode.
func decodeRedeliver(r *http.Request) (persistence.ResendMode, error) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return "", err
	}
	var body redeliverBody
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := decodeStrict(raw, &body); err != nil {
			return "", err
		}
	}
	mode, err := persistence.ParseResendMode(body.Resend)
	if err != nil {
		return "", invalid("resend", err.Error())
	}
	return mode, nil
}

// redeliver requeues one delivery of a message; it answers with the message's detail as
// it now stands.
func (s *Server) redeliver(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "id")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	did, err := pathID(r, "delivery_id")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	mode, err := decodeRedeliver(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d, err := s.store.GetDelivery(r.Context(), did)
	if err == nil && d.MessageID != id {
		err = fmt.Errorf("delivery %d of message %d: %w", did, id, persistence.ErrNotFound)
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if _, err := s.ops.Redeliver(r.Context(), did, mode, actor(r)); err != nil {
		s.fail(w, r, erasedCode(err, "NOT_REDELIVERABLE"))
		return
	}
	detail, err := s.messageDetail(r, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, detail)
}
