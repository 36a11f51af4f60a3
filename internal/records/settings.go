package records

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"wharf/internal/settings"
)

// CurrentSettings is every setting of the catalogue: the stored value or the default. The
// store's bookkeeping entries beside the catalogue are left out.
func CurrentSettings(ctx context.Context, st interface {
	ListSettings(ctx context.Context) (map[string]string, error)
}) (map[string]string, error) {
	stored, err := st.ListSettings(ctx)
	if err != nil {
		return nil, fmt.Errorf("list settings: %w", err)
	}
	out := settings.Defaults()
	for k := range out {
		if v, ok := stored[k]; ok {
			out[k] = v
		}
	}
	return out, nil
}

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
	if err := checkTogether(ctx, st, values); err != nil {
		return err
	}
	for _, k := range keys {
		if err := st.PutSetting(ctx, k, values[k]); err != nil {
			return err
		}
	}
	return nil
}

// checkTogether checks the settings as they would be after the change, for rules that span
// several keys (S3 chosen without a bucket).
func checkTogether(ctx context.Context, st Store, values map[string]string) error {
	merged, err := CurrentSettings(ctx, st)
	if err != nil {
		return err
	}
	for k, v := range values {
		merged[k] = v
	}
	return settings.CheckTogether(merged)
}
