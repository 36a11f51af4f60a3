package stdwebhook

import (
	"errors"
	"net/http"
	"testing"
	"time"
)

func TestSignVerify(t *testing.T) {
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	key, err := Key(secret)
	if err != nil {
		t.Fatal(err)
	}
	// The Standard Webhooks specification's example.
	h := make(http.Header)
	body := []byte(`{"test": 2432232314}`)
	at := time.Unix(1614265330, 0)
	Sign(h, key, "msg_p5jXN8AQM9LWM0D4loKWxJek", at, body)
	if got := h.Get(HeaderSignature); got != "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=" {
		t.Fatalf("signature = %s", got)
	}
	other := NewSecret()
	tests := []struct {
		name    string
		secrets []string
		body    string
		now     time.Time
		want    error
	}{
		{"good", []string{secret}, string(body), at, nil},
		{"second secret of a rotation", []string{other, secret}, string(body), at, nil},
		{"changed body", []string{secret}, `{"test": 2432232315}`, at, ErrNoMatch},
		{"other secret", []string{other}, string(body), at, ErrNoMatch},
		{"an hour late", []string{secret}, string(body), at.Add(time.Hour), ErrStale},
		{"from the future", []string{secret}, string(body), at.Add(-6 * time.Minute), ErrStale},
		{"within tolerance", []string{secret}, string(body), at.Add(4 * time.Minute), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := Verify(h, tc.secrets, []byte(tc.body), tc.now); !errors.Is(err, tc.want) {
				t.Fatalf("Verify = %v, want %v", err, tc.want)
			}
		})
	}
	h.Del(HeaderTimestamp)
	if err := Verify(h, []string{secret}, body, at); !errors.Is(err, ErrMissingHeaders) {
		t.Fatalf("without a timestamp: %v", err)
	}
	for _, bad := range []string{"short", "whsec_!!!", "whsec_c2hvcnQ="} {
		if _, err := Key(bad); err == nil {
			t.Errorf("secret %q accepted", bad)
		}
	}
	if _, err := Key(NewSecret()); err != nil {
		t.Fatalf("a new secret is refused: %v", err)
	}
}

// During a rotation the sender signs with both secrets, so a receiver holding either one
// verifies, and a receiver holding neither does not.
func TestSignKeysRotation(t *testing.T) {
	oldSecret, newSecret := NewSecret(), NewSecret()
	var keys [][]byte
	for _, s := range []string{newSecret, oldSecret} {
		k, err := Key(s)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	h := make(http.Header)
	body := []byte(`{"type":"message.received"}`)
	at := time.Unix(1700000000, 0)
	SignKeys(h, keys, "wharf-event-1", at, body)
	tests := []struct {
		name    string
		secrets []string
		want    error
	}{
		{"receiver with the new secret", []string{newSecret}, nil},
		{"receiver still on the old secret", []string{oldSecret}, nil},
		{"receiver with another secret", []string{NewSecret()}, ErrNoMatch},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := Verify(h, tc.secrets, body, at); !errors.Is(err, tc.want) {
				t.Fatalf("Verify = %v, want %v", err, tc.want)
			}
		})
	}
}
