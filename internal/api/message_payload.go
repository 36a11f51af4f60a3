package api

import (
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"wharf/internal/logging"
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

	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": downloadName(m, stage)}))
	h.Set("Content-Length", strconv.FormatInt(p.Size, 10))
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	w.WriteHeader(http.StatusOK)
	if _, err := io.Copy(w, body); err != nil {
		// The status is sent; all that is left is to cut the response short, and to say so
		// once unless the client itself went away.
		if r.Context().Err() == nil {
			s.log.ErrorContext(logging.WithMessageID(r.Context(), id), "payload download cut short", "request_id", requestID(r.Context()),
				"stage", string(stage), "error", err)
		}
		panic(http.ErrAbortHandler)
	}
}

// downloadName is the attachment's file name: the original name for the document, a
// descriptive one for the other stages, with anything outside a conservative set of
// characters replaced, so no client can be led to a path or a hidden file.
func downloadName(m persistence.Message, stage persistence.PayloadStage) string {
	name := fmt.Sprintf("message-%d-%s.bin", m.ID, stage)
	switch stage {
	case persistence.PayloadUnpacked:
		if m.OriginalFileName != "" {
			name = string(m.OriginalFileName)
		}
	case persistence.PayloadHeaders:
		name = fmt.Sprintf("message-%d-headers.txt", m.ID)
	}
	safe := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			return r
		}
		return '_'
	}, name)
	safe = strings.TrimLeft(safe, ".")
	if safe == "" {
		safe = fmt.Sprintf("message-%d.bin", m.ID)
	}
	return safe
}
