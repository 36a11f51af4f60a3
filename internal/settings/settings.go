// Package settings is the catalogue of global settings: their keys, defaults, ranges and
// typed values. The store keeps them as text; everything that reads or writes one goes
// through Validate or Parse here, so no entry point admits a value the catalogue refuses.
package settings

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	// The zone database ships with the binary so that display_timezone validates the same
	// on every host, with or without the system's zoneinfo.
	_ "time/tzdata"

	"wharf/internal/persistence"
)

// Keys of the settings.
const (
	MaxDispatches        = "max_dispatches"
	WakeupBackoff        = "wakeup_backoff"
	LeaseDuration        = "lease_duration"
	SweepInterval        = "sweep_interval"
	ShutdownDrainTimeout = "shutdown_drain_timeout"
	MaxUploadMiB         = "max_upload_mib"
	DisplayTimezone      = "display_timezone"
	CertificateWarning   = "certificate_warning_days"
	RefusedBodyMaxMiB    = "refused_body_max_mib"
	RefusedBodyBudgetMiB = "refused_body_budget_mib"
	HealthCheckInterval  = "health_check_interval"
	HideVersion          = "hide_version"

	// Retention (docs/retention.md); a party's own days override them.
	PayloadRetentionDays = "payload_retention_days"
	HistoryRetentionDays = "history_retention_days"

	// Payload storage (docs/storage.md); read at start only.
	PayloadStorage = "payload_storage"
	S3Bucket       = "s3_bucket"
	S3Region       = "s3_region"
	S3Endpoint     = "s3_endpoint"
	S3PathStyle    = "s3_path_style"
	S3Prefix       = "s3_prefix"
)

// MaxWakeupBackoff caps the doubling delay between unanswered wake-ups.
const MaxWakeupBackoff = 5 * time.Minute

// Setting describes one entry of the catalogue.
type Setting struct {
	Key string
	// Label names the setting for people, as the settings page shows it.
	Label       string
	Default     string
	Description string
	// Optional settings may be empty.
	Optional bool
	check    func(string) error
}

// catalogue lists every setting once, in the order they are shown; the payload storage
// settings (storage.go) come last.
var catalogue = append([]Setting{
	{
		Key: MaxDispatches, Label: "Wake-ups before a delivery stalls", Default: "5",
		Description: "Unanswered wake-ups before a delivery is stalled (1 to 100).",
		check:       intBetween(1, 100),
	},
	{
		Key: WakeupBackoff, Label: "Delay after an unanswered wake-up", Default: "10s",
		Description: "Delay after the first unanswered wake-up, doubling with each further one, capped at 5m (1s to 5m).",
		check:       durationBetween(time.Second, MaxWakeupBackoff),
	},
	{
		Key: LeaseDuration, Label: "Claim lease", Default: "60s",
		Description: "How long a claimed delivery stays with its worker without a renewal (10s to 10m).",
		check:       durationBetween(10*time.Second, 10*time.Minute),
	},
	{
		Key: SweepInterval, Label: "Sweep interval", Default: "5s",
		Description: "Time between two runs of the sweep (100ms to 1m).",
		check:       durationBetween(100*time.Millisecond, time.Minute),
	},
	{
		Key: ShutdownDrainTimeout, Label: "Shutdown drain time", Default: "30s",
		Description: "How long a stopping process waits for in-flight work (1s to 10m).",
		check:       durationBetween(time.Second, 10*time.Minute),
	},
	{
		Key: MaxUploadMiB, Label: "Largest document sent by hand (MiB)", Default: "100",
		Description: "Largest document sent by hand, in MiB (1 to 10240).",
		check:       intBetween(1, 10240),
	},
	{
		Key: DisplayTimezone, Label: "Time zone of the web UI", Default: "UTC",
		Description: "IANA time zone in which times are shown, such as Europe/Berlin.",
		check:       timezone,
	},
	{
		Key: CertificateWarning, Label: "Certificate expiry warning (days)", Default: "30",
		Description: "Days before its end a certificate raises a certificate_expiring alert (1 to 365).",
		check:       intBetween(1, 365),
	},
	{
		Key: RefusedBodyMaxMiB, Label: "Refused body kept (MiB)", Default: "10",
		Description: "Most of a refused inbound message's raw body kept for diagnosis, in MiB; a longer body is kept cut short (0 to 1024, 0 keeps none).",
		check:       intBetween(0, 1024),
	},
	{
		Key: RefusedBodyBudgetMiB, Label: "Refused bodies kept per partner a day (MiB)", Default: "100",
		Description: "Most raw body of refused inbound messages kept per partner over 24 hours, in MiB; once used up, refusals are kept without their body (0 to 102400, 0 keeps none).",
		check:       intBetween(0, 102400),
	},
	{
		Key: HealthCheckInterval, Label: "Health check interval", Default: "10s",
		Description: "Time between two checks that the database and the bus answer (1s to 5m).",
		check:       durationBetween(time.Second, 5*time.Minute),
	},
	{
		Key: HideVersion, Label: "Hide the version from partners", Default: "false",
		Description: "true sends the product name alone (Wharf) in User-Agent, Server and an MDN's Reporting-UA; false adds the version (Wharf/1.4.0).",
		check:       boolean,
	},
	{
		Key: PayloadRetentionDays, Label: "Payload retention (days)", Default: "90",
		Description: "Days a settled message's documents, raw bodies and receipts are kept; the message itself stays (0 to 36500, 0 keeps them for ever). A party may set its own.",
		check:       intBetween(0, persistence.MaxRetentionDays),
	},
	{
		Key: HistoryRetentionDays, Label: "History retention (days)", Default: "365",
		Description: "Days a message's history lines are kept; on PostgreSQL a month goes, archived to payload storage, once all of it is older (0 to 36500, 0 keeps them for ever). A party may set its own.",
		check:       intBetween(0, persistence.MaxRetentionDays),
	},
}, storageCatalogue...)

