package ui

import (
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"wharf/internal/certs"
	"wharf/internal/persistence"
	"wharf/internal/records"
	"wharf/internal/ui/session"
)

// certUploadLimit bounds a certificate upload's body as the REST API does: the file and a
// few short text fields.
const certUploadLimit = certs.MaxUploadSize + 64<<10

// maxCertField bounds the password and description of an upload, as the REST API does.
const maxCertField = 1 << 10

var _ = registerPages([]string{"certificates", "certificate", "certificate_form"}, (*Server).certificateRoutes)

var _ = registerFlashes(map[string]flash{
	"certificate-uploaded":  {Kind: "success", Text: "Certificate uploaded."},
	"certificates-uploaded": {Kind: "success", Text: "Certificates uploaded."},
	"certificate-deleted":   {Kind: "success", Text: "Certificate deleted."},
	"certificate-in-use":    {Kind: "danger", Text: "Not deleted: the certificate is in use. Change the records listed under \"Used by\" first."},
})

func (s *Server) certificateRoutes() []pageRoute {
	return []pageRoute{
		{"GET /ui/certificates", http.HandlerFunc(s.certificatesPage)},
		{"GET /ui/certificates/new", http.HandlerFunc(s.newCertificatePage)},
		{"POST /ui/certificates", withBodyLimit(certUploadLimit, http.HandlerFunc(s.uploadCertificatePage))},
		{"GET /ui/certificates/{id}", http.HandlerFunc(s.certificatePage)},
		{"POST /ui/certificates/{id}/delete", http.HandlerFunc(s.deleteCertificatePage)},
	}
}

// certificateRow is a certificate as the pages show it.
type certificateRow struct {
	persistence.Certificate
	DaysLeft int
	Expired  bool
	// Expiring is within certs.ExpiryWarning of its end, not yet expired.
	Expiring bool
	// ValidFrom, ValidUntil and Created are RFC 3339 times, for <time> elements.
	ValidFrom  string
	ValidUntil string
	Created    string
}

func (s *Server) certificateRow(c persistence.Certificate) certificateRow {
	now := s.now()
	return certificateRow{
		Certificate: c,
		DaysLeft:    certs.DaysLeft(c.NotAfter, now),
		Expired:     !c.NotAfter.After(now),
		Expiring:    c.NotAfter.After(now) && c.NotAfter.Before(now.Add(certs.ExpiryWarning)),
		ValidFrom:   c.NotBefore.UTC().Format(time.RFC3339),
		ValidUntil:  c.NotAfter.UTC().Format(time.RFC3339),
		Created:     c.CreatedAt.UTC().Format(time.RFC3339),
	}
}

func (s *Server) certificatesPage(w http.ResponseWriter, r *http.Request) {
	// Certificates are few; one page of the store's maximum lists them all.
	list, total, err := s.store.ListCertificates(r.Context(), persistence.ListOptions{Limit: 1000})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rows := make([]certificateRow, len(list))
	for i, c := range list {
		rows[i] = s.certificateRow(c)
	}
	s.render(w, r, http.StatusOK, "certificates", pageData{Title: "Certificates", Data: struct {
		Certificates []certificateRow
		Total        int
	}{rows, total}})
}

// certificateForm is the upload form: the description typed and why the upload was
// refused. The password is never shown back.
type certificateForm struct {
	Description string
	Errors      map[string]string
	CSRFField   string
	CSRFToken   string
}

func (s *Server) newCertificatePage(w http.ResponseWriter, r *http.Request) {
	s.renderCertificateForm(w, r, http.StatusOK, certificateForm{})
}

func (s *Server) renderCertificateForm(w http.ResponseWriter, r *http.Request, status int, f certificateForm) {
	f.CSRFField, f.CSRFToken = session.CSRFField, sessionCSRFToken(r)
	s.render(w, r, status, "certificate_form", pageData{Title: "Upload a certificate", Data: f})
}

func (s *Server) uploadCertificatePage(w http.ResponseWriter, r *http.Request) {
	file, password, description, err := readCertificateForm(r)
	if err != nil {
		errs, ok := fieldMessages(err)
		if !ok {
			badForm(w, err)
			return
		}
		status := http.StatusUnprocessableEntity
		if errors.Is(err, errFileTooLarge) {
			status = http.StatusRequestEntityTooLarge
		}
		s.renderCertificateForm(w, r, status, certificateForm{Description: description, Errors: errs})
		return
	}
	stored, err := certs.Import(r.Context(), s.store, s.sealer, file, password, description)
	if err != nil {
		errs, ok := fieldMessages(err)
		status := http.StatusUnprocessableEntity
		if !ok && errors.Is(err, persistence.ErrConflict) {
			errs, ok, status = map[string]string{"file": "This certificate is already stored."}, true, http.StatusConflict
		}
		if !ok {
			s.fail(w, r, err)
			return
		}
		s.renderCertificateForm(w, r, status, certificateForm{Description: description, Errors: errs})
		return
	}
	if len(stored) == 1 {
		setFlash(w, "certificate-uploaded")
		http.Redirect(w, r, "/ui/certificates/"+strconv.FormatInt(stored[0].ID, 10), http.StatusSeeOther)
		return
	}
	setFlash(w, "certificates-uploaded")
	http.Redirect(w, r, "/ui/certificates", http.StatusSeeOther)
}

