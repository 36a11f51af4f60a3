package api

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"slices"
	"testing"

	"wharf/internal/msgexport"
)

func TestMessagesCSV(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		b.seed()
		b.must(201, "POST", "/api/v1/partners", `{"name":"beta"}`)
		out := b.sendTo(t, "inbox", "local", "acme", "=HYPERLINK.edi", "x")
		in := b.sendTo(t, "inbox", "acme", "local", "order.edi", "y")
		other := b.sendTo(t, "inbox", "local", "beta", "b.edi", "z")

		export := func(query string, opts ...reqOpt) [][]string {
			t.Helper()
			r := b.do("GET", "/api/v1/messages"+query, "", opts...)
			if r.status != 200 {
				t.Fatalf("GET %s = %d %s", query, r.status, r.body)
			}
			if ct := r.header.Get("Content-Type"); ct != "text/csv; charset=utf-8" {
				t.Fatalf("Content-Type = %q", ct)
			}
			if r.header.Get(msgexport.HeaderMaxRows) != fmt.Sprint(msgexport.MaxRows) {
				t.Errorf("the export does not state its bound: %v", r.header)
			}
			rows, err := csv.NewReader(bytes.NewReader(r.body)).ReadAll()
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			var got []string
			for _, row := range rows[1:] {
				got = append(got, row[0]+" "+row[2]+" "+row[7])
			}
			return append([][]string{rows[0]}, got)
		}
		row := func(id int64, dir, file string) string { return fmt.Sprintf("%d %s %s", id, dir, file) }

		for _, tc := range []struct {
			name  string
			query string
			opts  []reqOpt
			want  []string
		}{
			{"format=csv", "?format=csv", nil, []string{row(other.ID, "outbound", "b.edi"), row(in.ID, "inbound", "order.edi"),
				row(out.ID, "outbound", "'=HYPERLINK.edi")}},
			{"Accept", "", []reqOpt{withHeader("Accept", "text/html;q=0.9, text/csv")}, []string{row(other.ID, "outbound", "b.edi"),
				row(in.ID, "inbound", "order.edi"), row(out.ID, "outbound", "'=HYPERLINK.edi")}},
			{"partner", "?format=csv&partner=acme", nil, []string{row(in.ID, "inbound", "order.edi"), row(out.ID, "outbound", "'=HYPERLINK.edi")}},
			{"direction", "?format=csv&direction=inbound", nil, []string{row(in.ID, "inbound", "order.edi")}},
			{"paging ignored", "?format=csv&limit=1&offset=1&to=beta", nil, []string{row(other.ID, "outbound", "b.edi")}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				rows := export(tc.query, tc.opts...)
				if !slices.Equal(rows[0], msgexport.Columns) {
					t.Errorf("header = %v", rows[0])
				}
				if !slices.Equal(rows[1], tc.want) {
					t.Errorf("rows = %q, want %q", rows[1], tc.want)
				}
			})
		}

		if r := b.do("GET", "/api/v1/messages?format=xml", ""); r.status != 400 || r.errorOf(t).Details["format"] == nil {
			t.Errorf("format=xml = %d %s", r.status, r.body)
		}
		if r := b.do("GET", "/api/v1/messages?format=csv&direction=up", ""); r.status != 400 {
			t.Errorf("direction=up = %d %s", r.status, r.body)
		}
		var list struct {
			Messages []struct{ ID int64 } `json:"messages"`
		}
		b.must(200, "GET", "/api/v1/messages?partner=beta", "").json(t, &list)
		if len(list.Messages) != 1 || list.Messages[0].ID != other.ID {
			t.Errorf("JSON list by partner = %+v", list.Messages)
		}
	})
}