// Catalogue returns every setting in display order.
func Catalogue() []Setting { return slices.Clone(catalogue) }

// Label names the setting key for people; an unknown key is its own label.
func Label(key string) string {
	for _, s := range catalogue {
		if s.Key == key {
			return s.Label
		}
	}
	return key
}

// Keys returns every setting key in display order.
func Keys() []string {
	keys := make([]string, len(catalogue))
	for i, s := range catalogue {
		keys[i] = s.Key
	}
	return keys
}

// Defaults returns every setting with its default value.
func Defaults() map[string]string {
	m := make(map[string]string, len(catalogue))
	for _, s := range catalogue {
		m[s.Key] = s.Default
	}
	return m
}

// Validate checks one value. The error is a *persistence.FieldError named by the key; an
// unknown key is refused the same way.
func Validate(key, value string) error {
	i := slices.IndexFunc(catalogue, func(s Setting) bool { return s.Key == key })
	if i < 0 {
		return &persistence.FieldError{Field: key, Message: "unknown setting"}
	}
	if err := catalogue[i].check(value); err != nil {
		return &persistence.FieldError{Field: key, Message: err.Error()}
	}
	return nil
}

// Values are the settings, typed.
type Values struct {
	MaxDispatches        int
	WakeupBackoff        time.Duration
	LeaseDuration        time.Duration
	SweepInterval        time.Duration
	ShutdownDrainTimeout time.Duration
	MaxUploadMiB         int
	DisplayTimezone      *time.Location
	// CertificateWarning is how long before its end a certificate is reported expiring.
	CertificateWarning time.Duration
	// RefusedBodyMaxMiB bounds the raw body kept of a refused inbound message.
	RefusedBodyMaxMiB int
	// RefusedBodyBudgetMiB bounds the raw bodies of refused messages kept per partner
	// over RefusedBodyBudgetWindow.
	RefusedBodyBudgetMiB int
	// HealthCheckInterval is the time between two checks of the database and the bus.
	HealthCheckInterval time.Duration
	// HideVersion leaves the version out of the product string Wharf sends.
	HideVersion bool
	// Storage is where payloads are kept; a change applies at the next start.
	Storage Storage
	// Retention is how long payloads and history are kept (0: for ever).
	Retention persistence.Retention
}

