package receiver

import (
	"context"
	"errors"
	"net/http"
	"time"

	"wharf/internal/bodyrate"
	"wharf/internal/persistence"
	"wharf/internal/protocol/as2/cms"
	"wharf/internal/protocol/as2/mime"
)

// maxMDNBody bounds an asynchronous MDN: a report and a signature, never a document.
const maxMDNBody = 1 << 20

// handleMDN hands an asynchronous MDN a partner posts to mdn_path to the sender's
// intake.
func (rc *Receiver) handleMDN(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), time.Duration(rc.cfg.WriteTimeout))
	defer cancel()
	if rc.deps.MDNIntake == nil {
		w.Header().Set("Connection", "close")
		textAnswer(w, http.StatusNotFound, "This gateway takes no asynchronous MDNs here.")
		return
	}
	if !rc.admitPartner(w, r, mdnPoster) {
		return
	}
	defer rc.perPartner.release(mdnPoster)
	if r.ContentLength > maxMDNBody {
		w.Header().Set("Connection", "close")
		textAnswer(w, http.StatusRequestEntityTooLarge, "The MDN is larger than an MDN can be.")
		rc.log.WarnContext(ctx, "asynchronous MDN refused: too large", "remote", r.RemoteAddr, "size", r.ContentLength)
		return
	}
	body, err := readBody(r.Body, r.ContentLength, maxMDNBody)
	switch {
	case errors.Is(err, errBodyTooLarge):
		textAnswer(w, http.StatusRequestEntityTooLarge, "The MDN is larger than an MDN can be.")
		rc.log.WarnContext(ctx, "asynchronous MDN refused: too large", "remote", r.RemoteAddr)
		return
	case errors.Is(err, bodyrate.ErrTooSlow):
		w.Header().Set("Connection", "close")
		textAnswer(w, http.StatusRequestTimeout, rc.tooSlowText())
		rc.log.WarnContext(ctx, "asynchronous MDN refused: body too slow", "remote", r.RemoteAddr, "err", err)
		return
	case err != nil:
		textAnswer(w, http.StatusBadRequest, "The request body could not be read to its end.")
		rc.log.WarnContext(ctx, "asynchronous MDN refused: body not read", "remote", r.RemoteAddr, "err", err)
		return
	}
	err = rc.deps.MDNIntake.AcceptMDN(ctx, r.Header.Get("Content-Type"), r.Header, body)
	if err == nil {
		textAnswer(w, http.StatusOK, "The MDN was received.")
		return
	}
	status, text := mdnRefusal(err, rc.deps.MDNFaults)
	attrs := []any{"status", status, "remote", r.RemoteAddr, "as2_from", r.Header.Get("AS2-From"), "err", err}
	if status >= 500 {
		rc.log.ErrorContext(ctx, "asynchronous MDN not taken", attrs...)
		w.Header().Set("Retry-After", "60")
	} else {
		rc.log.WarnContext(ctx, "asynchronous MDN refused", attrs...)
	}
	textAnswer(w, status, text)
}

// partnerFaults are the failure classes of an MDN its sender caused.
var partnerFaults = []error{
	cms.ErrAuthentication, cms.ErrIntegrity, cms.ErrInsufficientSecurity, cms.ErrUnsupportedAlgorithm,
	cms.ErrMalformed, mime.ErrMalformed, mime.ErrNotMDN, mime.ErrTransferEncoding, mime.ErrUnsupportedLayer,
}

// mdnRefusal maps an intake error to the answer: the partner's faults are 4xx with the
// reason, our own failures a 500 that says nothing of our internals.
func mdnRefusal(err error, faults []error) (int, string) {
	var fe *persistence.FieldError
	switch {
	case errors.Is(err, persistence.ErrNotFound):
		return http.StatusNotFound, "The MDN answers no message this gateway sent: " + err.Error()
	case errors.Is(err, persistence.ErrConflict):
		return http.StatusConflict, "The MDN conflicts with what is recorded: " + err.Error()
	case errors.As(err, &fe):
		return http.StatusBadRequest, "The MDN was refused: " + err.Error()
	}
	for _, classes := range [][]error{faults, partnerFaults} {
		for _, class := range classes {
			if errors.Is(err, class) {
				return http.StatusBadRequest, "The MDN was refused: " + err.Error()
			}
		}
	}
	return http.StatusInternalServerError, "The gateway cannot take the MDN now; send it again later."
}
