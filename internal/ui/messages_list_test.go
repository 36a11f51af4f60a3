package ui

import (
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"wharf/internal/module"
	"wharf/internal/msgexport"
	"wharf/internal/persistence"
)

// refIndex is a module's index held in memory: message id to its protocol identity.
type refIndex map[int64]string

func (x refIndex) FindMessages(_ context.Context, ref string) ([]int64, error) {
	var out []int64
	for id, r := range x {
		if r == ref {
			out = append(out, id)
		}
	}
	return out, nil
}

func (x refIndex) MessageRefs(_ context.Context, ids []int64) (map[int64]module.MessageRef, error) {
	out := map[int64]module.MessageRef{}
	for _, id := range ids {
		if r, ok := x[id]; ok {
			out[id] = module.MessageRef{Ref: r, Receipt: "signed, verified"}
		}
	}
	return out, nil
}

// sent stores one message from local to partner, changed by edit before it is stored.
func (b *messagesBundle) sent(t *testing.T, partner persistence.PartyName, edit func(*persistence.Message)) persistence.Message {
	t.Helper()
	ctx := context.Background()
	id, err := b.store.AllocateMessageIDs(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	m := persistence.Message{ID: id, From: localParty, To: partner, Source: pollerInst,
		OriginalFileName: persistence.FileName(fmt.Sprintf("invoice-%d.edi", id)), Size: 1,
		SHA256: strings.Repeat("0", 64), CorrelationID: fmt.Sprintf("corr-%d", id), OriginEventID: fmt.Sprintf("event-%d", id)}
	if edit != nil {
		edit(&m)
	}
	msgs, err := b.store.InsertMessages(ctx, []persistence.NewMessage{{Message: m, Dispatch: true}})
	if err != nil {
		t.Fatal(err)
	}
	return msgs[0]
}

func ids(msgs ...persistence.Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, fmt.Sprint(m.ID))
	}
	return out
}

func TestMessageListNewFilters(t *testing.T) {
	b := setupMessages(t)
	index := refIndex{}
	b.ui.indexes = []module.MessageIndex{index}
	c := b.signedIn(t)
	in := b.insert(t, 2, acmeParty, writerInst)
	out := []persistence.Message{b.sent(t, betaParty, nil)}
	index[out[0].ID] = "<abc@wharf>"
	day := in[0].CreatedAt.UTC().Format(filterDate)
	before := in[0].CreatedAt.UTC().AddDate(0, 0, -1).Format(filterDate)
	after := in[0].CreatedAt.UTC().AddDate(0, 0, 1).Format(filterDate)

	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"direction=inbound", ids(in[1], in[0])},
		{"direction=outbound", ids(out[0])},
		{"partner=beta", ids(out[0])},
		{"partner=acme", ids(in[1], in[0])},
		{"since=" + day + "&until=" + day, ids(out[0], in[1], in[0])},
		{"until=" + before, nil},
		{"since=" + after, nil},
		{"ref=" + url.QueryEscape("<abc@wharf>"), ids(out[0])},
		{"ref=nothing", nil},
	} {
		t.Run(tc.query, func(t *testing.T) {
			r := c.get(t, "/ui/messages?"+tc.query)
			if r.status != http.StatusOK {
				t.Fatalf("GET = %d\n%s", r.status, r.body)
			}
			if got := listedIDs(r.body); !slices.Equal(got, tc.want) {
				t.Errorf("rows = %v, want %v", got, tc.want)
			}
		})
	}

	r := c.get(t, "/ui/messages")
	for _, want := range []string{"&lt;abc@wharf&gt;", "signed, verified", `<a href="/ui/partners/beta">beta</a>`,
		`<td class="col-minor">outbound</td>`, `<td class="col-minor">inbound</td>`, `<option value="beta">beta</option>`} {
		if !strings.Contains(r.body, want) {
			t.Errorf("list lacks %q", want)
		}
	}

	for _, q := range []string{"direction=sideways", "partner=ACME", "since=31.01.2026", "until=x",
		"since=" + after + "&until=" + day, "size=30", "size=x"} {
		t.Run(q, func(t *testing.T) {
			r := c.get(t, "/ui/messages?"+q)
			if r.status != http.StatusBadRequest || !strings.Contains(r.body, `class="field-error"`) {
				t.Errorf("GET ?%s = %d, want 400 with the form's error", q, r.status)
			}
		})
	}
}

