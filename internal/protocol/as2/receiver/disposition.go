package receiver

import (
	"errors"

	"wharf/internal/protocol/as2/cms"
	"wharf/internal/protocol/as2/mime"
)

// Refusals the receiver itself decides, besides the failure classes of packages cms and
// mime.
var (
	// errReplay: the signature was already seen on a message with another Message-ID.
	errReplay = errors.New("signature already used by another message")
	// errDuplicateFilename: the partner sent the file name within the profile's window
	// and the profile refuses repeats.
	errDuplicateFilename = errors.New("file name already received within the window")
	// errMessageIDReused: the partner sent other content under a Message-ID it used
	// before. Answering the first copy's MDN would acknowledge a document never
	// stored, so it is refused.
	errMessageIDReused = errors.New("Message-ID already used for other content")
)

// dispositions is the one place a failure meets the wire: the RFC 4130 disposition
// modifier ("processed/error: <description>") for each failure class, first match wins.
// A replayed signature is answered duplicate-document rather than
// authentication-failed: the signature is valid, the partner's software (or whoever
// resent it) reused it, and the description says exactly that.
var dispositions = []struct {
	class       error
	description string
}{
	{cms.ErrInsufficientSecurity, "insufficient-message-security"},
	{cms.ErrIntegrity, "integrity-check-failed"},
	{cms.ErrAuthentication, "authentication-failed"},
	{cms.ErrDecryption, "decryption-failed"},
	{cms.ErrDecompression, "decompression-failed"},
	{errReplay, "duplicate-document"},
	{errMessageIDReused, "duplicate-document"},
	{errDuplicateFilename, "duplicate-filename"},
}

// layerFailures names the failure of a layer whose algorithm we do not implement: the
// layer cannot be opened, whichever algorithm it is.
var layerFailures = map[mime.Layer]string{
	mime.LayerEncrypted:  "decryption-failed",
	mime.LayerSigned:     "authentication-failed",
	mime.LayerCompressed: "decompression-failed",
}

// unexpectedFailure is the description of anything else.
const unexpectedFailure = "unexpected-processing-error"

// failureDisposition maps an error from unpacking or checking a message to its
// disposition. layers are the layers Unpack had reached, outermost first; the last is
// the one being opened when it failed.
func failureDisposition(err error, layers []mime.Layer) mime.Disposition {
	return mime.ProcessedWith("error", failureDescription(err, layers))
}

func failureDescription(err error, layers []mime.Layer) string {
	for _, d := range dispositions {
		if errors.Is(err, d.class) {
			return d.description
		}
	}
	if len(layers) > 0 && errors.Is(err, cms.ErrUnsupportedAlgorithm) {
		if d, ok := layerFailures[layers[len(layers)-1]]; ok {
			return d
		}
	}
	return unexpectedFailure
}

// duplicateFilenameWarning is the disposition of a repeated file name the profile takes
// with a warning.
func duplicateFilenameWarning() mime.Disposition {
	return mime.ProcessedWith("warning", "duplicate-filename")
}
