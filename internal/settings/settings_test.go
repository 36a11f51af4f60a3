package settings

import (
	"errors"
	"testing"
	"time"

	"wharf/internal/persistence"
)

func TestDefaultsAreValid(t *testing.T) {
	for k, v := range Defaults() {
		if err := Validate(k, v); err != nil {
			t.Errorf("default of %s: %v", k, err)
		}
	}
	if len(Defaults()) != len(Keys()) {
		t.Fatalf("Defaults has %d keys, Keys %d", len(Defaults()), len(Keys()))
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		key, value string
		ok         bool
	}{
		{MaxDispatches, "1", true},
		{MaxDispatches, "100", true},
		{MaxDispatches, "0", false},
		{MaxDispatches, "101", false},
		{MaxDispatches, "5.5", false},
		{MaxDispatches, "", false},
		{WakeupBackoff, "10s", true},
		{WakeupBackoff, "5m", true},
		{WakeupBackoff, "5m1s", false},
		{WakeupBackoff, "500ms", false},
		{WakeupBackoff, "ten seconds", false},
		{LeaseDuration, "10s", true},
		{LeaseDuration, "10m", true},
		{LeaseDuration, "9s", false},
		{LeaseDuration, "11m", false},
		{SweepInterval, "100ms", true},
		{SweepInterval, "1m", true},
		{SweepInterval, "99ms", false},
		{SweepInterval, "-5s", false},
		{ShutdownDrainTimeout, "30s", true},
		{ShutdownDrainTimeout, "0s", false},
		{MaxUploadMiB, "1", true},
		{MaxUploadMiB, "10240", true},
		{MaxUploadMiB, "10241", false},
		{MaxUploadMiB, "-1", false},
		{DisplayTimezone, "UTC", true},
		{DisplayTimezone, "Europe/Berlin", true},
		{DisplayTimezone, "America/New_York", true},
		{DisplayTimezone, "Mars/Olympus", false},
		{DisplayTimezone, "", false},
		{DisplayTimezone, "Local", false},
		{DisplayTimezone, "../../etc/passwd", false},
		{RefusedBodyBudgetMiB, "0", true},
		{RefusedBodyBudgetMiB, "100", true},
		{RefusedBodyBudgetMiB, "102400", true},
		{RefusedBodyBudgetMiB, "102401", false},
		{RefusedBodyBudgetMiB, "-1", false},
		{RefusedBodyBudgetMiB, "1.5", false},
		{RefusedBodyBudgetMiB, "", false},
		{"no_such_setting", "1", false},
	}
	for _, tt := range tests {
		t.Run(tt.key+"="+tt.value, func(t *testing.T) {
			err := Validate(tt.key, tt.value)
			if tt.ok {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			var fe *persistence.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("Validate = %v, want a *persistence.FieldError", err)
			}
			if fe.Field != tt.key {
				t.Errorf("field = %q, want %q", fe.Field, tt.key)
			}
		})
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		in      map[string]string
		want    func(Values) bool
		wantErr string
	}{
		{
			name: "empty takes defaults",
			in:   nil,
			want: func(v Values) bool {
				return v.MaxDispatches == 5 && v.WakeupBackoff == 10*time.Second &&
					v.LeaseDuration == 60*time.Second && v.SweepInterval == 5*time.Second &&
					v.ShutdownDrainTimeout == 30*time.Second && v.MaxUploadMiB == 100 &&
					v.DisplayTimezone.String() == "UTC" && v.RefusedBodyBudgetMiB == 100 &&
					v.RefusedBodyBudgetBytes() == 100<<20
			},
		},
		{
			name: "refused-body budget",
			in:   map[string]string{RefusedBodyBudgetMiB: "3"},
			want: func(v Values) bool { return v.RefusedBodyBudgetBytes() == 3<<20 },
		},
		{name: "bad refused-body budget", in: map[string]string{RefusedBodyBudgetMiB: "lots"}, wantErr: RefusedBodyBudgetMiB},
		{
			name: "stored values win",
			in:   map[string]string{MaxDispatches: "7", MaxUploadMiB: "2", DisplayTimezone: "Europe/Paris", LeaseDuration: "2m"},
			want: func(v Values) bool {
				return v.MaxDispatches == 7 && v.MaxUploadMiB == 2 && v.MaxUploadBytes() == 2<<20 &&
					v.DisplayTimezone.String() == "Europe/Paris" && v.LeaseDuration == 2*time.Minute &&
					v.SweepInterval == 5*time.Second
			},
		},
		{name: "unknown key", in: map[string]string{"colour": "blue"}, wantErr: "colour"},
		{name: "bad value", in: map[string]string{SweepInterval: "2h"}, wantErr: SweepInterval},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Parse(tt.in)
			if tt.wantErr != "" {
				var fe *persistence.FieldError
				if !errors.As(err, &fe) || fe.Field != tt.wantErr {
					t.Fatalf("Parse = %v, want an error naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !tt.want(v) {
				t.Errorf("Parse = %+v", v)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	v, err := Parse(map[string]string{WakeupBackoff: "10s"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		n    int
		want time.Duration
	}{
		{1, 10 * time.Second},
		{2, 20 * time.Second},
		{3, 40 * time.Second},
		{5, 160 * time.Second},
		{6, 5 * time.Minute},
		{60, 5 * time.Minute},
	}
	p := v.WakeupPolicy()
	if p.MaxDispatches != 5 {
		t.Errorf("MaxDispatches = %d", p.MaxDispatches)
	}
	for _, tt := range tests {
		if got := p.Backoff(tt.n); got != tt.want {
			t.Errorf("Backoff(%d) = %s, want %s", tt.n, got, tt.want)
		}
	}
}

// TestLabels: every setting has a label for people, which is not its key.
func TestLabels(t *testing.T) {
	for _, s := range Catalogue() {
		if s.Label == "" || s.Label == s.Key || Label(s.Key) != s.Label {
			t.Errorf("%s: label %q", s.Key, s.Label)
		}
	}
	if Label("no_such_setting") != "no_such_setting" {
		t.Error("an unknown key is not its own label")
	}
}

func TestRetentionSettings(t *testing.T) {
	for _, tc := range []struct {
		key, value string
		ok         bool
	}{
		{PayloadRetentionDays, "0", true},
		{PayloadRetentionDays, "36500", true},
		{PayloadRetentionDays, "-1", false},
		{PayloadRetentionDays, "36501", false},
		{HistoryRetentionDays, "30d", false},
		{HistoryRetentionDays, "400", true},
	} {
		if err := Validate(tc.key, tc.value); (err == nil) != tc.ok {
			t.Errorf("Validate(%s, %q) = %v, want ok %v", tc.key, tc.value, err, tc.ok)
		}
	}
	v, err := Parse(map[string]string{PayloadRetentionDays: "7"})
	if err != nil {
		t.Fatal(err)
	}
	if v.Retention != (persistence.Retention{PayloadDays: 7, HistoryDays: 365}) {
		t.Errorf("Retention = %+v, want 7 payload days and the history default 365", v.Retention)
	}
}
