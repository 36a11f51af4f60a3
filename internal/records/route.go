package records

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/retry"
)

// RouteInput is a route as a client writes it.
type RouteInput struct {
	Source  string
	From    string
	To      string
	Target  string
	Ordered bool
	// SessionBy names the metadata entry that keys an ordered route's sessions.
	SessionBy string
	// Retry overrides the target's retry policy; nil keeps the target's.
	Retry *retry.Policy
}

// RedundantRouteError refuses a route that covers or is covered by another with the same
// source and target. It matches persistence.ErrConflict.
type RedundantRouteError struct {
	// Existing is the route it overlaps; its ID is 0 when the store found the overlap.
	Existing persistence.Route
}

func (e *RedundantRouteError) Error() string {
	if e.Existing.ID == 0 {
		return "the route covers or is covered by another route with the same source and target"
	}
	return fmt.Sprintf("the route covers or is covered by route %d (source %s, from %s, to %s, target %s)",
		e.Existing.ID, e.Existing.Source, e.Existing.From, e.Existing.To, e.Existing.Target)
}

func (e *RedundantRouteError) Unwrap() error { return persistence.ErrConflict }

// CreateRoute validates and stores a route. Beyond the syntax of each field: the source
// must be an instance of a source plugin type and the target one of a target type, a named
// from or to must be an organization or partner, a retry override must be a valid policy,
// and the route must not overlap another (*RedundantRouteError).
func CreateRoute(ctx context.Context, st Store, in RouteInput) (persistence.Route, error) {
	r, err := checkRoute(ctx, st, in, 0)
	if err != nil {
		return persistence.Route{}, err
	}
	created, err := st.CreateRoute(ctx, r)
	if errors.Is(err, persistence.ErrConflict) {
		// Another writer got there between the check and the insert.
		return persistence.Route{}, &RedundantRouteError{}
	}
	return created, err
}

// UpdateRoute validates an edit of route id as CreateRoute validates a new route (its
// overlap with itself aside) and stores it; persistence.ErrNotFound when there is no
// such route.
func UpdateRoute(ctx context.Context, st Store, id int64, in RouteInput) (persistence.Route, error) {
	if _, err := st.GetRoute(ctx, id); err != nil {
		return persistence.Route{}, err
	}
	r, err := checkRoute(ctx, st, in, id)
	if err != nil {
		return persistence.Route{}, err
	}
	r.ID = id
	updated, err := st.UpdateRoute(ctx, r)
	if errors.Is(err, persistence.ErrConflict) {
		return persistence.Route{}, &RedundantRouteError{}
	}
	return updated, err
}

// checkRoute is the one rule set of a route as a client writes it; self is the id of the
// route being edited (0 for a new one), which may not overlap itself.
func checkRoute(ctx context.Context, st Store, in RouteInput, self int64) (persistence.Route, error) {
	var errs []error
	r := persistence.Route{Ordered: in.Ordered, SessionBy: strings.TrimSpace(in.SessionBy), Retry: in.Retry}
	var err error
	if err := persistence.CheckSessionBy(r); err != nil {
		errs = append(errs, err)
	}
	if r.Source, err = persistence.ParseInstanceName(in.Source); err != nil {
		errs = append(errs, fieldError("source", err.Error()))
	}
	if r.From, err = persistence.ParsePartyPattern(in.From); err != nil {
		errs = append(errs, fieldError("from", err.Error()))
	}
	if r.To, err = persistence.ParsePartyPattern(in.To); err != nil {
		errs = append(errs, fieldError("to", err.Error()))
	}
	if r.Target, err = persistence.ParseInstanceName(in.Target); err != nil {
		errs = append(errs, fieldError("target", err.Error()))
	}
	if in.Retry != nil {
		if err := persistence.CheckRetry("retry", *in.Retry); err != nil {
			errs = append(errs, err)
		}
	}
	// The references that parsed are looked up too, so one refusal names every field.
	for _, c := range []struct {
		field string
		name  persistence.InstanceName
		role  module.Role
	}{{"source", r.Source, module.RoleSource}, {"target", r.Target, module.RoleTarget}} {
		if c.name == "" {
			continue
		}
		err := checkInstanceRole(ctx, st, c.field, c.name, c.role)
		var fe *persistence.FieldError
		switch {
		case errors.As(err, &fe):
			errs = append(errs, fe)
		case err != nil:
			return persistence.Route{}, err
		}
	}
	for _, c := range []struct {
		field string
		p     persistence.PartyPattern
	}{{"from", r.From}, {"to", r.To}} {
		if c.p == persistence.AnyParty || c.p == "" {
			continue
		}
		ok, err := partyExists(ctx, st, persistence.PartyName(c.p))
		if err != nil {
			return persistence.Route{}, err
		}
		if !ok {
			errs = append(errs, fieldError(c.field, fmt.Sprintf("no organization or partner named %q", c.p)))
		}
	}
	if len(errs) > 0 {
		return persistence.Route{}, errors.Join(errs...)
	}

	existing, err := st.ListRoutes(ctx)
	if err != nil {
		return persistence.Route{}, err
	}
	for _, o := range existing {
		if o.ID != self && r.Overlaps(o) {
			return persistence.Route{}, &RedundantRouteError{Existing: o}
		}
	}
	return r, nil
}

// checkInstanceRole checks that the instance exists and its plugin type stands on role.
// A refusal is a *persistence.FieldError on field; a store failure is returned as is.
func checkInstanceRole(ctx context.Context, st interface {
	GetPluginConfig(ctx context.Context, name persistence.InstanceName) (persistence.PluginConfig, error)
}, field string, name persistence.InstanceName, role module.Role) error {
	cfg, err := st.GetPluginConfig(ctx, name)
	if errors.Is(err, persistence.ErrNotFound) {
		return fieldError(field, fmt.Sprintf("no plugin instance named %q", name))
	}
	if err != nil {
		return err
	}
	// A notifier's worker sends alerts from its own queue and never claims a message.
	if cfg.Type == persistence.PluginNotificationWebhook {
		return fieldError(field, fmt.Sprintf("instance %q is a notifier: it sends alerts, not messages", name))
	}
	if cfg.Type == persistence.PluginEventWebhook {
		return fieldError(field, fmt.Sprintf("instance %q is an event webhook: it sends events, not messages", name))
	}
	p, ok := module.Lookup(cfg.Type)
	if !ok {
		return fieldError(field, fmt.Sprintf("plugin type %s of instance %q is not available in this build", cfg.Type, name))
	}
	if p.Role != role {
		return fieldError(field, fmt.Sprintf("instance %q is a %s (a %s), not a %s", name, cfg.Type, p.Role, role))
	}
	return nil
}