func TestMessageListPageSizeAndNumbers(t *testing.T) {
	b := setupMessages(t)
	c := b.signedIn(t)
	b.insert(t, 60, acmeParty, writerInst)

	r := c.get(t, "/ui/messages?size=25&offset=25")
	if n := len(listedIDs(r.body)); n != 25 {
		t.Fatalf("page has %d rows, want 25", n)
	}
	pages := regexp.MustCompile(`href="([^"]+)"( aria-current="page")? aria-label="Page (\d+)"`).FindAllStringSubmatch(r.body, -1)
	var got []string
	for _, p := range pages {
		got = append(got, p[3]+p[2]+" "+p[1])
	}
	want := []string{
		"1 /ui/messages?size=25",
		`2 aria-current="page" /ui/messages?offset=25&amp;size=25`,
		"3 /ui/messages?offset=50&amp;size=25",
	}
	if !slices.Equal(got, want) {
		t.Errorf("page links = %q, want %q", got, want)
	}
	if !strings.Contains(r.body, `<option value="25" selected>`) {
		t.Error("the page size is not kept selected")
	}
	if r := c.get(t, "/ui/messages?size=200"); len(listedIDs(r.body)) != 60 || strings.Contains(r.body, `aria-label="Page `) {
		t.Error("a page of 200 does not hold all 60 messages on one page")
	}
}

func TestMessagesCSVExport(t *testing.T) {
	b := setupMessages(t)
	c := b.signedIn(t)
	in := b.insert(t, 2, acmeParty, writerInst)
	out := []persistence.Message{b.sent(t, betaParty, func(m *persistence.Message) {
		m.OriginalFileName, m.CorrelationID = "=SUM(A1:A9)", "+1, \"two\""
	})}

	export := func(query string) [][]string {
		t.Helper()
		r := c.get(t, "/ui/messages.csv"+query)
		if r.status != http.StatusOK {
			t.Fatalf("GET csv%s = %d\n%s", query, r.status, r.body)
		}
		rows, err := csv.NewReader(strings.NewReader(r.body)).ReadAll()
		if err != nil {
			t.Fatalf("parse export: %v\n%s", err, r.body)
		}
		if !slices.Equal(rows[0], msgexport.Columns) {
			t.Fatalf("header = %v", rows[0])
		}
		return rows[1:]
	}
	column := func(rows [][]string, i int) []string {
		var out []string
		for _, r := range rows {
			out = append(out, r[i])
		}
		return out
	}

	all := export("")
	if got := column(all, 0); !slices.Equal(got, ids(out[0], in[1], in[0])) {
		t.Errorf("ids = %v", got)
	}
	if got := column(all, 2); !slices.Equal(got, []string{"outbound", "inbound", "inbound"}) {
		t.Errorf("directions = %v", got)
	}
	first := all[0]
	if first[7] != "'=SUM(A1:A9)" || first[9] != "'+1, \"two\"" {
		t.Errorf("cells not guarded: file %q, correlation %q", first[7], first[9])
	}
	if got := column(export("?direction=outbound"), 0); !slices.Equal(got, ids(out[0])) {
		t.Errorf("outbound ids = %v", got)
	}
	if got := column(export("?partner=acme&size=25&offset=1"), 0); !slices.Equal(got, ids(in[1], in[0])) {
		t.Errorf("the export pages: ids = %v", got)
	}
	if r := c.get(t, "/ui/messages.csv?direction=sideways"); r.status != http.StatusBadRequest || !strings.Contains(r.body, "direction") {
		t.Errorf("bad filter = %d %s", r.status, r.body)
	}
	// The list links the export of the same filters.
	if r := c.get(t, "/ui/messages?partner=acme&size=25"); !strings.Contains(r.body, `href="/ui/messages.csv?partner=acme"`) {
		t.Error("the list does not link its export")
	}
}
