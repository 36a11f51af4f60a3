package events

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"wharf/internal/persistence"
)

func ids(rows []Row) []int64 {
	out := []int64{}
	for _, r := range rows {
		out = append(out, r.ID)
	}
	return out
}

func rowsOf(ids ...int64) []Row {
	var out []Row
	for _, id := range ids {
		out = append(out, Row{ID: id})
	}
	return out
}

// A reader passes on rows up to a missing id and waits for it up to the grace; after
// that it takes the id's transaction for rolled back and moves on.
func TestContiguous(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	const grace = 10 * time.Second
	tests := []struct {
		name      string
		last      int64
		rows      []Row
		gapSince  time.Time
		wantIDs   []int64
		wantSince time.Time
	}{
		{"nothing new", 5, nil, time.Time{}, []int64{}, time.Time{}},
		{"contiguous", 5, rowsOf(6, 7, 8), time.Time{}, []int64{6, 7, 8}, time.Time{}},
		{"a fresh cursor takes the first row whatever its id", 0, rowsOf(40, 41), time.Time{}, []int64{40, 41}, time.Time{}},
		{"a gap is first seen", 5, rowsOf(6, 8, 9), time.Time{}, []int64{6}, now},
		{"a gap right after the cursor", 5, rowsOf(7, 8), time.Time{}, []int64{}, now},
		{"a gap still within the grace", 6, rowsOf(8, 9), now.Add(-grace + time.Second), []int64{}, now.Add(-grace + time.Second)},
		{"a gap past the grace is skipped", 6, rowsOf(8, 9), now.Add(-grace), []int64{8, 9}, time.Time{}},
		{"the missing row arrived", 6, rowsOf(7, 8, 9), now.Add(-time.Second), []int64{7, 8, 9}, time.Time{}},
		{"a second gap after a skipped one", 6, rowsOf(8, 10), now.Add(-time.Minute), []int64{8}, now},
		{"nothing new keeps the gap's time", 6, nil, now.Add(-time.Second), []int64{}, now.Add(-time.Second)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			take, since := Contiguous(tc.last, tc.rows, tc.gapSince, now, grace)
			if got := ids(take); !slices.Equal(got, tc.wantIDs) || !since.Equal(tc.wantSince) {
				t.Fatalf("Contiguous = %v, %v; want %v, %v", got, since, tc.wantIDs, tc.wantSince)
			}
		})
	}
}

func TestFromRow(t *testing.T) {
	d := int64(9)
	tests := []struct {
		name    string
		row     Row
		want    Type
		blocked bool
	}{
		{"received", Row{Kind: persistence.HistoryReceived}, MessageReceived, false},
		{"dispatched", Row{Kind: persistence.HistoryDispatched}, MessageDispatched, false},
		{"delivered", Row{Kind: persistence.HistoryStatusChanged, FromState: "in_progress", ToState: "delivered"}, MessageDelivered, false},
		{"error is failed", Row{Kind: persistence.HistoryStatusChanged, ToState: "error"}, MessageFailed, false},
		{"refused", Row{Kind: persistence.HistoryStatusChanged, ToState: "refused"}, MessageRefused, false},
		{"another status", Row{Kind: persistence.HistoryStatusChanged, ToState: "retrying"}, MessageStatusChanged, false},
		{"delivery state", Row{Kind: persistence.HistoryDeliveryChanged, DeliveryID: &d, ToState: "retrying"}, DeliveryRetrying, false},
		{"failure of an unordered delivery", Row{Kind: persistence.HistoryDeliveryChanged, DeliveryID: &d, ToState: "failed"}, DeliveryFailed, false},
		{"failure blocking a session", Row{Kind: persistence.HistoryDeliveryChanged, DeliveryID: &d, ToState: "failed", SessionKey: "s"}, DeliveryFailed, true},
		{"redeliver", Row{Kind: persistence.HistoryRedeliverRequested, DeliveryID: &d}, DeliveryRedeliver, false},
		{"receipt", Row{Kind: persistence.HistoryReceiptReceived}, MessageReceiptReceived, false},
		{"a kind added later", Row{Kind: "erased"}, Type("message.erased"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := FromRow(tc.row)
			if e.Type != tc.want || e.Data.SessionBlocked != tc.blocked {
				t.Fatalf("FromRow = %s (session blocked %v), want %s (%v)", e.Type, e.Data.SessionBlocked, tc.want, tc.blocked)
			}
		})
	}
}

// The body carries ids, parties, states and correlation, and nothing of the history
// line's reason (which may name a file).
func TestBodyLeavesReasonOut(t *testing.T) {
	d := int64(3)
	e := FromRow(Row{ID: 17, MessageID: 4, DeliveryID: &d, At: time.Unix(1700000000, 0), Kind: persistence.HistoryDeliveryChanged,
		FromState: "delivering", ToState: "delivered", Actor: "system", Target: "erp", From: "acme", To: "local",
		Source: "file_poller_default", CorrelationID: "c-1", OriginEventID: "o-1"})
	var got map[string]any
	if err := json.Unmarshal(e.Body(), &got); err != nil {
		t.Fatal(err)
	}
	want := `{"data":{"actor":"system","correlation_id":"c-1","delivery_id":3,"event_id":17,"from":"acme","from_state":"delivering","message_id":4,"origin_event_id":"o-1","source":"file_poller_default","target":"erp","to":"local","to_state":"delivered"},"timestamp":"2023-11-14T22:13:20Z","type":"delivery.delivered"}`
	b, _ := json.Marshal(got)
	if string(b) != want {
		t.Fatalf("body = %s\nwant   %s", b, want)
	}
}

func TestPatterns(t *testing.T) {
	failed := FromRow(Row{Kind: persistence.HistoryDeliveryChanged, ToState: "failed", SessionKey: "k", From: "acme", To: "local"})
	received := FromRow(Row{Kind: persistence.HistoryReceived, From: "globex", To: "local"})
	tests := []struct {
		name     string
		patterns string
		party    persistence.PartyName
		e        Event
		want     bool
	}{
		{"no patterns select all", "", "", received, true},
		{"exact type", "message.received", "", received, true},
		{"other type", "message.delivered", "", received, false},
		{"message wildcard", "message.*", "", received, true},
		{"delivery wildcard", "delivery.*", "", received, false},
		{"all", "*", "", failed, true},
		{"session.blocked selects a blocking failure", "session.blocked", "", failed, true},
		{"session.blocked leaves others out", "session.blocked", "", received, false},
		{"one of several", "delivery.delivered, message.received", "", received, true},
		{"party from", "*", "acme", failed, true},
		{"party to", "*", "local", received, true},
		{"another party", "*", "acme", received, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps, err := ParsePatterns(tc.patterns)
			if err != nil {
				t.Fatal(err)
			}
			if got := Selects(ps, tc.party, tc.e); got != tc.want {
				t.Fatalf("Selects = %v, want %v", got, tc.want)
			}
		})
	}
	for _, bad := range []string{"message", "message.nope", "delivery.**", "session.*", "MESSAGE.received"} {
		if _, err := ParsePatterns(bad); err == nil || !strings.Contains(err.Error(), "unknown event type") {
			t.Errorf("ParsePatterns(%q) = %v, want it refused", bad, err)
		}
	}
}
