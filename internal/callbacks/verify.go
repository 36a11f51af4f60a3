package callbacks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/stdwebhook"
)

// Secrets reads a target's callback secrets and records their use (db.Store).
type Secrets interface {
	ListCallbackSecrets(ctx context.Context, target persistence.InstanceName) ([]persistence.CallbackSecret, error)
	TouchCallbackSecret(ctx context.Context, sec persistence.CallbackSecret) error
}

// Opener opens sealed secrets (secret.Box).
type Opener interface {
	Open(sealed []byte) ([]byte, error)
}

// Refusals counts the callbacks refused before anything was read (the metrics); may be nil.
type Refusals interface {
	Refused(protocol string, instance persistence.InstanceName, reason string)
}

// Protocol is the protocol label of status callbacks in the inbound metrics.
const Protocol = "status-callback"

// ErrUnauthorized is a callback whose signature or timestamp does not verify with any
// unrevoked secret of its target (a target without secrets, or no such target, alike).
var ErrUnauthorized = errors.New("the webhook signature does not verify")

// Verifier checks a callback's Standard Webhooks signature against its target's secrets.
type Verifier struct {
	Secrets  Secrets
	Opener   Opener
	Refusals Refusals
	Log      *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Verify returns nil when header carries a fresh signature of body by one of target's
// unrevoked secrets, and records that secret's use. Otherwise it counts and logs the
// refusal (the reason code, never a secret or a signature) and wraps ErrUnauthorized.
func (v *Verifier) Verify(ctx context.Context, target persistence.InstanceName, header http.Header, body []byte) error {
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	secs, err := v.Secrets.ListCallbackSecrets(ctx, target)
	if err != nil {
		return fmt.Errorf("verify status callback: %w", err)
	}
	reason := "no_secret"
	for _, sec := range secs {
		if sec.RevokedAt != nil {
			continue
		}
		plain, err := v.Opener.Open(sec.Sealed)
		if err != nil {
			return fmt.Errorf("open callback secret %d of %s: %w", sec.ID, target, err)
		}
		err = stdwebhook.Verify(header, []string{string(plain)}, body, now())
		if err == nil {
			if err := v.Secrets.TouchCallbackSecret(ctx, sec); err != nil {
				v.log().WarnContext(ctx, "record the use of a callback secret", "target", target, "secret_id", sec.ID, "error", err)
			}
			return nil
		}
		reason = refusalReason(err)
		if reason != "bad_signature" {
			break // the headers are wrong whatever the secret
		}
	}
	if v.Refusals != nil {
		// The instance label names only targets with secrets, so a caller cannot mint
		// label values with made-up names.
		label := target
		if len(secs) == 0 {
			label = ""
		}
		v.Refusals.Refused(Protocol, label, reason)
	}
	v.log().WarnContext(ctx, "status callback refused: signature not verified", "target", target, "reason", reason,
		"webhook_id", clip(header.Get(stdwebhook.HeaderID), 100))
	return fmt.Errorf("%w (%s)", ErrUnauthorized, reason)
}

func (v *Verifier) log() *slog.Logger {
	if v.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return v.Log
}

// refusalReason is the metric's reason code of a failed verification.
func refusalReason(err error) string {
	switch {
	case errors.Is(err, stdwebhook.ErrMissingHeaders):
		return "missing_headers"
	case errors.Is(err, stdwebhook.ErrBadTimestamp):
		return "bad_timestamp"
	case errors.Is(err, stdwebhook.ErrStale):
		return "stale_timestamp"
	default:
		return "bad_signature"
	}
}

// clip bounds a caller's text before it reaches a log line.
func clip(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
