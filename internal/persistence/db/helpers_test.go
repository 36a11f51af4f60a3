package db_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
)

// Names the fixture creates.
const (
	local  = persistence.PartyName("local")
	acme   = persistence.PartyName("acme")
	beta   = persistence.PartyName("beta")
	poller = persistence.InstanceName("poller")
	writer = persistence.InstanceName("writer")
	poster = persistence.InstanceName("poster")
	spare  = persistence.InstanceName("spare")
)

// fixture creates the organization local, the partners acme and beta, the source poller
// and the targets writer, poster and spare.
func fixture(t testing.TB, s *db.Store) {
	t.Helper()
	ctx := context.Background()
	for _, p := range []persistence.Party{
		{Kind: persistence.PartyOrganization, Name: local},
		{Kind: persistence.PartyPartner, Name: acme, DisplayName: "ACME Corp"},
		{Kind: persistence.PartyPartner, Name: beta},
	} {
		must1[persistence.Party](t)(s.CreateParty(ctx, p))
	}
	for _, c := range []persistence.PluginConfig{
		{Name: poller, Type: persistence.PluginFilePoller, Enabled: true},
		{Name: writer, Type: persistence.PluginFileWriter, Enabled: true},
		{Name: poster, Type: persistence.PluginHTTPPoster, Enabled: true},
		{Name: spare, Type: persistence.PluginFileWriter},
	} {
		must1[persistence.PluginConfig](t)(s.CreatePluginConfig(ctx, c))
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// must1 checks the error of a two-result call: must1(t)(f()).
func must1[T any](t testing.TB) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func wantErr(t testing.TB, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error = %v, want %v", err, target)
	}
}

func wantField(t testing.TB, err error, field string) {
	t.Helper()
	var fe *persistence.FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("error = %v, want a FieldError for %s", err, field)
	}
	if fe.Field != field {
		t.Fatalf("FieldError for %q (%v), want %q", fe.Field, fe, field)
	}
}

func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// newMessage builds a valid message from acme to local via poller, dispatched to
// targets when dispatch is set.
func newMessage(id int64, dispatch bool, targets ...persistence.InstanceName) persistence.NewMessage {
	body := fmt.Sprintf("document %d", id)
	return persistence.NewMessage{
		Message: persistence.Message{
			ID:               id,
			From:             acme,
			To:               local,
			Source:           poller,
			OriginalFileName: persistence.FileName(fmt.Sprintf("order-%d.edi", id)),
			Size:             int64(len(body)),
			SHA256:           hashOf(body),
			CorrelationID:    fmt.Sprintf("corr-%d", id),
			OriginEventID:    fmt.Sprintf("event-%d", id),
		},
		Payloads: []persistence.Payload{{
			Stage:  persistence.PayloadUnpacked,
			Key:    fmt.Sprintf("messages/%d/unpacked", id),
			Size:   int64(len(body)),
			SHA256: hashOf(body),
		}},
		Dispatch: dispatch,
		Targets:  targets,
	}
}

// insert allocates ids and inserts n messages dispatched to targets.
func insert(t testing.TB, s *db.Store, n int, targets ...persistence.InstanceName) []persistence.Message {
	t.Helper()
	ctx := context.Background()
	first := must1[int64](t)(s.AllocateMessageIDs(ctx, n))
	batch := make([]persistence.NewMessage, n)
	for i := range batch {
		batch[i] = newMessage(first+int64(i), true, targets...)
	}
	return must1[[]persistence.Message](t)(s.InsertMessages(ctx, batch))
}

// claimAll claims every claimable delivery of target at now.
func claimAll(t testing.TB, s *db.Store, target persistence.InstanceName, now time.Time) []persistence.Claim {
	t.Helper()
	return must1[[]persistence.Claim](t)(s.ClaimDeliveries(context.Background(), target, 1000, time.Minute, now))
}

func complete(t testing.TB, s *db.Store, cs ...persistence.Completion) []error {
	t.Helper()
	return must1[[]error](t)(s.CompleteDeliveries(context.Background(), cs))
}

func delivery(t testing.TB, s *db.Store, id int64) persistence.Delivery {
	t.Helper()
	return must1[persistence.Delivery](t)(s.GetDelivery(context.Background(), id))
}

func message(t testing.TB, s *db.Store, id int64) persistence.Message {
	t.Helper()
	return must1[persistence.Message](t)(s.GetMessage(context.Background(), id))
}

