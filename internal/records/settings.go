package records

import (
	"context"
	"errors"
	"slices"

	"wharf/internal/settings"
)

// UpdateSettings validates every value against the settings catalogue and then writes
// them, so a refusal (each bad key a *persistence.FieldError, joined) writes nothing.
func UpdateSettings(ctx context.Context, st Store, values map[string]string) error {
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var errs []error
	for _, k := range keys {
		if err := settings.Validate(k, values[k]); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, k := range keys {
		if err := st.PutSetting(ctx, k, values[k]); err != nil {
			return err
		}
	}
	return nil
}
