package receiver

import (
	"context"
	"net"
	"net/http"

	"wharf/internal/persistence"
)

// countUnknownSender counts a request refused before both AS2 ids named profiles, by
// remote address and the AS2 ids as sent, so the operator sees who keeps trying (a
// partner not set up yet, a wrong id, a scanner). A failure to count is logged only.
func (rc *Receiver) countUnknownSender(ctx context.Context, r *http.Request, reason string) {
	host := r.RemoteAddr
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), keepTimeout)
	defer cancel()
	err := rc.deps.Store.RecordUnknownSender(ctx, persistence.UnknownSenderHit{
		Source:     rc.name,
		RemoteAddr: host,
		SenderID:   r.Header.Get("AS2-From"),
		ReceiverID: r.Header.Get("AS2-To"),
		Reason:     reason,
	})
	if err != nil {
		rc.log.WarnContext(ctx, "unknown AS2 sender not counted", "remote", host, "err", err)
	}
}
