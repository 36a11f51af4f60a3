package ui

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
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
	// Role says what it is: ours (with key), a partner's, a TLS root.
	Role     certs.Role
	UsedBy   []certificateUse
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
		Role:        certs.RoleOf(c),
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
		if rows[i].UsedBy, err = s.certificateUses(r, c.ID); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	s.render(w, r, http.StatusOK, "certificates", pageData{Title: "Certificates", Data: struct {
		Certificates []certificateRow
		Total        int
	}{rows, total}})
}

// certificateForm is the upload form: the description typed, whether it is a partner's,
// and why the upload was refused. The password is never shown back.
type certificateForm struct {
	Description string
	Partner     bool
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
	up, err := readCertificateForm(r)
	description := up.Description
	if err != nil {
		errs, ok := fieldMessages(err)
		if !ok {
			badForm(w, err)
			return
		}
		status := http.StatusUnprocessableEntity
		if fes, _ := persistence.AllFieldErrors(err); slices.ContainsFunc(fes, func(fe *persistence.FieldError) bool {
			return fe.Message == errFileTooLarge.Message
		}) {
			status = http.StatusRequestEntityTooLarge
		}
		s.renderCertificateForm(w, r, status, certificateForm{Description: description, Partner: up.Partner, Errors: errs})
		return
	}
	stored, err := certs.ImportUpload(r.Context(), s.store, s.sealer, up)
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
		s.renderCertificateForm(w, r, status, certificateForm{Description: description, Partner: up.Partner, Errors: errs})
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

// readCertificateForm reads the upload's certificate file, optional key file, password,
// description and whether it is a partner's. The CSRF check has already parsed the
// multipart form.
func readCertificateForm(r *http.Request) (certs.Upload, error) {
	if err := r.ParseMultipartForm(32 << 20); err != nil {
		return certs.Upload{}, err
	}
	up := certs.Upload{Description: r.PostFormValue("description"), Password: r.PostFormValue("password"),
		Partner: r.PostFormValue("partner") != ""}
	var errs persistence.FieldErrors
	if len(up.Description) > maxCertField {
		up.Description = up.Description[:maxCertField]
		errs.Add("description", fmt.Sprintf("Use at most %d characters.", maxCertField))
	}
	if len(up.Password) > maxCertField {
		errs.Add("password", fmt.Sprintf("Use at most %d characters.", maxCertField))
	}
	var err error
	if up.File, err = readFormFile(r, "file"); err != nil {
		if !errs.Merge(err) {
			return up, err
		}
	} else if up.File == nil {
		errs.Add("file", "Choose a certificate file: PEM, DER or PKCS#12.")
	}
	if up.Key, err = readFormFile(r, "key"); err != nil && !errs.Merge(err) {
		return up, err
	}
	return up, errs.Err()
}

// readFormFile reads an uploaded file of at most certs.MaxUploadSize; nil when none was
// chosen.
func readFormFile(r *http.Request, field string) ([]byte, error) {
	f, hdr, err := r.FormFile(field)
	if errors.Is(err, http.ErrMissingFile) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tooLarge := &persistence.FieldError{Field: field, Message: errFileTooLarge.Message}
	if hdr.Size > certs.MaxUploadSize {
		return nil, tooLarge
	}
	b, err := io.ReadAll(io.LimitReader(f, certs.MaxUploadSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > certs.MaxUploadSize {
		return nil, tooLarge
	}
	return b, nil
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

// certificateUses lists the records that use a certificate, each linked to its page:
// plugin instances, and the parties whose module records (an AS2 profile) name it.
func (s *Server) certificateUses(r *http.Request, id int64) ([]certificateUse, error) {
	uses, err := s.store.ListCertificateUses(r.Context(), id)
	if err != nil {
		return nil, err
	}
	out := make([]certificateUse, 0, len(uses))
	for _, u := range uses {
		cu := certificateUse{Kind: strings.ReplaceAll(u.Kind, "_", " "), Name: u.Name}
		if u.Kind == records.PluginCertificateUse {
			if rec, err := s.store.GetPluginConfig(r.Context(), persistence.InstanceName(u.Name)); err == nil {
				cu.Link = "/ui/plugins/" + string(rec.Type) + "/" + string(rec.Name)
			}
		} else {
			cu.Link = s.partyLink(r, u.Kind, u.Name)
		}
		out = append(out, cu)
	}
	return out, nil
}

// partyLink is the page of the party a module's record names: the use kind of a record
// of our side says "local" (an AS2 local profile belongs to an organization), of the
// partner's side "remote"; "" when no such party exists.
func (s *Server) partyLink(r *http.Request, kind, name string) string {
	order := []partyPages{partnerPages, organizationPages}
	if strings.Contains(kind, "local") {
		order[0], order[1] = order[1], order[0]
	}
	for _, p := range order {
		if _, err := s.store.GetParty(r.Context(), p.Kind, persistence.PartyName(name)); err == nil {
			return p.Path + "/" + name
		}
	}
	return ""
}

func (s *Server) certificatePage(w http.ResponseWriter, r *http.Request) {
	c, ok := s.loadCertificate(w, r)
	if !ok {
		return
	}
	row := s.certificateRow(c)
	var err error
	if row.UsedBy, err = s.certificateUses(r, c.ID); err != nil {
		s.fail(w, r, err)
		return
	}
	s.render(w, r, http.StatusOK, "certificate", pageData{Title: "Certificate " + c.Subject, Data: struct {
		Cert      certificateRow
		PEM       string
		CSRFField string
		CSRFToken string
	}{row, string(certs.PEM(c.DER)), session.CSRFField, sessionCSRFToken(r)}})
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
