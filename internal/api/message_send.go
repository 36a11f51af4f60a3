package api

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"slices"
	"strconv"

	"wharf/internal/records"
	"wharf/internal/settings"
)

const (
	// uploadOverhead is what a multipart body may carry beyond its file: the other fields
	// and the framing.
	uploadOverhead = records.UploadOverhead
	// maxFieldLen bounds each text field of an upload.
	maxFieldLen = 1 << 10
)

// sendFields are the text fields of a message sent by hand.
var sendFields = []string{"from", "to", "source", "target", "correlation_id", "origin_event_id", "metadata"}

// maxMetadataLen bounds the metadata field: a JSON object of up to 32 names and values.
const maxMetadataLen = 16 << 10

// sendMessage takes a document sent by hand (multipart: from, to, file, and target and/or
// source, optionally correlation_id and origin_event_id) and answers 201 with the message
// once it is stored and dispatched. The document is spooled to a temporary file first, so
// an oversized or malformed upload writes nothing.
func (s *Server) sendMessage(w http.ResponseWriter, r *http.Request) {
	limit, err := records.MaxUploadBytes(r.Context(), s.store)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit+uploadOverhead)
	up, err := readUpload(r, limit)
	if up.file != nil {
		defer func() {
			up.file.Close()
			os.Remove(up.file.Name())
		}()
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if up.file == nil {
		s.fail(w, r, invalid("file", "required"))
		return
	}
	if _, err := up.file.Seek(0, io.SeekStart); err != nil {
		s.fail(w, r, err)
		return
	}
	m, err := records.SendMessage(r.Context(), s.store, s.ingest, records.SendInput{
		From: up.fields["from"], To: up.fields["to"],
		Source: up.fields["source"], Target: up.fields["target"],
		FileName: up.fileName, Body: up.file,
		CorrelationID: up.fields["correlation_id"], OriginEventID: up.fields["origin_event_id"],
		Metadata: up.fields["metadata"],
		Actor:    actor(r),
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	d, err := s.messageDetail(r, m.ID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	w.Header().Set("Location", "/api/v1/messages/"+strconv.FormatInt(m.ID, 10))
	writeJSON(w, http.StatusCreated, d)
}

type upload struct {
	fields   map[string]string
	fileName string
	file     *os.File
}

// readUpload reads the multipart parts: the known text fields once each, and one file of
// at most limit bytes, spooled to a temporary file the caller removes.
func readUpload(r *http.Request, limit int64) (upload, error) {
	up := upload{fields: map[string]string{}}
	mr, err := r.MultipartReader()
	if err != nil {
		return up, invalid("body", "not a multipart/form-data body: "+err.Error())
	}
	fileSeen := false
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			return up, nil
		}
		if err != nil {
			return up, multipartError(err)
		}
		name := part.FormName()
		switch {
		case name == "file":
			if fileSeen {
				return up, invalid("file", "given more than once")
			}
			fileSeen = true
			// Part.FileName drops any directory part; the name as sent is what is validated,
			// so a path is refused rather than quietly shortened.
			_, params, _ := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
			up.fileName = params["filename"]
			if up.file, err = os.CreateTemp("", "wharf-upload-*"); err != nil {
				return up, fmt.Errorf("spool upload: %w", err)
			}
			n, err := io.Copy(up.file, io.LimitReader(part, limit+1))
			if err != nil {
				return up, multipartError(err)
			}
			if n == 0 {
				return up, invalid("file", "empty: a document needs at least one byte")
			}
			if n > limit {
				return up, &apiError{status: http.StatusRequestEntityTooLarge, code: "PAYLOAD_TOO_LARGE",
					message: fmt.Sprintf("the file is larger than the limit of %d MiB (setting %s)", limit>>20, settings.MaxUploadMiB)}
			}
		case isSendField(name):
			if _, dup := up.fields[name]; dup {
				return up, invalid(name, "given more than once")
			}
			max := maxFieldLen
			if name == "metadata" {
				max = maxMetadataLen
			}
			b, err := io.ReadAll(io.LimitReader(part, int64(max)+1))
			if err != nil {
				return up, multipartError(err)
			}
			if len(b) > max {
				return up, invalid(name, "too long")
			}
			up.fields[name] = string(b)
		case name == "":
			return up, invalid("body", "every part needs a form field name")
		default:
			return up, invalid(name, "unknown field")
		}
	}
}

func isSendField(name string) bool { return slices.Contains(sendFields, name) }

func multipartError(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return &apiError{status: http.StatusRequestEntityTooLarge, code: "PAYLOAD_TOO_LARGE",
			message: "the upload is larger than the limit (setting " + settings.MaxUploadMiB + ")"}
	}
	return invalid("body", "malformed multipart body: "+err.Error())
}
