package delivery_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"wharf/internal/delivery"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
)

// runOne delivers one seeded message through a target built from result under opts, with
// the engine's clock fixed at now, and returns the delivery once it left delivering.
func runOne(t *testing.T, s *db.Store, now time.Time, opts delivery.TargetOptions, result func() delivery.Result) persistence.Delivery {
	t.Helper()
	msg := seedAt(t, s, "sink", 1, nil, now)[0]
	sig := &localSignals{}
	e := delivery.NewEngine(s, memPayloads{}, sig, slog.New(slog.DiscardHandler), delivery.Config{
		PollInterval: 50 * time.Millisecond, Now: func() time.Time { return now }})
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer e.Stop(context.Background())
	err := e.AddTarget("sink", deliverFunc(func(context.Context, delivery.Attempt) delivery.Result { return result() }), opts)
	if err != nil {
		t.Fatal(err)
	}
	sig.Wake([]persistence.InstanceName{"sink"})
	var d persistence.Delivery
	waitFor(t, "the outcome", func() bool {
		d = deliveryOf(t, s, msg.ID)
		return d.State != persistence.DeliveryQueued && d.State != persistence.DeliveryDelivering
	})
	return d
}

func lastHistoryReason(t *testing.T, s *db.Store, messageID int64) string {
	t.Helper()
	h, err := s.ListHistory(context.Background(), messageID)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Kind == persistence.HistoryDeliveryChanged {
			return h[i].Reason
		}
	}
	return ""
}

func TestEngineRecordsHandoffs(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		opts      delivery.TargetOptions
		result    delivery.Result
		state     persistence.DeliveryState
		deadline  time.Time
		ref       string
		reasonHas string
	}{
		{"target answers a handoff", delivery.TargetOptions{},
			delivery.Handoff(now.Add(4*time.Hour), "job-42", "accepted (HTTP 202)"),
			persistence.DeliveryAwaitingAck, now.Add(4 * time.Hour), "job-42", "accepted (HTTP 202)"},
		{"await_completion turns delivered into awaiting", delivery.TargetOptions{AwaitCompletion: delivery.Duration(2 * time.Hour)},
			delivery.DeliveredNote("written as acme/a.edi"),
			persistence.DeliveryAwaitingAck, now.Add(2 * time.Hour), "", "written as acme/a.edi"},
		{"await_completion leaves a failure failed", delivery.TargetOptions{AwaitCompletion: delivery.Duration(2 * time.Hour)},
			delivery.Permanent(delivery.ClassTransport, errors.New("disk full")),
			persistence.DeliveryFailed, time.Time{}, "", "disk full"},
		{"without await_completion delivered stays delivered", delivery.TargetOptions{},
			delivery.Delivered(), persistence.DeliveryDelivered, time.Time{}, "", "delivered"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
				d := runOne(t, s, now, tc.opts, func() delivery.Result { return tc.result })
				if d.State != tc.state || d.ExternalRef != tc.ref {
					t.Fatalf("delivery = %+v, want %s with reference %q", d, tc.state, tc.ref)
				}
				switch {
				case tc.deadline.IsZero() && d.AckDeadline != nil:
					t.Fatalf("deadline %v, want none", d.AckDeadline)
				case !tc.deadline.IsZero() && (d.AckDeadline == nil || !d.AckDeadline.Equal(tc.deadline)):
					t.Fatalf("deadline %v, want %v", d.AckDeadline, tc.deadline)
				}
				if got := lastHistoryReason(t, s, d.MessageID); !strings.Contains(got, tc.reasonHas) {
					t.Fatalf("history reason %q, want it to contain %q", got, tc.reasonHas)
				}
			})
		})
	}
}

func TestTargetOptionsAwaitCompletion(t *testing.T) {
	tests := []struct {
		value delivery.Duration
		ok    bool
	}{
		{0, true},
		{delivery.Duration(time.Minute), true},
		{delivery.Duration(delivery.MaxAwaitCompletion), true},
		{delivery.Duration(delivery.MaxAwaitCompletion + time.Second), false},
		{delivery.Duration(-time.Second), false},
	}
	for _, tc := range tests {
		err := delivery.CheckTargetOptions(delivery.TargetOptions{AwaitCompletion: tc.value})
		var fe *persistence.FieldError
		switch {
		case tc.ok && err != nil:
			t.Errorf("await_completion %v: %v", time.Duration(tc.value), err)
		case !tc.ok && (!errors.As(err, &fe) || fe.Field != "await_completion"):
			t.Errorf("await_completion %v: error %v, want a FieldError for await_completion", time.Duration(tc.value), err)
		}
	}
}
