package ui

import (
	"errors"
	"mime"
	"net/http"
	"strconv"

	"wharf/internal/module"
	"wharf/internal/persistence"
)

// panelDownloadPage hands out a file a module's party panel offers (the AS2 profile file
// and certificates of "Our AS2 details"). A module without downloads, or a file it does
// not offer, is a 404.
func (s *Server) panelDownloadPage(p partyPages) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		party, m, _, ok := s.loadPanel(w, r, p)
		if !ok {
			return
		}
		dl, ok := m.(module.PartyDownloads)
		if !ok {
			s.notFound(w, r)
			return
		}
		file, err := dl.PartyDownload(r.Context(), p.Kind, party.Name, r.PathValue("download"))
		var fe *persistence.FieldError
		switch {
		case errors.Is(err, persistence.ErrNotFound), errors.As(err, &fe):
			s.notFound(w, r)
			return
		case err != nil:
			s.fail(w, r, err)
			return
		}
		w.Header().Set("Content-Type", file.ContentType)
		w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": file.FileName}))
		w.Header().Set("Content-Length", strconv.Itoa(len(file.Body)))
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(file.Body)
	})
}
