package api

import (
	"errors"
	"testing"
	"time"

	"wharf/internal/persistence"
)

// FuzzDecodeCallback reads status callback bodies as the callback route does once the
// signature verified: every body is refused with field errors naming what was wrong (a
// 400), or decodes to a callback that names its delivery exactly one way, with a status
// and a reason the history keeps as they are.
func FuzzDecodeCallback(f *testing.F) {
	for _, s := range []string{
		`{"delivery_id":12,"status":"processed","timestamp":"2026-03-01T12:00:00Z"}`,
		`{"message_id":3,"status":"received","timestamp":"2026-03-01T12:00:00.123+01:00","detail":"queued"}`,
		`{"external_ref":"job-17","status":"rejected","reason":"unknown article","timestamp":"2026-03-01T12:00:00Z"}`,
		`{"external_ref":"job 17","status":"Rejected","timestamp":"now"}`,
		`{"delivery_id":1,"message_id":2,"status":"processed","timestamp":"2026-03-01T12:00:00Z"}`,
		`{"delivery_id":-1,"status":"x","timestamp":"2026-03-01T12:00:00Z","extra":true}`,
		`{"status":"failed","timestamp":"2026-03-01T12:00:00Z","reason":" \n "}`,
		`[]`, ``, `{"delivery_id":1}{}`, `{"delivery_id":"1"}`, `{"reason":"\ud800"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		cb, err := decodeCallback(raw)
		if err != nil {
			fes, only := persistence.AllFieldErrors(err)
			if !only || len(fes) == 0 {
				t.Fatalf("error %v is not field errors", err)
			}
			for _, fe := range fes {
				if fe.Field == "" || fe.Message == "" {
					t.Fatalf("field error without field or message: %+v", fe)
				}
			}
			var fe *persistence.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("errors.As finds no field error in %v", err)
			}
			return
		}
		named := 0
		for _, set := range []bool{cb.DeliveryID > 0, cb.MessageID > 0, cb.ExternalRef != ""} {
			if set {
				named++
			}
		}
		if named != 1 {
			t.Fatalf("callback names its delivery %d ways: %+v", named, cb)
		}
		if _, err := persistence.ParseDownstreamStatus(cb.Status); err != nil {
			t.Fatalf("status %q: %v", cb.Status, err)
		}
		if cb.ExternalRef != "" && persistence.CheckExternalRef(cb.ExternalRef) != nil {
			t.Fatalf("external_ref %q", cb.ExternalRef)
		}
		if persistence.SanitizeReason(cb.Reason) != cb.Reason || persistence.SanitizeReason(cb.Detail) != cb.Detail {
			t.Fatalf("reason or detail not as the history keeps it: %+v", cb)
		}
		if persistence.DownstreamFailure(cb.Status) && cb.Reason == "" {
			t.Fatalf("failure without a reason: %+v", cb)
		}
		if cb.ReportedAt.IsZero() || cb.ReportedAt.Location() != time.UTC {
			t.Fatalf("reported_at %v", cb.ReportedAt)
		}
	})
}
