package profile

import (
	"database/sql/driver"

	"wharf/internal/persistence"
)

// Chunking says whether a large outbound message may go out with Transfer-Encoding:
// chunked. A large message is built while it is sent, so its length is known only at
// its end: auto sends it chunked; never builds it into a temporary file first and sends
// it with a Content-Length, for products that refuse chunked requests. Messages small
// enough to be built in memory always carry a Content-Length.
type Chunking string

const (
	ChunkedAuto  Chunking = "auto"
	ChunkedNever Chunking = "never"
)

// AllChunkings is the canonical list.
var AllChunkings = []Chunking{ChunkedAuto, ChunkedNever}

func ParseChunking(s string) (Chunking, error) {
	return persistence.ParseEnum("chunked", s, AllChunkings)
}
func (v Chunking) MarshalText() ([]byte, error) {
	return persistence.DomainText(v, ParseChunking)
}
func (v *Chunking) UnmarshalText(b []byte) error {
	return persistence.UnmarshalDomain(v, b, ParseChunking)
}
func (v *Chunking) Scan(src any) error {
	return persistence.ScanDomain(v, src, ParseChunking)
}
func (v Chunking) Value() (driver.Value, error) {
	return persistence.DomainValue(v, ParseChunking)
}
