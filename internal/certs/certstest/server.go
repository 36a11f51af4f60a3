package certstest

import (
	"crypto"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"testing"
	"time"
)

// ServerLeaf makes a TLS server certificate for key signed by ca, valid from a day ago
// for a year, for the host names and IP addresses in hosts.
func ServerLeaf(tb testing.TB, ca Pair, name string, key crypto.Signer, hosts ...string) Pair {
	tb.Helper()
	tmpl := &x509.Certificate{
		SerialNumber: serial(tb),
		Subject:      pkix.Name{CommonName: name, Organization: []string{"Wharf Test"}},
		NotBefore:    time.Now().Add(-24 * time.Hour),
		NotAfter:     time.Now().Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return sign(tb, tmpl, ca.Cert, key, ca.Key)
}

// Intermediate makes a CA certificate signed by ca, valid from a day ago for five years.
func Intermediate(tb testing.TB, ca Pair, name string) Pair {
	tb.Helper()
	return sign(tb, caTemplate(tb, name, 5), ca.Cert, ECKey(tb), ca.Key)
}

// caTemplate is a CA certificate's template valid from a day ago for years.
func caTemplate(tb testing.TB, name string, years int) *x509.Certificate {
	return &x509.Certificate{
		SerialNumber:          serial(tb),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"Wharf Test"}},
		NotBefore:             time.Now().Add(-24 * time.Hour),
		NotAfter:              time.Now().Add(time.Duration(years) * 365 * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
}
