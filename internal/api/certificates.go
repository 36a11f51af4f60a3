package api

import (
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"wharf/internal/certs"
	"wharf/internal/persistence"
)

// maxCertificateUpload bounds the file of a certificate upload.
const maxCertificateUpload = certs.MaxUploadSize

// certificateCreated is one certificate of an upload's answer.
type certificateCreated struct {
	ID            int64     `json:"id"`
	Fingerprint   string    `json:"fingerprint"`
	Subject       string    `json:"subject"`
	NotAfter      time.Time `json:"not_after"`
	HasPrivateKey bool      `json:"has_private_key"`
}

type certificateView struct {
	ID            int64     `json:"id"`
	Fingerprint   string    `json:"fingerprint"`
	Subject       string    `json:"subject"`
	Issuer        string    `json:"issuer"`
	SerialNumber  string    `json:"serial_number"`
	NotBefore     time.Time `json:"not_before"`
	NotAfter      time.Time `json:"not_after"`
	DaysLeft      int       `json:"days_left"`
	Expired       bool      `json:"expired"`
	HasPrivateKey bool      `json:"has_private_key"`
	// Role is ours (we hold the key), partner or tls_root (an authority), per certs.RoleOf.
	Role        string    `json:"role"`
	Description string    `json:"description"`
	CreatedAt   time.Time `json:"created_at"`
}

// certificateDetail adds the records that use the certificate and the certificate
// itself as PEM; the private key never leaves the server.
type certificateDetail struct {
	certificateView
	UsedBy []certificateUseView `json:"used_by"`
	PEM    string               `json:"pem"`
}

type certificateUseView struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

func viewCertificate(c persistence.Certificate, now time.Time) certificateView {
	return certificateView{
		ID: c.ID, Fingerprint: c.Fingerprint, Subject: c.Subject, Issuer: c.Issuer,
		SerialNumber: c.SerialNumber, NotBefore: c.NotBefore, NotAfter: c.NotAfter,
		DaysLeft: certs.DaysLeft(c.NotAfter, now), Expired: !c.NotAfter.After(now),
		HasPrivateKey: c.HasPrivateKey, Role: string(certs.RoleOf(c)), Description: c.Description, CreatedAt: c.CreatedAt,
	}
}

// createCertificates imports an uploaded file (PEM, DER or PKCS#12 with password): every
// certificate in it, and its private key sealed, from the file or a separate key file.
// The password is used to open the file and is never stored, logged or echoed.
func (s *Server) createCertificates(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxCertificateUpload+uploadOverhead)
	up, err := readCertificateUpload(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	stored, err := certs.ImportUpload(r.Context(), s.store, s.sealer, up)
	if err != nil {
		s.fail(w, r, withCode(err, persistence.ErrConflict, "CERTIFICATE_EXISTS"))
		return
	}
	out := make([]certificateCreated, len(stored))
	for i, c := range stored {
		out[i] = certificateCreated{ID: c.ID, Fingerprint: c.Fingerprint, Subject: c.Subject,
			NotAfter: c.NotAfter, HasPrivateKey: c.HasPrivateKey}
	}
	if len(stored) == 1 {
		w.Header().Set("Location", "/api/v1/certificates/"+strconv.FormatInt(stored[0].ID, 10))
	}
	writeJSON(w, http.StatusCreated, map[string]any{"certificates": out})
}

// readCertificateUpload reads the parts of a certificate upload: the certificate file,
// an optional key file, and the text fields, each once.
func readCertificateUpload(r *http.Request) (certs.Upload, error) {
	fields := map[string]string{}
	files := map[string][]byte{}
	mr, err := r.MultipartReader()
	if err != nil {
		return certs.Upload{}, invalid("body", "not a multipart/form-data body: "+err.Error())
	}
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return certs.Upload{}, multipartError(err)
		}
		switch name := part.FormName(); name {
		case "file", "key":
			if _, dup := files[name]; dup {
				return certs.Upload{}, invalid(name, "given more than once")
			}
			b, err := io.ReadAll(io.LimitReader(part, maxCertificateUpload+1))
			if err != nil {
				return certs.Upload{}, multipartError(err)
			}
			if len(b) > maxCertificateUpload {
				return certs.Upload{}, &apiError{status: http.StatusRequestEntityTooLarge, code: "PAYLOAD_TOO_LARGE",
					message: fmt.Sprintf("the %s file is larger than %d KiB", name, maxCertificateUpload>>10)}
			}
			files[name] = b
		case "password", "description", "partner":
			if _, dup := fields[name]; dup {
				return certs.Upload{}, invalid(name, "given more than once")
			}
			b, err := io.ReadAll(io.LimitReader(part, maxFieldLen+1))
			if err != nil {
				return certs.Upload{}, multipartError(err)
			}
			if len(b) > maxFieldLen {
				return certs.Upload{}, invalid(name, "too long")
			}
			fields[name] = string(b)
		case "":
			return certs.Upload{}, invalid("body", "every part needs a form field name")
		default:
			return certs.Upload{}, invalid(name, "unknown field")
		}
	}
	if _, ok := files["file"]; !ok {
		return certs.Upload{}, invalid("file", "required")
	}
	up := certs.Upload{File: files["file"], Key: files["key"], Password: fields["password"], Description: fields["description"]}
	switch fields["partner"] {
	case "", "false":
	case "true":
		up.Partner = true
	default:
		return certs.Upload{}, invalid("partner", "must be true or false")
	}
	return up, nil
}

func (s *Server) listCertificates(w http.ResponseWriter, r *http.Request) {
	p, err := parsePage(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	list, total, err := s.store.ListCertificates(r.Context(), persistence.ListOptions{Limit: p.limit, Offset: p.offset})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	now := time.Now()
	views := make([]certificateView, len(list))
	for i, c := range list {
		views[i] = viewCertificate(c, now)
	}
	writeJSON(w, http.StatusOK, listBody("certificates", views, total, p))
}

func (s *Server) getCertificate(w http.ResponseWriter, r *http.Request) {
	c, ok := s.pathCertificate(w, r)
	if !ok {
		return
	}
	uses, err := s.store.ListCertificateUses(r.Context(), c.ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d := certificateDetail{
		certificateView: viewCertificate(c, time.Now()),
		UsedBy:          make([]certificateUseView, len(uses)),
		PEM:             string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.DER})),
	}
	for i, u := range uses {
		d.UsedBy[i] = certificateUseView{Kind: u.Kind, Name: u.Name}
	}
	writeJSON(w, http.StatusOK, d)
}

func (s *Server) deleteCertificate(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "id")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.store.DeleteCertificate(r.Context(), id); err != nil {
		s.fail(w, r, withCode(err, persistence.ErrInUse, "CERTIFICATE_IN_USE"))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
