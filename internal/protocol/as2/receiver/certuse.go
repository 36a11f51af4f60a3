package receiver

// CertificateFields names the stored certificate the receiver serves HTTPS with, so it
// is not deleted while the receiver uses it.
func (c *Config) CertificateFields() map[string]int64 {
	if c.TLSCertificateID == nil {
		return nil
	}
	return map[string]int64{"tls_certificate_id": *c.TLSCertificateID}
}