// Parse reads stored settings into Values; keys m lacks take their defaults. An unknown key
// or an invalid value is an error naming the key.
func Parse(m map[string]string) (Values, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := Validate(k, m[k]); err != nil {
			return Values{}, fmt.Errorf("setting %w", err)
		}
	}
	get := func(k string) string {
		if v, ok := m[k]; ok {
			return v
		}
		return Defaults()[k]
	}
	// Every value passed Validate (or is a default, which a test holds valid), so the
	// conversions below cannot fail.
	var v Values
	v.MaxDispatches, _ = strconv.Atoi(get(MaxDispatches))
	v.WakeupBackoff, _ = time.ParseDuration(get(WakeupBackoff))
	v.LeaseDuration, _ = time.ParseDuration(get(LeaseDuration))
	v.SweepInterval, _ = time.ParseDuration(get(SweepInterval))
	v.ShutdownDrainTimeout, _ = time.ParseDuration(get(ShutdownDrainTimeout))
	v.MaxUploadMiB, _ = strconv.Atoi(get(MaxUploadMiB))
	loc, err := time.LoadLocation(get(DisplayTimezone))
	if err != nil {
		return Values{}, fmt.Errorf("setting %s: %w", DisplayTimezone, err)
	}
	v.DisplayTimezone = loc
	days, _ := strconv.Atoi(get(CertificateWarning))
	v.CertificateWarning = time.Duration(days) * 24 * time.Hour
	v.RefusedBodyMaxMiB, _ = strconv.Atoi(get(RefusedBodyMaxMiB))
	v.RefusedBodyBudgetMiB, _ = strconv.Atoi(get(RefusedBodyBudgetMiB))
	v.HealthCheckInterval, _ = time.ParseDuration(get(HealthCheckInterval))
	v.HideVersion = get(HideVersion) == "true"
	v.Storage = parseStorage(get)
	v.Retention.PayloadDays, _ = strconv.Atoi(get(PayloadRetentionDays))
	v.Retention.HistoryDays, _ = strconv.Atoi(get(HistoryRetentionDays))
	return v, nil
}

// MaxUploadBytes is the largest document sent by hand, in bytes.
func (v Values) MaxUploadBytes() int64 { return int64(v.MaxUploadMiB) << 20 }

// RefusedBodyMaxBytes is the most of a refused message's raw body kept, in bytes.
func (v Values) RefusedBodyMaxBytes() int64 { return int64(v.RefusedBodyMaxMiB) << 20 }

// RefusedBodyBudgetWindow is the rolling window of the refused-body budget.
const RefusedBodyBudgetWindow = 24 * time.Hour

// RefusedBodyBudgetBytes is the most raw body of refused messages kept per partner over
// RefusedBodyBudgetWindow, in bytes.
func (v Values) RefusedBodyBudgetBytes() int64 { return int64(v.RefusedBodyBudgetMiB) << 20 }

// Backoff is the delay after the n-th unanswered wake-up (n from 1): WakeupBackoff, doubled
// for each further one, capped at MaxWakeupBackoff.
func (v Values) Backoff(n int) time.Duration {
	d := v.WakeupBackoff
	for i := 1; i < n && d < MaxWakeupBackoff; i++ {
		d *= 2
	}
	return min(d, MaxWakeupBackoff)
}

// WakeupPolicy is the sweep's policy for due deliveries nobody claimed.
func (v Values) WakeupPolicy() persistence.WakeupPolicy {
	return persistence.WakeupPolicy{MaxDispatches: v.MaxDispatches, Backoff: v.Backoff}
}

func intBetween(lo, hi int) func(string) error {
	return func(s string) error {
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("enter a whole number from %d to %d", lo, hi)
		}
		if n < lo || n > hi {
			return fmt.Errorf("enter a whole number from %d to %d", lo, hi)
		}
		return nil
	}
}

func durationBetween(lo, hi time.Duration) func(string) error {
	return func(s string) error {
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("enter a duration such as 30s or 5m, from %s to %s", lo, hi)
		}
		if d < lo || d > hi {
			return fmt.Errorf("enter a duration from %s to %s", lo, hi)
		}
		return nil
	}
}

func boolean(s string) error {
	if s != "true" && s != "false" {
		return fmt.Errorf("enter true or false")
	}
	return nil
}

func timezone(s string) error {
	// LoadLocation also accepts "" and "Local", which name no zone an operator chose.
	if s == "" || s == "Local" {
		return fmt.Errorf("enter an IANA time zone name such as UTC or Europe/Berlin")
	}
	if _, err := time.LoadLocation(s); err != nil {
		return fmt.Errorf("enter an IANA time zone name such as UTC or Europe/Berlin")
	}
	return nil
}
