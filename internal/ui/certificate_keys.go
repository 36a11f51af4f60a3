package ui

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"wharf/internal/certs"
	"wharf/internal/download"
	"wharf/internal/ui/session"
)

// Key generation, certificate requests for a CA and certificate downloads; the upload,
// list and detail pages are in certificates.go.

var _ = registerPages([]string{"certificate_generate"}, (*Server).certificateKeyRoutes)

var _ = registerFlashes(map[string]flash{
	"certificate-generated": {Kind: "success", Text: "Key pair and self-signed certificate generated. The private key is stored sealed and never leaves the server."},
})

func (s *Server) certificateKeyRoutes() []pageRoute {
	return []pageRoute{
		{"GET /ui/certificates/generate", http.HandlerFunc(s.generateCertificatePage)},
		{"POST /ui/certificates/generate", http.HandlerFunc(s.generateCertificateSubmit)},
		{"GET /ui/certificates/{id}/certificate.pem", s.certificateDownload(false)},
		{"GET /ui/certificates/{id}/certificate.cer", s.certificateDownload(true)},
		{"GET /ui/certificates/{id}/request.csr", http.HandlerFunc(s.certificateRequestDownload)},
	}
}

// generateForm is the key generation form: what was chosen and typed, and why it was
// refused, each error beside its field.
type generateForm struct {
	Request    certs.GenerateRequest
	Algorithms []algorithmOption
	Errors     map[string]string
	CSRFField  string
	CSRFToken  string
}

type algorithmOption struct {
	Value, Label string
}

func (s *Server) renderGenerateForm(w http.ResponseWriter, r *http.Request, status int, f generateForm) {
	for _, a := range certs.AllKeyAlgorithms {
		f.Algorithms = append(f.Algorithms, algorithmOption{Value: string(a), Label: a.Label()})
	}
	f.CSRFField, f.CSRFToken = session.CSRFField, sessionCSRFToken(r)
	s.render(w, r, status, "certificate_generate", pageData{Title: "Generate a key pair", Data: f})
}

func (s *Server) generateCertificatePage(w http.ResponseWriter, r *http.Request) {
	s.renderGenerateForm(w, r, http.StatusOK, generateForm{Request: certs.GenerateRequest{
		Algorithm: certs.AllKeyAlgorithms[0], ValidityDays: certs.DefaultValidityDays}})
}

func (s *Server) generateCertificateSubmit(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		badForm(w, err)
		return
	}
	f := r.PostForm
	req := certs.GenerateRequest{
		Algorithm: certs.KeyAlgorithm(f.Get("algorithm")),
		Subject: certs.Subject{CommonName: f.Get("common_name"), Organization: f.Get("organization"),
			OrganizationalUnit: f.Get("organizational_unit"), Locality: f.Get("locality"),
			Province: f.Get("province"), Country: strings.TrimSpace(f.Get("country"))},
		Description: f.Get("description"),
	}
	errs := map[string]string{}
	days, err := strconv.Atoi(strings.TrimSpace(f.Get("validity_days")))
	if err != nil {
		errs["validity_days"] = "Enter a whole number of days, such as 730."
		days = -1
	}
	req.ValidityDays = days
	c, err := certs.GenerateStored(r.Context(), s.store, s.sealer, req, s.now())
	if err != nil {
		fe, ok := fieldMessages(err)
		if !ok {
			s.fail(w, r, err)
			return
		}
		for k, v := range fe {
			if _, have := errs[k]; !have {
				errs[k] = v
			}
		}
		if days < 0 {
			req.ValidityDays = 0
		}
		s.renderGenerateForm(w, r, http.StatusUnprocessableEntity, generateForm{Request: req, Errors: errs})
		return
	}
	s.log.InfoContext(r.Context(), "key pair generated", "certificate_id", c.ID, "algorithm", string(req.Algorithm), "by", currentUser(r).Name)
	setFlash(w, "certificate-generated")
	http.Redirect(w, r, "/ui/certificates/"+strconv.FormatInt(c.ID, 10), http.StatusSeeOther)
}

// certificateDownload answers the certificate alone as a PEM or DER (.cer) file.
func (s *Server) certificateDownload(der bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := s.loadCertificate(w, r)
		if !ok {
			return
		}
		ct, name, body := certs.Download(c, der)
		download.File(w, ct, name, body)
	})
}

// certificateRequestDownload answers a certificate request (PKCS#10) for a CA, signed with
// the certificate's stored key.
func (s *Server) certificateRequestDownload(w http.ResponseWriter, r *http.Request) {
	c, ok := s.loadCertificate(w, r)
	if !ok {
		return
	}
	csr, err := certs.NewOpener(s.store, s.sealer).CertificateRequest(r.Context(), c.ID)
	if errors.Is(err, certs.ErrNoPrivateKey) {
		http.Error(w, "this certificate has no private key of ours to sign a request with", http.StatusConflict)
		return
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	download.File(w, "application/pkcs10", "certificate-"+strconv.FormatInt(c.ID, 10)+".csr", csr)
}

// textField is one text input drawn by a form's field template: label, hint, limit and
// the error beside it.
type textField struct {
	Name, Label, Value, Hint, Error string
	Max                             int
	Required                        bool
}

func newTextField(name, label, value, hint string, max int, required bool, errs map[string]string) textField {
	return textField{Name: name, Label: label, Value: value, Hint: hint, Max: max, Required: required, Error: errs[name]}
}
