// Package stdwebhook signs and verifies HTTP requests by the Standard Webhooks scheme:
// headers webhook-id, webhook-timestamp (Unix seconds) and webhook-signature, a
// space-separated list of "v1,<base64 HMAC-SHA256 of id.timestamp.body>". The gateway
// signs its alert notifications and event webhooks this way and verifies the status
// callbacks of in-house systems with it.
package stdwebhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header names of the scheme.
const (
	HeaderID        = "Webhook-Id"
	HeaderTimestamp = "Webhook-Timestamp"
	HeaderSignature = "Webhook-Signature"
)

// Tolerance is how far a request's timestamp may be from the receiver's clock.
const Tolerance = 5 * time.Minute

const (
	secretPrefix   = "whsec_"
	minSecretBytes = 16
	newSecretBytes = 32
)

// Errors of Verify, told apart so a receiver can count them.
var (
	ErrMissingHeaders = errors.New("missing webhook-id or webhook-timestamp")
	ErrBadTimestamp   = errors.New("webhook-timestamp is not a number of seconds")
	ErrStale          = errors.New("webhook-timestamp outside the tolerance")
	ErrNoMatch        = errors.New("no matching signature")
)

// Key is the HMAC key of a signing secret: the base64 after "whsec_", or the bytes of the
// text as given (some senders use plain text secrets).
func Key(secret string) ([]byte, error) {
	if rest, ok := strings.CutPrefix(secret, secretPrefix); ok {
		key, err := base64.StdEncoding.DecodeString(rest)
		if err != nil {
			return nil, fmt.Errorf("the part after %s is not base64", secretPrefix)
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

// NewSecret returns a fresh random secret in the "whsec_" form.
func NewSecret() string {
	b := make([]byte, newSecretBytes)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return secretPrefix + base64.StdEncoding.EncodeToString(b)
}

// Sign sets the scheme's headers of one request.
func Sign(h http.Header, key []byte, id string, at time.Time, body []byte) {
	ts := strconv.FormatInt(at.Unix(), 10)
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, ts)
	h.Set(HeaderSignature, "v1,"+signature(key, id, ts, body))
}

// SignKeys sets the headers with one signature per key, space-separated, so a receiver
// that holds any of the keys verifies the request (a secret being rotated).
func SignKeys(h http.Header, keys [][]byte, id string, at time.Time, body []byte) {
	ts := strconv.FormatInt(at.Unix(), 10)
	sigs := make([]string, len(keys))
	for i, key := range keys {
		sigs[i] = "v1," + signature(key, id, ts, body)
	}
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, ts)
	h.Set(HeaderSignature, strings.Join(sigs, " "))
}

func signature(key []byte, id, ts string, body []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + ts + "."))
	m.Write(body)
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// Verify checks a signed request as a receiver does: the timestamp is within Tolerance of
// now and one of the space-separated v1 signatures matches one of the secrets (several
// while a secret is being rotated). Comparisons take constant time.
func Verify(h http.Header, secrets []string, body []byte, now time.Time) error {
	keys := make([][]byte, 0, len(secrets))
	for i, s := range secrets {
		key, err := Key(s)
		if err != nil {
			return fmt.Errorf("secret %d: %w", i+1, err)
		}
		keys = append(keys, key)
	}
	id, ts := h.Get(HeaderID), h.Get(HeaderTimestamp)
	if id == "" || ts == "" {
		return ErrMissingHeaders
	}
	secs, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return ErrBadTimestamp
	}
	if d := now.Sub(time.Unix(secs, 0)); d > Tolerance || d < -Tolerance {
		return ErrStale
	}
	got := strings.Fields(h.Get(HeaderSignature))
	for _, key := range keys {
		want := []byte(signature(key, id, ts, body))
		for _, s := range got {
			if v, ok := strings.CutPrefix(s, "v1,"); ok && hmac.Equal([]byte(v), want) {
				return nil
			}
		}
	}
	return ErrNoMatch
}
