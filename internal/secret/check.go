package secret

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"strings"
)

// checkPlain is what the check value seals. It is no secret: the value only proves that
// a key opens what the database holds.
const checkPlain = "wharf secrets key check v1"

// ErrWrongKey means the key file does not open the database's sealed values.
var ErrWrongKey = errors.New("the secrets key does not open this database's sealed values")

// CheckStore keeps the sealed check value of a database.
type CheckStore interface {
	// SecretsCheck returns the stored check value, storing sealed first when there is
	// none.
	SecretsCheck(ctx context.Context, sealed []byte) ([]byte, error)
}

// Verify proves that b opens what the database holds sealed, by opening its check value;
// a new database gets one sealed under b's current key. keyPath names the key file in the
// error, which says which key id the database wants and how to supply it.
func Verify(ctx context.Context, st CheckStore, b *Box, keyPath string) error {
	fresh, err := b.Seal([]byte(checkPlain))
	if err != nil {
		return fmt.Errorf("seal the secrets key check: %w", err)
	}
	stored, err := st.SecretsCheck(ctx, fresh)
	if err != nil {
		return err
	}
	plain, err := b.Open(stored)
	if err == nil && subtle.ConstantTimeCompare(plain, []byte(checkPlain)) == 1 {
		return nil
	}
	id, idErr := SealedKeyID(stored)
	switch {
	case idErr != nil:
		return fmt.Errorf("%w: the stored check value is damaged (%v)", ErrWrongKey, idErr)
	case errors.Is(err, ErrUnknownKey):
		return fmt.Errorf("%w: it is sealed under key %s, and %s holds only %s; put the key file this database was sealed with there, or point WHARF_SECRETS_KEY_FILE at it",
			ErrWrongKey, id, keyPath, strings.Join(b.KeyIDs(), ", "))
	default:
		return fmt.Errorf("%w: key %s in %s is not the key %s this database was sealed with; restore that key file, or point WHARF_SECRETS_KEY_FILE at it",
			ErrWrongKey, id, keyPath, id)
	}
}
