package httptarget

import (
	"crypto/x509"
	"errors"
	"io"
	"net"
	"syscall"
)

// TransportReason words a transport error without the address it went to, nor anything
// the error might quote of it (the notifier and the event webhooks send to write-only URLs).
func TransportReason(err error) string {
	var dnsErr *net.DNSError
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalid x509.CertificateInvalidError
	switch {
	case errors.As(err, &dnsErr):
		return "transport: DNS lookup failed"
	case errors.As(err, &unknownCA), errors.As(err, &hostErr), errors.As(err, &invalid):
		return "transport: the server's TLS certificate was refused"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "transport: connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "transport: connection reset by peer"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "transport: connection closed before a response"
	}
	return "transport: the request failed"
}
