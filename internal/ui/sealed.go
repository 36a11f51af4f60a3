package ui

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"time"
)

// Sealed form state: a value a page hands to the browser in a hidden field
// and takes back on the next POST, so nothing is stored between the two.
// Purpose keeps one kind from being accepted as another; Expires bounds replay.
type formState struct {
	Purpose string `json:"p"`
	Expires int64  `json:"e"`
	UserID  int64  `json:"u"`
	// Generation pins sign-in state to the user's credentials at step one.
	Generation int64 `json:"g,omitempty"`
	// TokenHash pins set-up state to one set-up link.
	TokenHash string `json:"t,omitempty"`
	// Secret is the TOTP secret being enrolled.
	Secret string `json:"s,omitempty"`
	Next   string `json:"n,omitempty"`
}

const (
	purposeSetup  = "setup"
	purposeSignIn = "sign-in"
)

var errBadState = errors.New("form state is invalid or expired")

func (s *Server) sealState(st formState) (string, error) {
	plain, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	sealed, err := s.sealer.Seal(plain)
	clear(plain)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(sealed), nil
}

// openState returns the state sealed in value if it is of purpose and unexpired.
func (s *Server) openState(value, purpose string, now time.Time) (formState, error) {
	var st formState
	raw, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil {
		return st, errBadState
	}
	plain, err := s.sealer.Open(raw)
	if err != nil {
		return st, errBadState
	}
	err = json.Unmarshal(plain, &st)
	clear(plain)
	if err != nil || st.Purpose != purpose || now.Unix() >= st.Expires {
		return formState{}, errBadState
	}
	return st, nil
}