// readCertificateForm reads the upload's file, password and description. The CSRF check
// has already parsed the multipart form.
func readCertificateForm(r *http.Request) (file []byte, password, description string, err error) {
	if err := r.ParseMultipartForm(32 << 20); err != nil {
		return nil, "", "", err
	}
	description = r.PostFormValue("description")
	password = r.PostFormValue("password")
	var errs persistence.FieldErrors
	if len(description) > maxCertField {
		description = description[:maxCertField]
		errs.Add("description", fmt.Sprintf("Use at most %d characters.", maxCertField))
	}
	if len(password) > maxCertField {
		errs.Add("password", fmt.Sprintf("Use at most %d characters.", maxCertField))
	}
	f, hdr, err := r.FormFile("file")
	if errors.Is(err, http.ErrMissingFile) {
		errs.Add("file", "Choose a certificate file: PEM, DER or PKCS#12.")
		return nil, "", description, errs
	}
	if err != nil {
		return nil, "", description, err
	}
	defer f.Close()
	if hdr.Size > certs.MaxUploadSize {
		return nil, "", description, errFileTooLarge
	}
	file, err = io.ReadAll(io.LimitReader(f, certs.MaxUploadSize+1))
	if err != nil {
		return nil, "", description, err
	}
	if len(file) > certs.MaxUploadSize {
		return nil, "", description, errFileTooLarge
	}
	if err := errs.Err(); err != nil {
		return nil, "", description, err
	}
	return file, password, description, nil
}

// errFileTooLarge refuses a certificate file over certs.MaxUploadSize.
var errFileTooLarge = &persistence.FieldError{Field: "file",
	Message: "the file is larger than " + strconv.Itoa(certs.MaxUploadSize>>10) + " KiB"}

// loadCertificate reads the certificate the path names; an invalid or unknown id is a
// 404, already answered.
func (s *Server) loadCertificate(w http.ResponseWriter, r *http.Request) (persistence.Certificate, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		s.notFound(w, r)
		return persistence.Certificate{}, false
	}
	c, err := s.store.GetCertificate(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return persistence.Certificate{}, false
	}
	return c, true
}

// certificateUse is one record using a certificate; Link is its page, when the UI has one.
type certificateUse struct {
	Kind string
	Name string
	Link string
}

func (s *Server) certificatePage(w http.ResponseWriter, r *http.Request) {
	c, ok := s.loadCertificate(w, r)
	if !ok {
		return
	}
	uses, err := s.store.ListCertificateUses(r.Context(), c.ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	usedBy := make([]certificateUse, 0, len(uses))
	for _, u := range uses {
		cu := certificateUse{Kind: strings.ReplaceAll(u.Kind, "_", " "), Name: u.Name}
		if u.Kind == records.PluginCertificateUse {
			if rec, err := s.store.GetPluginConfig(r.Context(), persistence.InstanceName(u.Name)); err == nil {
				cu.Link = "/ui/plugins/" + string(rec.Type) + "/" + string(rec.Name)
			}
		}
		usedBy = append(usedBy, cu)
	}
	s.render(w, r, http.StatusOK, "certificate", pageData{Title: "Certificate " + strconv.FormatInt(c.ID, 10), Data: struct {
		Cert      certificateRow
		UsedBy    []certificateUse
		PEM       string
		CSRFField string
		CSRFToken string
	}{s.certificateRow(c), usedBy, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.DER})),
		session.CSRFField, sessionCSRFToken(r)}})
}

func (s *Server) deleteCertificatePage(w http.ResponseWriter, r *http.Request) {
	c, ok := s.loadCertificate(w, r)
	if !ok {
		return
	}
	err := s.store.DeleteCertificate(r.Context(), c.ID)
	switch {
	case errors.Is(err, persistence.ErrInUse):
		setFlash(w, "certificate-in-use")
		http.Redirect(w, r, "/ui/certificates/"+strconv.FormatInt(c.ID, 10), http.StatusSeeOther)
		return
	case errors.Is(err, persistence.ErrNotFound):
		s.notFound(w, r)
		return
	case err != nil:
		s.fail(w, r, err)
		return
	}
	setFlash(w, "certificate-deleted")
	http.Redirect(w, r, "/ui/certificates", http.StatusSeeOther)
}
