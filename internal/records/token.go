package records

import (
	"context"
	"errors"

	"wharf/internal/auth/apitoken"
	"wharf/internal/module"
	"wharf/internal/persistence"
)

// CreateAPIToken creates an API token for every entry point (CLI, web UI, REST): name
// as apitoken.CheckName demands, and target, when not empty, a target instance the token
// is scoped to. It returns the record and the token, shown once.
func CreateAPIToken(ctx context.Context, st Store, name, target string) (persistence.APIToken, string, error) {
	var errs []error
	if err := apitoken.CheckName(name); err != nil {
		errs = append(errs, err)
	}
	var scope persistence.InstanceName
	if target != "" {
		var err error
		if scope, err = persistence.ParseInstanceName(target); err != nil {
			errs = append(errs, fieldError("target", err.Error()))
		} else if err := checkInstanceRole(ctx, st, "target", scope, module.RoleTarget); err != nil {
			var fe *persistence.FieldError
			if !errors.As(err, &fe) {
				return persistence.APIToken{}, "", err
			}
			errs = append(errs, fe)
		}
	}
	if len(errs) > 0 {
		return persistence.APIToken{}, "", errors.Join(errs...)
	}
	return apitoken.Create(ctx, st, name, scope)
}
