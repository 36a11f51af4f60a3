// Package download sends one stored stage of a message as an HTTP attachment, the same
// way for the REST API and the web UI: octet-stream, nosniff, a sandboxing content
// security policy and a file name made safe. The bytes are the partner's and are never
// interpreted.
package download

import (
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"wharf/internal/logging"
	"wharf/internal/persistence"
)

// Send writes body, size bytes long, as the attachment for stage of m. Once the status is
// sent, a failed copy can only cut the response short: it is logged with attrs, unless
// the client itself went away, and the handler is aborted.
func Send(w http.ResponseWriter, r *http.Request, log *slog.Logger, m persistence.Message, stage persistence.PayloadStage, size int64, body io.Reader, attrs ...any) {
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": FileName(m, stage)}))
	h.Set("Content-Length", strconv.FormatInt(size, 10))
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	w.WriteHeader(http.StatusOK)
	if _, err := io.Copy(w, body); err != nil {
		if ctx := r.Context(); ctx.Err() == nil {
			log.ErrorContext(logging.WithMessageID(ctx, m.ID), "payload download cut short",
				append([]any{"stage", string(stage), "error", err}, attrs...)...)
		}
		panic(http.ErrAbortHandler)
	}
}

// FileName is the attachment's file name: the original name for the document, a
// descriptive one for the other stages, with anything outside a conservative set of
// characters replaced, so no client can be led to a path or a hidden file.
func FileName(m persistence.Message, stage persistence.PayloadStage) string {
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
