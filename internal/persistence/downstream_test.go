package persistence

import (
	"testing"
	"time"
)

func TestDownstreamStatus(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	line := func(status, actor string, reportedMin int, reason string) HistoryEntry {
		at := t0.Add(time.Duration(reportedMin) * time.Minute)
		return HistoryEntry{Kind: HistoryDownstreamStatus, ToState: status, Actor: actor, Reason: reason, ReportedAt: &at, At: t0.Add(time.Hour)}
	}
	other := HistoryEntry{Kind: HistoryDeliveryChanged, FromState: "queued", ToState: "delivering", At: t0}
	cb := "callback:erp"
	for _, c := range []struct {
		name       string
		lines      []HistoryEntry
		want       string
		wantReason string
		wantFinal  bool
		none       bool
	}{
		{name: "no downstream lines", lines: []HistoryEntry{other}, none: true},
		{name: "one intermediate", lines: []HistoryEntry{other, line("received", cb, 1, "")}, want: "received"},
		{name: "intermediates in order", lines: []HistoryEntry{line("received", cb, 1, ""), line("validated", cb, 2, "")}, want: "validated"},
		{name: "intermediates out of order: latest reporter time wins",
			lines: []HistoryEntry{line("validated", cb, 2, ""), line("received", cb, 1, "")}, want: "validated"},
		{name: "terminal before intermediate", lines: []HistoryEntry{line("processed", cb, 3, ""), line("received", cb, 1, "")},
			want: "processed", wantFinal: true},
		{name: "terminal wins over a later-reported intermediate", lines: []HistoryEntry{line("rejected", cb, 1, "bad vat"), line("queued-for-erp", cb, 9, "")},
			want: "rejected", wantReason: "bad vat", wantFinal: true},
		{name: "first terminal stands: failure first", lines: []HistoryEntry{line("rejected", cb, 5, "bad vat"), line("processed", cb, 9, "")},
			want: "rejected", wantReason: "bad vat", wantFinal: true},
		{name: "first terminal stands: success first", lines: []HistoryEntry{line("processed", "mdn", 1, ""), line("failed", "mdn", 2, "late")},
			want: "processed", wantFinal: true},
		{name: "equal reporter times: the later arrival", lines: []HistoryEntry{line("received", cb, 1, ""), line("parsed", cb, 1, "")}, want: "parsed"},
		{name: "without a reporter time ours counts", lines: []HistoryEntry{
			{Kind: HistoryDownstreamStatus, ToState: "received", Actor: cb, At: t0.Add(10 * time.Minute)},
			line("parsed", cb, 5, "")}, want: "received"},
		{name: "warning is terminal", lines: []HistoryEntry{line("processed_with_warning", "mdn", 1, "warning: duplicate"), line("received", cb, 2, "")},
			want: "processed_with_warning", wantReason: "warning: duplicate", wantFinal: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := DownstreamStatus(c.lines)
			if ok == c.none {
				t.Fatalf("ok = %v, want %v", ok, !c.none)
			}
			if c.none {
				return
			}
			if got.Status != c.want || got.Reason != c.wantReason || got.Final != c.wantFinal {
				t.Fatalf("got %+v, want status %q reason %q final %v", got, c.want, c.wantReason, c.wantFinal)
			}
		})
	}
}

func TestDownstreamByDelivery(t *testing.T) {
	one, two := int64(1), int64(2)
	lines := []HistoryEntry{
		{Kind: HistoryDownstreamStatus, DeliveryID: &one, ToState: "received", Actor: "callback:a"},
		{Kind: HistoryDownstreamStatus, DeliveryID: &two, ToState: "failed", Actor: "mdn", Reason: "decryption-failed"},
		{Kind: HistoryDeliveryChanged, DeliveryID: &one, ToState: "delivered"},
	}
	ds := []Delivery{{ID: 1}, {ID: 2}, {ID: 3}}
	AttachDownstream(ds, lines)
	if ds[0].Downstream == nil || ds[0].Downstream.Status != "received" || ds[0].Downstream.Final {
		t.Fatalf("delivery 1: %+v", ds[0].Downstream)
	}
	if ds[1].Downstream == nil || ds[1].Downstream.Status != "failed" || !ds[1].Downstream.Final {
		t.Fatalf("delivery 2: %+v", ds[1].Downstream)
	}
	if ds[2].Downstream != nil {
		t.Fatalf("delivery 3 has %+v", ds[2].Downstream)
	}
}

func TestParseDownstreamStatus(t *testing.T) {
	for _, c := range []struct {
		in string
		ok bool
	}{
		{"processed", true}, {"in-erp_2", true}, {"", false}, {"Processed", false}, {"a b", false},
		{string(make([]byte, 65)), false},
	} {
		if _, err := ParseDownstreamStatus(c.in); (err == nil) != c.ok {
			t.Errorf("ParseDownstreamStatus(%q) = %v, want ok %v", c.in, err, c.ok)
		}
	}
}
