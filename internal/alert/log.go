package alert

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"wharf/internal/persistence"
)

// NotificationState is where a row of the notification log stands.
type NotificationState string

const (
	NotificationQueued     NotificationState = "queued"
	NotificationDelivering NotificationState = "delivering"
	NotificationRetrying   NotificationState = "retrying"
	NotificationDelivered  NotificationState = "delivered"
	NotificationFailed     NotificationState = "failed"
	// NotificationHeld is a row the rate limit kept back; a summary covers it.
	NotificationHeld NotificationState = "held"
	// NotificationSuppressed is a row the cooldown dropped.
	NotificationSuppressed NotificationState = "suppressed"
)

// AllNotificationStates lists the states.
var AllNotificationStates = []NotificationState{NotificationQueued, NotificationDelivering, NotificationRetrying,
	NotificationDelivered, NotificationFailed, NotificationHeld, NotificationSuppressed}

// ParseNotificationState parses a state name.
func ParseNotificationState(s string) (NotificationState, error) {
	if i := slices.Index(AllNotificationStates, NotificationState(s)); i >= 0 {
		return AllNotificationStates[i], nil
	}
	return "", fmt.Errorf("invalid notification state %q", s)
}

// Notification is one row of the notification log: an alert's headline, the notifier
// instance, and what came of sending it.
type Notification struct {
	ID       int64             `json:"id"`
	AlertID  string            `json:"alert_id"`
	Instance string            `json:"instance"`
	Kind     string            `json:"kind"` // alert or summary
	State    NotificationState `json:"state"`
	Severity Severity          `json:"severity"`
	Code     Code              `json:"code"`
	// Subject is the alert's: the record it is about.
	Subject   Subject `json:"subject"`
	Summary   string  `json:"summary"`
	Link      string  `json:"link"`
	Attempts  int     `json:"attempts"`
	LastError string  `json:"last_error"`
	// NextAttemptAt is set while the row waits to be retried.
	NextAttemptAt *time.Time `json:"next_attempt_at"`
	// SummaryID names the summary row that covered a held row.
	SummaryID *int64    `json:"summary_id"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Filter narrows a list of notifications or alerts; zero fields do not filter.
// Severity keeps that severity and the more urgent ones; State applies to notifications.
type Filter struct {
	Instance string
	State    NotificationState
	Code     Code
	Severity Severity
	// Unresolved keeps only the alerts whose cause lasts; it applies to alerts.
	Unresolved bool
	Limit      int
	Offset     int
}

// ChangedSubject is the bus subject on which the notifier announces changed rows of the
// log as {"ids": [...]}, for pages that update live.
const ChangedSubject = "notification.changed"

// Log is what the notifier module offers the rest of the process (the web UI's
// Notifications page and dashboard card); the gateway hands the module's runtime over as
// one, and it is nil in a build without the module.
type Log interface {
	// ListNotifications returns a page of the notification log, newest first, and the
	// count the filter matches.
	ListNotifications(ctx context.Context, f Filter) ([]Notification, int, error)
	// ListAlerts returns a page of the alerts raised, newest first, and the count the
	// filter matches (a dashboard card asks for Severity critical).
	ListAlerts(ctx context.Context, f Filter) ([]Alert, int, error)
	// Test raises a notification_test alert for one notifier instance, delivered in
	// whichever process runs it, and returns the alert's id. A missing instance is
	// persistence.ErrNotFound; one that is no notifier or is disabled a FieldError.
	Test(ctx context.Context, instance persistence.InstanceName, actor string) (alertID string, err error)
}

// ParseFilter reads a list's instance, code, severity and either (withState) the state
// filter of notifications or the unresolved filter of alerts from
// get (a query or a form), for the REST API and the web UI alike; paging is the caller's.
// Empty values do not filter; each malformed one is a persistence.FieldError naming it,
// joined.
func ParseFilter(get func(string) string, withState bool) (Filter, error) {
	var f Filter
	var errs []error
	field := func(name string, err error) {
		errs = append(errs, &persistence.FieldError{Field: name, Message: err.Error()})
	}
	if v := get("instance"); v != "" {
		if n, err := persistence.ParseInstanceName(v); err != nil {
			field("instance", err)
		} else {
			f.Instance = string(n)
		}
	}
	var err error
	if v := get("code"); v != "" {
		if f.Code, err = ParseCode(v); err != nil {
			field("code", err)
		}
	}
	if v := get("severity"); v != "" {
		if f.Severity, err = ParseSeverity(v); err != nil {
			field("severity", err)
		}
	}
	if v := get("state"); v != "" && withState {
		if f.State, err = ParseNotificationState(v); err != nil {
			field("state", err)
		}
	}
	if v := get("unresolved"); v != "" && !withState {
		switch v {
		case "true":
			f.Unresolved = true
		case "false":
		default:
			field("unresolved", fmt.Errorf("invalid value %q: want true or false", v))
		}
	}
	return f, errors.Join(errs...)
}
