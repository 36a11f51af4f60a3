package notification

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Signature headers of the Standard Webhooks scheme, which the gateway's own callbacks use
// as well: the signature is "v1," and the base64 HMAC-SHA256 of "<id>.<timestamp>.<body>".
const (
	HeaderWebhookID        = "Webhook-Id"
	HeaderWebhookTimestamp = "Webhook-Timestamp"
	HeaderWebhookSignature = "Webhook-Signature"
)

const minSecretBytes = 16

// secretKey is the HMAC key of a signing secret: the base64 after "whsec_", or the bytes
// of the text as given.
func secretKey(secret string) ([]byte, error) {
	if rest, ok := strings.CutPrefix(secret, "whsec_"); ok {
		key, err := base64.StdEncoding.DecodeString(rest)
		if err != nil {
			return nil, fmt.Errorf("the part after whsec_ is not base64")
		}
		if len(key) < minSecretBytes {
			return nil, fmt.Errorf("must be at least %d bytes", minSecretBytes)
		}
		return key, nil
	}
	if len(secret) < minSecretBytes {
		return nil, fmt.Errorf("must be at least %d characters", minSecretBytes)
	}
	return []byte(secret), nil
}

// Sign sets the Standard Webhooks headers of one request.
func Sign(h http.Header, key []byte, id string, at time.Time, body []byte) {
	ts := strconv.FormatInt(at.Unix(), 10)
	h.Set(HeaderWebhookID, id)
	h.Set(HeaderWebhookTimestamp, ts)
	h.Set(HeaderWebhookSignature, "v1,"+signature(key, id, ts, body))
}

func signature(key []byte, id, ts string, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + ts + "."))
	m.Write(body)
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// Verify checks a signed request as a receiver does: one of the space-separated v1
// signatures matches and the timestamp is within tolerance of now.
func Verify(h http.Header, secret string, body []byte, now time.Time, tolerance time.Duration) error {
	key, err := secretKey(secret)
	if err != nil {
		return err
	}
	id, ts := h.Get(HeaderWebhookID), h.Get(HeaderWebhookTimestamp)
	if id == "" || ts == "" {
		return fmt.Errorf("missing webhook-id or webhook-timestamp")
	}
	secs, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("bad webhook-timestamp")
	}
	if d := now.Sub(time.Unix(secs, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("webhook-timestamp outside the tolerance")
	}
	want := signature(key, id, ts, body)
	for _, s := range strings.Fields(h.Get(HeaderWebhookSignature)) {
		if v, ok := strings.CutPrefix(s, "v1,"); ok && hmac.Equal([]byte(v), []byte(want)) {
			return nil
		}
	}
	return fmt.Errorf("no matching signature")
}
