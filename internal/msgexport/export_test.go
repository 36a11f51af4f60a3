package msgexport_test

import (
	"context"
	"encoding/csv"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	"wharf/internal/msgexport"
	"wharf/internal/persistence"
)

// slice pages a list held in memory as the store pages its table.
type slice []persistence.Message

func (s slice) ListMessages(_ context.Context, f persistence.MessageFilter) ([]persistence.Message, int, error) {
	var keep []persistence.Message
	for _, m := range s {
		if f.Until.IsZero() || m.CreatedAt.Before(f.Until) {
			keep = append(keep, m)
		}
	}
	lo := min(f.Offset, len(keep))
	return keep[lo:min(len(keep), lo+f.Limit)], len(keep), nil
}

func messages(n int) slice {
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	out := make(slice, n)
	for i := range out {
		out[i] = persistence.Message{ID: int64(n - i), From: "acme", To: "local", Source: "as2-in",
			Status: persistence.StatusDelivered, OriginalFileName: persistence.FileName("order-" + strconv.Itoa(n-i) + ".edi"),
			Size: 10, CreatedAt: base.Add(-time.Duration(i) * time.Second)}
	}
	return out
}

func export(t *testing.T, l msgexport.Lister) (*http.Response, [][]string) {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/messages.csv", nil)
	dir := func(m persistence.Message) persistence.Direction { return persistence.DirectionInbound }
	if err := msgexport.Send(rec, req, slog.New(slog.NewTextHandler(io.Discard, nil)), l, persistence.MessageFilter{}, dir); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(rec.Body).ReadAll()
	if err != nil {
		t.Fatalf("parse export: %v", err)
	}
	return rec.Result(), rows
}

func TestSendPagesEveryRow(t *testing.T) {
	all := messages(1203)
	res, rows := export(t, all)
	if ct := res.Header.Get("Content-Type"); ct != "text/csv; charset=utf-8" {
		t.Fatalf("Content-Type = %q", ct)
	}
	if !slices.Equal(rows[0], msgexport.Columns) {
		t.Fatalf("header = %v", rows[0])
	}
	if len(rows) != 1+len(all) {
		t.Fatalf("rows = %d, want %d", len(rows)-1, len(all))
	}
	for i, row := range rows[1:] {
		if row[0] != strconv.FormatInt(all[i].ID, 10) || row[2] != "inbound" {
			t.Fatalf("row %d = %v, want message %d inbound", i, row, all[i].ID)
		}
	}
	if res.Header.Get(msgexport.HeaderTruncated) != "false" || res.Header.Get(msgexport.HeaderTotal) != "1203" {
		t.Fatalf("headers = %v", res.Header)
	}
}

func TestSendStopsAtMaxRows(t *testing.T) {
	res, rows := export(t, messages(msgexport.MaxRows+7))
	if len(rows)-1 != msgexport.MaxRows {
		t.Fatalf("rows = %d, want %d", len(rows)-1, msgexport.MaxRows)
	}
	for name, want := range map[string]string{
		msgexport.HeaderMaxRows:   strconv.Itoa(msgexport.MaxRows),
		msgexport.HeaderTotal:     strconv.Itoa(msgexport.MaxRows + 7),
		msgexport.HeaderTruncated: "true",
	} {
		if got := res.Header.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
}

func TestSendQuotesAndGuardsCells(t *testing.T) {
	m := messages(1)
	m[0].OriginalFileName = `=HYPERLINK("x","a, b")`
	m[0].CorrelationID = "@SUM(A1)\nnext"
	_, rows := export(t, m)
	if got := rows[1][7]; got != `'=HYPERLINK("x","a, b")` {
		t.Errorf("file name cell = %q", got)
	}
	if got := rows[1][9]; got != "'@SUM(A1)\nnext" {
		t.Errorf("correlation cell = %q", got)
	}
}

func TestCell(t *testing.T) {
	for in, want := range map[string]string{
		"":          "",
		"order.edi": "order.edi",
		"=1+2":      "'=1+2",
		"+31 55":    "'+31 55",
		"-2":        "'-2",
		"@cmd":      "'@cmd",
		"\t=1":      "'\t=1",
		"\r=1":      "'\r=1",
		"a=b":       "a=b",
		"ünïcode=1": "ünïcode=1",
	} {
		if got := msgexport.Cell(in); got != want {
			t.Errorf("Cell(%q) = %q, want %q", in, got, want)
		}
	}
}
