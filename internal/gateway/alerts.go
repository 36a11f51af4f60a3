package gateway

import (
	"context"
	"log/slog"
	"time"

	"wharf/internal/alert"
	"wharf/internal/bus"
	"wharf/internal/module"
	"wharf/internal/persistence/db"
)

// moduleBus gives modules the bus with the small interface they use.
type moduleBus struct{ b *bus.Bus }

var _ module.Bus = moduleBus{}

func (m moduleBus) Publish(subject string, data []byte) error { return m.b.Publish(subject, data) }

func (m moduleBus) Subscribe(subject string, fn func(string, []byte)) (func(), error) {
	sub, err := m.b.Subscribe(subject, fn)
	if err != nil {
		return nil, err
	}
	return func() { _ = sub.Unsubscribe() }, nil
}

// newAlerts makes the process's alert queue: alerts go out on the bus, where the notifier
// module hears them in whichever process runs it; the store reports the messages that
// need someone, and the certificate check the certificates that expire.
func (g *Gateway) newAlerts(log *slog.Logger) *alert.Queue {
	q := alert.NewQueue(alert.SinkFunc(func(_ context.Context, a alert.Alert) error {
		b, err := alert.Encode(a)
		if err != nil {
			return err
		}
		return g.Bus.Publish(alert.BusSubject, b)
	}), log, alert.DefaultCapacity)
	refusals := alert.NewCooldown(alert.RefusalCooldown, nil)
	g.Store.OnMessageAlert(func(m db.MessageAlert) {
		if r, ok := alert.MessageResolution(m.Message, m.Previous); ok {
			q.Raise(r)
		}
		a, ok := alert.ForMessage(m.Message, m.Target, m.Reason)
		// A storm of refusals from one party is one alert per window.
		if ok && (a.Code != alert.MessageRefused || refusals.Allow(a.DedupeKey)) {
			q.Raise(a)
		}
	})
	g.Store.OnSessionAlert(func(x db.SessionAlert) {
		if x.Resolved {
			q.Raise(alert.SessionResolution(x.Key, x.At))
			return
		}
		q.Raise(alert.ForSession(alert.BlockedSession{Key: x.Key, Target: x.Target, From: x.From, To: x.To,
			DeliveryID: x.DeliveryID, MessageID: x.MessageID, Reason: x.Reason, At: x.At}))
	})
	g.Store.OnPartnerPause(func(x db.PauseEvent) {
		busSignals{bus: g.Bus, log: log}.PausesChanged()
		if x.Resumed {
			q.Raise(alert.PauseResolution(x.Partner, x.At))
			return
		}
		q.Raise(alert.ForPartnerPause(x.PartnerPause))
	})
	g.Certs.RaiseAlerts(q)
	g.Certs.Warning = func() time.Duration { return g.settings(context.Background()).CertificateWarning }
	return q
}
