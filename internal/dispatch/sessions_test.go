package dispatch_test

import (
	"context"
	"strings"
	"testing"

	"wharf/internal/module"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
)

// Ingest keys the session of each delivery of an ordered route: by the route's
// session_by metadata value, else the parties (said in the delivery's history); an
// unordered route's deliveries have none; bad metadata refuses the item alone.
func TestIngestKeysSessions(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		d, _ := newDispatcher(t, s)
		for _, c := range []persistence.PluginConfig{
			{Name: "in", Type: persistence.PluginFilePoller, Enabled: true},
			{Name: "by_order", Type: persistence.PluginHTTPPoster, Enabled: true},
			{Name: "by_parties", Type: persistence.PluginFileWriter, Enabled: true},
			{Name: "plain", Type: persistence.PluginFileWriter, Enabled: true},
		} {
			if _, err := s.CreatePluginConfig(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		for _, r := range []persistence.Route{
			{Source: "in", From: "*", To: "*", Target: "by_order", Ordered: true, SessionBy: "order"},
			{Source: "in", From: "*", To: "*", Target: "by_parties", Ordered: true},
			{Source: "in", From: "*", To: "*", Target: "plain"},
		} {
			if _, err := s.CreateRoute(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		item := func(meta map[string]string) module.Incoming {
			return module.Incoming{Source: "in", From: "acme", To: "local", FileName: "a.edi", Body: strings.NewReader("x"), Metadata: meta}
		}
		res, err := d.Ingest(ctx, []module.Incoming{
			item(map[string]string{"Order": "17"}),
			item(nil),
			item(map[string]string{"order": "a\x00b"}),
		})
		if err != nil {
			t.Fatal(err)
		}
		if res[0].Err != nil || res[1].Err != nil {
			t.Fatalf("results = %v, %v", res[0].Err, res[1].Err)
		}
		if res[2].Err == nil || !strings.Contains(res[2].Err.Error(), "metadata.order") {
			t.Fatalf("bad metadata: %v", res[2].Err)
		}
		keys := func(id int64) map[persistence.InstanceName]string {
			ds, err := s.ListDeliveries(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			out := map[persistence.InstanceName]string{}
			for _, x := range ds {
				out[x.Target] = x.SessionKey
			}
			return out
		}
		for i, want := range []map[persistence.InstanceName]string{
			{"by_order": "by_order|order=17", "by_parties": "by_parties|acme→local", "plain": ""},
			{"by_order": "by_order|acme→local", "by_parties": "by_parties|acme→local", "plain": ""},
		} {
			got := keys(res[i].Message.ID)
			for tg, k := range want {
				if got[tg] != k {
					t.Errorf("message %d: session of %s = %q, want %q", i, tg, got[tg], k)
				}
			}
		}
		if m, _ := s.GetMessage(ctx, res[0].Message.ID); m.Metadata["order"] != "17" {
			t.Fatalf("metadata = %v", m.Metadata)
		}
		h, err := s.ListHistory(ctx, res[1].Message.ID)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, e := range h {
			if e.DeliveryID != nil && strings.Contains(e.Reason, `no metadata "order": default session of acme→local`) {
				found = true
			}
		}
		if !found {
			t.Fatalf("no history line says the message fell into the default session: %+v", h)
		}
	})
}
