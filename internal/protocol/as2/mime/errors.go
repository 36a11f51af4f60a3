package mime

import "errors"

// Failure classes of the MIME layer. CMS failures are passed through with
// their own classes (cms.ErrDecryption and the rest).
var (
	// ErrMalformed: the MIME structure cannot be read (no boundary, a part
	// missing, a header section that never ends).
	ErrMalformed = errors.New("malformed MIME entity")
	// ErrTransferEncoding: an unknown Content-Transfer-Encoding or content
	// that does not decode.
	ErrTransferEncoding = errors.New("undecodable content transfer encoding")
	// ErrUnsupportedLayer: an application/pkcs7-mime layer this package
	// does not open (for example opaque signed-data).
	ErrUnsupportedLayer = errors.New("unsupported MIME layer")
	// ErrNotMDN: the entity is not a disposition notification report.
	ErrNotMDN = errors.New("not a message disposition notification")
)
