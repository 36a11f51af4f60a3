package profile

import (
	"database/sql/driver"

	"wharf/internal/persistence"
)

// CompressionOrder is where compression sits among an outbound message's layers when the
// message is also signed (RFC 5402 §3): compressed, then signed (the signature covers the
// compressed data), or signed, then compressed (the signature covers the document, and
// the compressed layer wraps both). Partners read either; some ask for the second.
type CompressionOrder string

const (
	CompressBeforeSigning CompressionOrder = "before_signing"
	CompressAfterSigning  CompressionOrder = "after_signing"
)

// AllCompressionOrders is the canonical list.
var AllCompressionOrders = []CompressionOrder{CompressBeforeSigning, CompressAfterSigning}

func ParseCompressionOrder(s string) (CompressionOrder, error) {
	return persistence.ParseEnum("compression order", s, AllCompressionOrders)
}
func (v CompressionOrder) MarshalText() ([]byte, error) {
	return persistence.DomainText(v, ParseCompressionOrder)
}
func (v *CompressionOrder) UnmarshalText(b []byte) error {
	return persistence.UnmarshalDomain(v, b, ParseCompressionOrder)
}
func (v *CompressionOrder) Scan(src any) error {
	return persistence.ScanDomain(v, src, ParseCompressionOrder)
}
func (v CompressionOrder) Value() (driver.Value, error) {
	return persistence.DomainValue(v, ParseCompressionOrder)
}
