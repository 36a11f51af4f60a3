package download

import (
	"mime"
	"net/http"
	"strconv"
)

// File writes a small file the server made (a certificate, a certificate request) as an
// attachment named name, with the same nosniff and sandbox headers as a payload.
func File(w http.ResponseWriter, contentType, name string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}
