package certs

import (
	"context"
	"log/slog"
	"time"

	"wharf/internal/persistence"
)

const (
	// CheckInterval is how often the Monitor looks at the certificates.
	CheckInterval = time.Hour
	// ExpiryWarning is how long before its end a certificate is reported as expiring.
	ExpiryWarning = 30 * 24 * time.Hour
)

// CertificateLister lists stored certificates, soonest expiry first.
type CertificateLister interface {
	ListCertificates(ctx context.Context, opt persistence.ListOptions) ([]persistence.Certificate, int, error)
}

// Monitor checks the stored certificates every CheckInterval, starting at Start: it logs
// a warning for each certificate that expires within ExpiryWarning and an error for each
// that has expired, and hands each to OnExpiry.
type Monitor struct {
	store CertificateLister
	log   *slog.Logger

	// OnExpiry, when set before Start, is called for every expiring (expired false) and
	// expired certificate of each check; alerts hook in here.
	OnExpiry func(ctx context.Context, cert persistence.Certificate, expired bool)
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Warning tells, at each check, how long before its end a certificate is reported
	// as expiring; ExpiryWarning when nil.
	Warning func() time.Duration

	quit, done chan struct{}
}

// NewMonitor returns a Monitor over store, logging to log.
func NewMonitor(store CertificateLister, log *slog.Logger) *Monitor {
	return &Monitor{store: store, log: log}
}

// Start runs the first check at once and then one every CheckInterval, until Stop.
func (m *Monitor) Start(ctx context.Context) error {
	m.quit, m.done = make(chan struct{}), make(chan struct{})
	go m.run(context.WithoutCancel(ctx))
	return nil
}

// Stop ends the checks after the one in progress, or when ctx ends.
func (m *Monitor) Stop(ctx context.Context) error {
	if m.quit == nil {
		return nil
	}
	close(m.quit)
	select {
	case <-m.done:
	case <-ctx.Done():
	}
	return nil
}

func (m *Monitor) run(ctx context.Context) {
	defer close(m.done)
	t := time.NewTicker(CheckInterval)
	defer t.Stop()
	for {
		if _, _, err := m.Check(ctx); err != nil {
			m.log.Error("certificate expiry check failed", "err", err)
		}
		select {
		case <-t.C:
		case <-m.quit:
			return
		}
	}
}

func (m *Monitor) clock() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

// Check looks at every certificate once, logs and reports those that expire within
// the warning (ExpiryWarning unless Warning says otherwise) or have expired, and returns
// them.
func (m *Monitor) Check(ctx context.Context) (expiring, expired []persistence.Certificate, err error) {
	now := m.clock()
	warning := ExpiryWarning
	if m.Warning != nil {
		warning = m.Warning()
	}
	horizon := now.Add(warning)
	const batch = 500
	for offset := 0; ; offset += batch {
		list, _, err := m.store.ListCertificates(ctx, persistence.ListOptions{Limit: batch, Offset: offset})
		if err != nil {
			return expiring, expired, err
		}
		for _, c := range list {
			if c.NotAfter.After(horizon) {
				// The list is in expiry order: everything after this is further out.
				return expiring, expired, nil
			}
			attrs := []any{"certificate_id", c.ID, "fingerprint", c.Fingerprint, "subject", c.Subject,
				"not_after", c.NotAfter.UTC().Format(time.RFC3339)}
			isExpired := !c.NotAfter.After(now)
			if isExpired {
				m.log.ErrorContext(ctx, "certificate has expired", attrs...)
				expired = append(expired, c)
			} else {
				m.log.WarnContext(ctx, "certificate expires soon", append(attrs, "days_left", DaysLeft(c.NotAfter, now))...)
				expiring = append(expiring, c)
			}
			if m.OnExpiry != nil {
				m.OnExpiry(ctx, c, isExpired)
			}
		}
		if len(list) < batch {
			return expiring, expired, nil
		}
	}
}

// DaysLeft is the number of whole days from now until notAfter; negative once it passed.
func DaysLeft(notAfter, now time.Time) int {
	d := notAfter.Sub(now)
	days := int(d / (24 * time.Hour))
	if d < 0 && d%(24*time.Hour) != 0 {
		days--
	}
	return days
}
