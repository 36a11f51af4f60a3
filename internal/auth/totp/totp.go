// Package totp issues and checks RFC 6238 time-based one-time codes with the
// parameters every authenticator app understands: HMAC-SHA-1, 6 digits,
// 30-second steps.
package totp

import (
	"crypto/subtle"
	"fmt"
	"strings"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/hotp"
	"github.com/pquerna/otp/totp"
)

// Fixed code parameters. Apps ignore or mishandle anything else, so these
// are not configurable.
const (
	Period = 30 * time.Second
	Digits = 6
	// Skew is how many steps either side of the current one are accepted,
	// allowing for clock drift and for a code typed just as it changed.
	Skew = 1
	// secretSize is 160 bits, the secret length RFC 4226 recommends.
	secretSize = 20
)

// Key is a newly issued secret: Secret (base32, no padding) is what the
// caller seals and stores, URL (otpauth://totp/…) is what the enrolment QR
// code carries.
type Key struct {
	Secret string
	URL    string
}

// NewSecret draws a random secret for account at issuer.
func NewSecret(issuer, account string) (Key, error) {
	k, err := totp.Generate(totp.GenerateOpts{
		Issuer:      issuer,
		AccountName: account,
		Period:      uint(Period / time.Second),
		SecretSize:  secretSize,
		Digits:      otp.DigitsSix,
		Algorithm:   otp.AlgorithmSHA1,
	})
	if err != nil {
		return Key{}, fmt.Errorf("totp: new secret: %w", err)
	}
	return Key{Secret: k.Secret(), URL: k.URL()}, nil
}

// Step returns the RFC 6238 time step containing t.
func Step(t time.Time) int64 {
	return t.Unix() / int64(Period/time.Second)
}

// Validate checks code against secret at now, accepting the steps from
// Skew before to Skew after the current one, but never a step at or before
// lastStep: the caller stores the returned step as the account's new
// lastStep, so each code (and any older one) works once. A fresh enrolment
// passes lastStep 0. Spaces in code are ignored. Every candidate step is
// computed and compared in constant time, so timing does not reveal which
// step, if any, matched.
func Validate(secret, code string, now time.Time, lastStep int64) (step int64, ok bool) {
	code = strings.ReplaceAll(code, " ", "")
	if len(code) != Digits {
		return 0, false
	}
	opts := hotp.ValidateOpts{Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1}
	current := Step(now)
	for s := current - Skew; s <= current+Skew; s++ {
		if s < 0 {
			continue
		}
		want, err := hotp.GenerateCodeCustom(secret, uint64(s), opts)
		if err != nil {
			return 0, false
		}
		match := subtle.ConstantTimeCompare([]byte(want), []byte(code)) == 1
		// The latest matching step wins so that lastStep moves as far as it can.
		if match && s > lastStep {
			step, ok = s, true
		}
	}
	return step, ok
}

// Reused reports whether code is right for a step Validate would take but for lastStep:
// a code already spent, such as the one just typed at enrolment while the app still shows
// it. The sign-in tells the user to wait for the next code instead of refusing the code
// as wrong.
func Reused(secret, code string, now time.Time, lastStep int64) bool {
	code = strings.ReplaceAll(code, " ", "")
	if len(code) != Digits || lastStep <= 0 {
		return false
	}
	opts := hotp.ValidateOpts{Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1}
	current := Step(now)
	reused := false
	for s := max(current-Skew, 0); s <= current+Skew && s <= lastStep; s++ {
		want, err := hotp.GenerateCodeCustom(secret, uint64(s), opts)
		if err != nil {
			return false
		}
		if subtle.ConstantTimeCompare([]byte(want), []byte(code)) == 1 {
			reused = true
		}
	}
	return reused
}
