package api

import (
	"fmt"
	"net/http"

	"wharf/internal/download"
	"wharf/internal/persistence"
)

// downloadPayload streams one stored stage of a message as an attachment. The bytes are
// the partner's, never interpreted: octet-stream, nosniff, and a file name made safe.
func (s *Server) downloadPayload(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "id")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	stage := persistence.PayloadUnpacked
	if v := r.URL.Query().Get("stage"); v != "" {
		if stage, err = persistence.ParsePayloadStage(v); err != nil {
			s.fail(w, r, invalid("stage", err.Error()))
			return
		}
	}
	m, err := s.store.GetMessage(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if m.ErasedAt != nil {
		s.fail(w, r, errErasedPayload(m))
		return
	}
	p, err := s.store.GetPayload(r.Context(), id, stage)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	body, err := s.payloads.Open(r.Context(), p.Key)
	if err != nil {
		s.fail(w, r, fmt.Errorf("open payload %s of message %d: %w", stage, id, err))
		return
	}
	defer body.Close()

	download.Send(w, r, s.log, m, stage, p.Size, body, "request_id", requestID(r.Context()))
}
