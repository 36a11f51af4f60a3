package profile

import (
	"bytes"
	"context"
	"crypto/x509"
	"fmt"

	"wharf/internal/persistence"
)

// maxChainDepth bounds the intermediates looked for above a certificate.
const maxChainDepth = 8

// certLister is what finding a chain needs of the core's store.
type certLister interface {
	ListCertificates(ctx context.Context, opt persistence.ListOptions) ([]persistence.Certificate, int, error)
}

// issuerChain returns the intermediates of the certificate store that chain cert to a
// root: each one issued the one before, up to a self-signed root, which is left out (the
// partner trusts it or not on its own). It refuses a cert whose issuer is not stored, so
// include_chain never sends a signature the partner cannot chain.
func issuerChain(ctx context.Context, core certLister, cert *x509.Certificate) ([]*x509.Certificate, error) {
	if selfSigned(cert) {
		return nil, fmt.Errorf("certificate %q is self-signed: there is no chain to include", cert.Subject.CommonName)
	}
	all, err := allCertificates(ctx, core)
	if err != nil {
		return nil, err
	}
	var chain []*x509.Certificate
	for c := cert; len(chain) <= maxChainDepth; {
		issuer := findIssuer(all, c)
		if issuer == nil {
			if c == cert {
				return nil, fmt.Errorf("the issuer of certificate %q (%s) is not in the certificate store; import it to include the chain",
					cert.Subject.CommonName, cert.Issuer)
			}
			return chain, nil
		}
		if selfSigned(issuer) {
			return chain, nil
		}
		chain = append(chain, issuer)
		c = issuer
	}
	return nil, fmt.Errorf("the chain of certificate %q is longer than %d certificates", cert.Subject.CommonName, maxChainDepth)
}

func selfSigned(c *x509.Certificate) bool {
	return bytes.Equal(c.RawIssuer, c.RawSubject) && c.CheckSignatureFrom(c) == nil
}

func findIssuer(all []*x509.Certificate, c *x509.Certificate) *x509.Certificate {
	for _, cand := range all {
		if bytes.Equal(cand.RawSubject, c.RawIssuer) && !bytes.Equal(cand.Raw, c.Raw) && c.CheckSignatureFrom(cand) == nil {
			return cand
		}
	}
	return nil
}

// allCertificates reads every stored certificate, page by page.
func allCertificates(ctx context.Context, core certLister) ([]*x509.Certificate, error) {
	const page = 500
	var out []*x509.Certificate
	for offset := 0; ; offset += page {
		recs, total, err := core.ListCertificates(ctx, persistence.ListOptions{Limit: page, Offset: offset})
		if err != nil {
			return nil, fmt.Errorf("list certificates: %w", err)
		}
		for _, rec := range recs {
			c, err := x509.ParseCertificate(rec.DER)
			if err != nil {
				return nil, fmt.Errorf("certificate %d: stored certificate is damaged: %w", rec.ID, err)
			}
			out = append(out, c)
		}
		if len(recs) < page || offset+len(recs) >= total {
			return out, nil
		}
	}
}
