package persistence

import "testing"

func TestDeliveryStateFromHistory(t *testing.T) {
	changed := func(from, to string) HistoryEntry {
		return HistoryEntry{Kind: HistoryDeliveryChanged, FromState: from, ToState: to}
	}
	for _, tc := range []struct {
		name  string
		lines []HistoryEntry
		want  DeliveryState
	}{
		{"no lines: as made", nil, DeliveryQueued},
		{"made parked", []HistoryEntry{changed("", "parked")}, DeliveryParked},
		{"last line wins", []HistoryEntry{changed("queued", "delivering"), changed("delivering", "retrying"), changed("retrying", "delivering"), changed("delivering", "delivered")}, DeliveryDelivered},
		{"other kinds pass over", []HistoryEntry{changed("queued", "delivering"), {Kind: HistoryStatusChanged, ToState: "error"}, {Kind: HistoryRedeliverRequested}}, DeliveryDelivering},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := DeliveryStateFromHistory(tc.lines); got != tc.want {
				t.Fatalf("fold = %s, want %s", got, tc.want)
			}
		})
	}
}
