package eventhook

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"wharf/internal/events"
	"wharf/internal/module"
	"wharf/internal/persistence"
)

// REST paths of the module; the subscriptions' own records are plugin configs
// (/api/v1/plugins/configs/event-webhook/{name}).
const (
	BasePath = "/api/v1/event-webhooks"
	namePath = BasePath + "/{name}"
)

// APIRoutes are creating a subscription with a generated secret, the list with each
// subscription's health, rotating the secret, the test button, enabling a disabled
// subscription and its delivery log.
func (rt *Runtime) APIRoutes() []module.APIRoute {
	return []module.APIRoute{
		{Method: "GET", Path: BasePath, Handle: rt.listAPI},
		{Method: "POST", Path: BasePath, Body: module.BodyJSON, Handle: rt.createAPI},
		{Method: "POST", Path: namePath + "/secret", Handle: rt.rotateAPI},
		{Method: "POST", Path: namePath + "/test", Handle: rt.testAPI},
		{Method: "POST", Path: namePath + "/enable", Handle: rt.enableAPI},
		{Method: "GET", Path: namePath + "/deliveries", Handle: rt.deliveriesAPI},
	}
}

func fieldErr(field, msg string) error { return &persistence.FieldError{Field: field, Message: msg} }

func pathName(r *http.Request) (persistence.InstanceName, error) {
	name, err := persistence.ParseInstanceName(r.PathValue("name"))
	if err != nil {
		return "", fieldErr("name", err.Error())
	}
	return name, nil
}

// createAPI takes a subscription's config without a secret, generates the secret and
// answers it once, beside the config as the plugin config API presents it.
func (rt *Runtime) createAPI(r *http.Request) (int, any, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return 0, nil, fmt.Errorf("read the request: %w", err)
	}
	rec, secret, err := rt.Create(r.Context(), body)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, map[string]any{"event_webhook": module.Present(rec), "secret": secret}, nil
}

func (rt *Runtime) rotateAPI(r *http.Request) (int, any, error) {
	name, err := pathName(r)
	if err != nil {
		return 0, nil, err
	}
	secret, until, err := rt.Rotate(r.Context(), name)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"secret": secret, "previous_secret_until": until}, nil
}

func (rt *Runtime) testAPI(r *http.Request) (int, any, error) {
	name, err := pathName(r)
	if err != nil {
		return 0, nil, err
	}
	id, err := rt.Test(r.Context(), name)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusAccepted, map[string]any{"delivery_id": id}, nil
}

func (rt *Runtime) enableAPI(r *http.Request) (int, any, error) {
	name, err := pathName(r)
	if err != nil {
		return 0, nil, err
	}
	changed, err := rt.Enable(r.Context(), name)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"instance": name, "was_disabled": changed}, nil
}

func (rt *Runtime) listAPI(r *http.Request) (int, any, error) {
	limit, offset, err := paging(r)
	if err != nil {
		return 0, nil, err
	}
	subs, err := rt.List(r.Context())
	if err != nil {
		return 0, nil, err
	}
	total := len(subs)
	subs = subs[min(offset, total):min(offset+limit, total)]
	return http.StatusOK, map[string]any{"event_webhooks": subs, "total": total, "limit": limit, "offset": offset}, nil
}

func (rt *Runtime) deliveriesAPI(r *http.Request) (int, any, error) {
	name, err := pathName(r)
	if err != nil {
		return 0, nil, err
	}
	limit, offset, err := paging(r)
	if err != nil {
		return 0, nil, err
	}
	state := r.URL.Query().Get("state")
	if state != "" {
		if _, err := events.ParseWebhookState(state); err != nil {
			return 0, nil, fieldErr("state", err.Error())
		}
	}
	items, total, err := rt.Deliveries(r.Context(), name, events.WebhookState(state), limit, offset)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"deliveries": items, "total": total, "limit": limit, "offset": offset}, nil
}

// Paging of lists, as the core's.
const (
	defaultLimit = 100
	maxLimit     = 1000
)

func paging(r *http.Request) (limit, offset int, err error) {
	q := r.URL.Query()
	limit = defaultLimit
	if q.Has("limit") {
		n, err := strconv.Atoi(q.Get("limit"))
		if err != nil || n < 1 || n > maxLimit {
			return 0, 0, fieldErr("limit", fmt.Sprintf("must be a whole number from 1 to %d", maxLimit))
		}
		limit = n
	}
	if q.Has("offset") {
		n, err := strconv.Atoi(q.Get("offset"))
		if err != nil || n < 0 {
			return 0, 0, fieldErr("offset", "must be a whole number of at least 0")
		}
		offset = n
	}
	return limit, offset, nil
}

// decodeObject reads a JSON object for the secret to be put in.
func decodeObject(body []byte) (map[string]json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		return nil, fieldErr("body", "must be a JSON object")
	}
	return fields, nil
}
