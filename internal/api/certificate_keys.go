package api

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"wharf/internal/certs"
	"wharf/internal/download"
	"wharf/internal/persistence"
)

// generateCertificateBody is the request of POST /api/v1/certificates/generate; absent
// fields take the defaults a new form shows.
type generateCertificateBody struct {
	Algorithm    string        `json:"algorithm"`
	Subject      certs.Subject `json:"subject"`
	ValidityDays *int          `json:"validity_days"`
	Description  string        `json:"description"`
}

// generateCertificate makes a key pair and a self-signed certificate and stores both,
// the key sealed.
func (s *Server) generateCertificate(w http.ResponseWriter, r *http.Request) {
	var body generateCertificateBody
	if err := decodeJSON(r, &body); err != nil {
		s.fail(w, r, err)
		return
	}
	req := certs.GenerateRequest{Algorithm: certs.KeyAlgorithm(body.Algorithm), Subject: body.Subject,
		ValidityDays: certs.DefaultValidityDays, Description: body.Description}
	if body.Algorithm == "" {
		req.Algorithm = certs.AllKeyAlgorithms[0]
	}
	if body.ValidityDays != nil {
		req.ValidityDays = *body.ValidityDays
	}
	c, err := certs.GenerateStored(r.Context(), s.store, s.sealer, req, time.Now())
	if err != nil {
		s.fail(w, r, subjectFields(err))
		return
	}
	w.Header().Set("Location", "/api/v1/certificates/"+strconv.FormatInt(c.ID, 10))
	writeJSON(w, http.StatusCreated, certificateCreated{ID: c.ID, Fingerprint: c.Fingerprint, Subject: c.Subject,
		NotAfter: c.NotAfter, HasPrivateKey: c.HasPrivateKey})
}

// subjectFields names the subject's fields by their place in the REST body.
func subjectFields(err error) error {
	for _, fe := range fieldErrors(err) {
		switch fe.Field {
		case "algorithm", "validity_days", "description":
		default:
			fe.Field = "subject." + fe.Field
		}
	}
	return err
}

// certificateRequest answers a PKCS#10 request for a CA, signed with the certificate's
// stored private key; the key itself never leaves the server.
func (s *Server) certificateRequest(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "id")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	csr, err := certs.NewOpener(s.store, s.sealer).CertificateRequest(r.Context(), id)
	if errors.Is(err, certs.ErrNoPrivateKey) {
		err = &apiError{status: http.StatusConflict, code: "NO_PRIVATE_KEY",
			message: "certificate " + strconv.FormatInt(id, 10) + " has no private key of ours to sign a request with"}
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	download.File(w, "application/pkcs10", "certificate-"+strconv.FormatInt(id, 10)+".csr", csr)
}

// downloadCertificate answers the certificate alone, as PEM or as DER (a .cer file).
func (s *Server) downloadCertificate(der bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, ok := s.pathCertificate(w, r)
		if !ok {
			return
		}
		ct, name, body := certs.Download(c, der)
		download.File(w, ct, name, body)
	}
}

// pathCertificate reads the certificate the path's id names; a refusal is answered.
func (s *Server) pathCertificate(w http.ResponseWriter, r *http.Request) (persistence.Certificate, bool) {
	id, err := pathID(r, "id")
	if err != nil {
		s.fail(w, r, err)
		return persistence.Certificate{}, false
	}
	c, err := s.store.GetCertificate(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return persistence.Certificate{}, false
	}
	return c, true
}
