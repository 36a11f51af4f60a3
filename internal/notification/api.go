package notification

import (
	"fmt"
	"net/http"
	"strconv"

	"wharf/internal/alert"
	"wharf/internal/api"
	"wharf/internal/module"
	"wharf/internal/persistence"
)

// REST paths of the module.
const (
	NotificationsPath = "/api/v1/notifications"
	TestPath          = "/api/v1/notifications/test"
	AlertsPath        = "/api/v1/alerts"
)

// APIRoutes are the notification log, the alerts heard and the test button.
func (rt *Runtime) APIRoutes() []module.APIRoute {
	return []module.APIRoute{
		{Method: "GET", Path: NotificationsPath, Handle: rt.listNotifications},
		{Method: "POST", Path: TestPath, Body: module.BodyJSON, Handle: rt.test},
		{Method: "GET", Path: AlertsPath, Handle: rt.listAlerts},
	}
}

func fieldErr(field, msg string) error { return &persistence.FieldError{Field: field, Message: msg} }

// parseFilter reads the query parameters shared by the lists.
func parseFilter(r *http.Request, withState bool) (Filter, error) {
	q := r.URL.Query()
	f := Filter{Limit: defaultLimit}
	if q.Has("limit") {
		n, err := strconv.Atoi(q.Get("limit"))
		if err != nil || n < 1 || n > maxLimit {
			return f, fieldErr("limit", fmt.Sprintf("must be a whole number from 1 to %d", maxLimit))
		}
		f.Limit = n
	}
	if q.Has("offset") {
		n, err := strconv.Atoi(q.Get("offset"))
		if err != nil || n < 0 {
			return f, fieldErr("offset", "must be a whole number of at least 0")
		}
		f.Offset = n
	}
	rest, err := alert.ParseFilter(q.Get, withState)
	if err != nil {
		return f, err
	}
	rest.Limit, rest.Offset = f.Limit, f.Offset
	return rest, nil
}

func (rt *Runtime) listNotifications(r *http.Request) (int, any, error) {
	f, err := parseFilter(r, true)
	if err != nil {
		return 0, nil, err
	}
	items, total, err := rt.ListNotifications(r.Context(), f)
	if err != nil {
		return 0, nil, err
	}
	if items == nil {
		items = []Notification{}
	}
	return http.StatusOK, map[string]any{"notifications": items, "total": total, "limit": f.Limit, "offset": f.Offset}, nil
}

func (rt *Runtime) listAlerts(r *http.Request) (int, any, error) {
	f, err := parseFilter(r, false)
	if err != nil {
		return 0, nil, err
	}
	items, total, err := rt.ListAlerts(r.Context(), f)
	if err != nil {
		return 0, nil, err
	}
	if items == nil {
		items = []alert.Alert{}
	}
	return http.StatusOK, map[string]any{"alerts": items, "total": total, "limit": f.Limit, "offset": f.Offset}, nil
}

func (rt *Runtime) test(r *http.Request) (int, any, error) {
	var in struct {
		Instance string `json:"instance"`
	}
	if err := api.DecodeJSON(r, &in); err != nil {
		return 0, nil, err
	}
	name, err := persistence.ParseInstanceName(in.Instance)
	if err != nil {
		return 0, nil, fieldErr("instance", err.Error())
	}
	id, err := rt.Test(r.Context(), name, api.Actor(r))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusAccepted, map[string]any{"alert_id": id, "instance": name}, nil
}