func deliveriesOf(t testing.TB, s *db.Store, messageID int64) []persistence.Delivery {
	t.Helper()
	return must1[[]persistence.Delivery](t)(s.ListDeliveries(context.Background(), messageID))
}

func history(t testing.TB, s *db.Store, messageID int64) []persistence.HistoryEntry {
	t.Helper()
	return must1[[]persistence.HistoryEntry](t)(s.ListHistory(context.Background(), messageID))
}

// kinds summarizes history lines as "kind" or "kind from→to".
func kinds(h []persistence.HistoryEntry) []string {
	out := make([]string, len(h))
	for i, e := range h {
		out[i] = string(e.Kind)
		if e.FromState != "" || e.ToState != "" {
			out[i] += " " + e.FromState + "→" + e.ToState
		}
	}
	return out
}

func wantState(t testing.TB, s *db.Store, id int64, want persistence.DeliveryState) persistence.Delivery {
	t.Helper()
	d := delivery(t, s, id)
	if d.State != want {
		t.Fatalf("delivery %d is %s, want %s", id, d.State, want)
	}
	return d
}

func wantStatus(t testing.TB, s *db.Store, id int64, stage persistence.MessageStage, status persistence.MessageStatus) {
	t.Helper()
	m := message(t, s, id)
	if m.Stage != stage || m.Status != status {
		t.Fatalf("message %d is %s/%s, want %s/%s", id, m.Stage, m.Status, stage, status)
	}
}

// checkInvariants holds every message's stored status and stage to the derivation from
// its deliveries, and its last status_changed line to its status.
func checkInvariants(t testing.TB, s *db.Store) {
	t.Helper()
	ctx := context.Background()
	for offset := 0; ; offset += 1000 {
		msgs, total := must2(t)(s.ListMessages(ctx, persistence.MessageFilter{ListOptions: persistence.ListOptions{Limit: 1000, Offset: offset}}))
		for _, m := range msgs {
			ds := deliveriesOf(t, s, m.ID)
			states := make([]persistence.DeliveryState, len(ds))
			for i, d := range ds {
				states[i] = d.State
				if (d.ClaimToken != "") != (d.State == persistence.DeliveryDelivering) ||
					(d.LeaseUntil != nil) != (d.State == persistence.DeliveryDelivering) {
					t.Errorf("delivery %d is %s with token %q and lease %v", d.ID, d.State, d.ClaimToken, d.LeaseUntil)
				}
				if (d.AckDeadline != nil) != (d.State == persistence.DeliveryAwaitingAck) {
					t.Errorf("delivery %d is %s with ack deadline %v", d.ID, d.State, d.AckDeadline)
				}
			}
			if got := persistence.DeriveStage(m.Stage, states); got != m.Stage {
				t.Errorf("message %d: stored stage %s, derived %s from %v", m.ID, m.Stage, got, states)
			}
			if got := persistence.DeriveStatus(m.Stage, m.Refusal, states); got != m.Status {
				t.Errorf("message %d: stored status %s, derived %s from %v", m.ID, m.Status, got, states)
			}
			h := history(t, s, m.ID)
			last := persistence.StatusReceived
			for _, e := range h {
				if e.Kind == persistence.HistoryStatusChanged {
					if e.FromState != string(last) {
						t.Errorf("message %d: status_changed from %s, but the status was %s", m.ID, e.FromState, last)
					}
					last = persistence.MessageStatus(e.ToState)
				}
			}
			if last != m.Status {
				t.Errorf("message %d: history ends at status %s, stored %s", m.ID, last, m.Status)
			}
		}
		if offset+len(msgs) >= total {
			return
		}
	}
}

func must2(t testing.TB) func([]persistence.Message, int, error) ([]persistence.Message, int) {
	return func(m []persistence.Message, n int, err error) ([]persistence.Message, int) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return m, n
	}
}

func ids[T any](xs []T, id func(T) int64) []int64 {
	out := make([]int64, len(xs))
	for i, x := range xs {
		out[i] = id(x)
	}
	return out
}

func claimIDs(cs []persistence.Claim) []int64 {
	return ids(cs, func(c persistence.Claim) int64 { return c.Delivery.ID })
}

func deliveryIDs(ds []persistence.Delivery) []int64 {
	return ids(ds, func(d persistence.Delivery) int64 { return d.ID })
}

func sorted(xs []int64) []int64 {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	return xs
}

// forEach runs fn against every available database with the fixture loaded, in parallel.
func forEach(t *testing.T, fn func(t *testing.T, s *db.Store)) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		fixture(t, s)
		fn(t, s)
	})
}
