package db_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
)

func TestOpenRefusesNewerSchema(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		must(t, db.Migrate(ctx, s)) // a second run finds nothing to do
		n := must1[int64](t)(db.QueryInt(ctx, s, `SELECT COUNT(*) FROM schema_version`))
		if n != 1 {
			t.Fatalf("schema_version has %d rows, want 1", n)
		}
		must(t, db.ExecRaw(ctx, s, `INSERT INTO schema_version (version, applied_at) VALUES (999, 'later')`))
		err := db.Migrate(ctx, s)
		if err == nil || !strings.Contains(err.Error(), "version 999") {
			t.Fatalf("migrate over a newer schema: %v, want a refusal naming version 999", err)
		}
	})
}

func TestOpenNeedsADatabase(t *testing.T) {
	if _, err := db.Open(context.Background(), db.Options{}); err == nil {
		t.Fatal("Open without URL or path succeeded")
	}
	if _, err := db.Open(context.Background(), db.Options{URL: "mysql://x"}); err == nil {
		t.Fatal("Open with a non-PostgreSQL URL succeeded")
	}
}

func TestParties(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		p := must1[persistence.Party](t)(s.GetParty(ctx, persistence.PartyPartner, acme))
		if p.DisplayName != "ACME Corp" || p.ID == 0 || p.CreatedAt.IsZero() {
			t.Fatalf("GetParty = %+v", p)
		}
		if b := must1[persistence.Party](t)(s.GetParty(ctx, persistence.PartyPartner, beta)); b.DisplayName != "beta" {
			t.Fatalf("display name defaults to %q, want the name", b.DisplayName)
		}

		_, err := s.CreateParty(ctx, persistence.Party{Kind: persistence.PartyPartner, Name: acme})
		wantErr(t, err, persistence.ErrConflict)
		if !strings.Contains(err.Error(), `partner "acme" already exists`) {
			t.Fatalf("conflict error %q does not name the partner", err)
		}
		// Names are unique per kind only.
		must1[persistence.Party](t)(s.CreateParty(ctx, persistence.Party{Kind: persistence.PartyOrganization, Name: acme}))

		_, err = s.GetParty(ctx, persistence.PartyPartner, "nobody")
		wantErr(t, err, persistence.ErrNotFound)
		if !strings.Contains(err.Error(), `partner "nobody"`) {
			t.Fatalf("not found error %q does not name the partner", err)
		}

		list, total, err := s.ListParties(ctx, persistence.PartyPartner, persistence.ListOptions{})
		must(t, err)
		if len(list) != 2 || total != 2 || list[0].Name != acme || list[1].Name != beta {
			t.Fatalf("ListParties(partner) = %v (total %d)", list, total)
		}
		page, total, err := s.ListParties(ctx, "", persistence.ListOptions{Limit: 2, Offset: 1})
		must(t, err)
		if len(page) != 2 || total != 4 {
			t.Fatalf("ListParties(all, limit 2 offset 1) = %d rows, total %d; want 2 of 4", len(page), total)
		}

		up := must1[persistence.Party](t)(s.UpdateParty(ctx, persistence.Party{Kind: persistence.PartyPartner, Name: acme, DisplayName: "Acme Inc."}))
		if up.DisplayName != "Acme Inc." || up.ID != p.ID || !up.CreatedAt.Equal(p.CreatedAt) {
			t.Fatalf("UpdateParty = %+v", up)
		}
		_, err = s.UpdateParty(ctx, persistence.Party{Kind: persistence.PartyPartner, Name: "nobody"})
		wantErr(t, err, persistence.ErrNotFound)

		must1[persistence.Route](t)(s.CreateRoute(ctx, persistence.Route{Source: poller, From: "beta", To: "*", Target: writer}))
		err = s.DeleteParty(ctx, persistence.PartyPartner, beta)
		wantErr(t, err, persistence.ErrInUse)
		must(t, s.DeleteParty(ctx, persistence.PartyOrganization, acme))
		wantErr(t, s.DeleteParty(ctx, persistence.PartyOrganization, acme), persistence.ErrNotFound)
		_, err = s.GetParty(ctx, persistence.PartyOrganization, acme)
		wantErr(t, err, persistence.ErrNotFound)
	})
}

func TestInvalidRecordsAreRefused(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		for _, tc := range []struct {
			name  string
			field string
			call  func() error
		}{
			{"party kind", "kind", func() error {
				_, err := s.CreateParty(ctx, persistence.Party{Kind: "customer", Name: "x"})
				return err
			}},
			{"party name", "name", func() error {
				_, err := s.CreateParty(ctx, persistence.Party{Kind: persistence.PartyPartner, Name: "ACME"})
				return err
			}},
			{"display name", "display_name", func() error {
				_, err := s.CreateParty(ctx, persistence.Party{Kind: persistence.PartyPartner, Name: "x", DisplayName: "a\nb"})
				return err
			}},
			{"plugin type", "type", func() error {
				_, err := s.CreatePluginConfig(ctx, persistence.PluginConfig{Name: "x", Type: "ftp"})
				return err
			}},
			{"plugin config", "config", func() error {
				_, err := s.CreatePluginConfig(ctx, persistence.PluginConfig{Name: "x", Type: persistence.PluginFileWriter, Config: json.RawMessage(`[1]`)})
				return err
			}},
			{"route pattern", "from", func() error {
				_, err := s.CreateRoute(ctx, persistence.Route{Source: poller, From: "A*", To: "*", Target: writer})
				return err
			}},
			{"message party", "messages[0].from", func() error {
				nm := newMessage(1, true, writer)
				nm.Message.From = "ACME"
				_, err := s.InsertMessages(ctx, []persistence.NewMessage{nm})
				return err
			}},
			{"message refusal", "messages[0].refusal", func() error {
				nm := newMessage(1, true)
				nm.Message.Refusal = "maybe"
				_, err := s.InsertMessages(ctx, []persistence.NewMessage{nm})
				return err
			}},
			{"file name", "messages[0].original_file_name", func() error {
				nm := newMessage(1, true, writer)
				nm.Message.OriginalFileName = "../etc/passwd"
				_, err := s.InsertMessages(ctx, []persistence.NewMessage{nm})
				return err
			}},
			{"payload stage", "messages[0].payloads[0].stage", func() error {
				nm := newMessage(1, true, writer)
				nm.Payloads[0].Stage = "raw"
				_, err := s.InsertMessages(ctx, []persistence.NewMessage{nm})
				return err
			}},
			{"target", "messages[1].targets[0]", func() error {
				_, err := s.InsertMessages(ctx, []persistence.NewMessage{newMessage(1, true, writer), newMessage(2, true, "Writer")})
				return err
			}},
			{"outcome", "kind", func() error {
				_, err := s.CompleteDeliveries(ctx, []persistence.Completion{{DeliveryID: 1, Token: "t", Kind: "maybe"}})
				return err
			}},
			{"token hash", "hash", func() error {
				_, err := s.CreateAPIToken(ctx, "ci", "not-a-hash")
				return err
			}},
		} {
			t.Run(tc.name, func(t *testing.T) { wantField(t, tc.call(), tc.field) })
		}
		// Nothing of the refused records was written.
		if _, total, _ := s.ListMessages(ctx, persistence.MessageFilter{}); total != 0 {
			t.Fatalf("%d messages written by refused inserts", total)
		}
		if _, total, _ := s.ListParties(ctx, "", persistence.ListOptions{}); total != 3 {
			t.Fatalf("%d parties after refused creates, want the fixture's 3", total)
		}
		if _, err := s.GetPluginConfig(ctx, "x"); err == nil {
			t.Fatal("refused plugin instance was written")
		}
	})
}

// The domain types validate in Value, so even a statement that skipped the checks cannot
// store a value the domain refuses.
func TestDomainValuesAreCheckedOnWrite(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		err := db.ExecRaw(ctx, s, `UPDATE deliveries SET state = ?`, persistence.DeliveryState("bogus"))
		if err == nil || !strings.Contains(err.Error(), "invalid delivery state") {
			t.Fatalf("writing an invalid state: %v, want a refusal", err)
		}
		now := db.TimeArg(s, time.Now())
		err = db.ExecRaw(ctx, s, `INSERT INTO parties (kind, name, display_name, created_at, updated_at) VALUES (?, ?, 'x', ?, ?)`,
			persistence.PartyPartner, persistence.PartyName("Bad Name"), now, now)
		if err == nil || !strings.Contains(err.Error(), "invalid party name") {
			t.Fatalf("writing an invalid party name: %v, want a refusal", err)
		}
	})
}

// A row corrupted behind the store's back fails to scan instead of leaking an invalid
// domain value.
func TestCorruptRowsFailToScan(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		m := insert(t, s, 1, writer)[0]
		d := deliveriesOf(t, s, m.ID)[0]
		for _, tc := range []struct {
			name, corrupt, want string
			read                func() error
		}{
			{"party name", `UPDATE parties SET name = 'ACME' WHERE name = 'acme'`, "invalid party name", func() error {
				_, _, err := s.ListParties(ctx, persistence.PartyPartner, persistence.ListOptions{})
				return err
			}},
			{"message status", `UPDATE messages SET status = 'lost' WHERE id = ?`, "invalid message status", func() error {
				_, err := s.GetMessage(ctx, m.ID)
				return err
			}},
			{"delivery state", `UPDATE deliveries SET state = 'gone' WHERE id = ?`, "invalid delivery state", func() error {
				_, err := s.GetDelivery(ctx, d.ID)
				return err
			}},
			{"plugin type", `UPDATE plugin_configs SET type = 'ftp' WHERE name = 'spare'`, "invalid plugin type", func() error {
				_, err := s.GetPluginConfig(ctx, spare)
				return err
			}},
			{"file name", `UPDATE messages SET status = 'in_progress', original_file_name = 'a/b' WHERE id = ?`, "invalid file name", func() error {
				_, _, err := s.ListMessages(ctx, persistence.MessageFilter{})
				return err
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var args []any
				if strings.Contains(tc.corrupt, "?") {
					if strings.Contains(tc.corrupt, "deliveries") {
						args = append(args, d.ID)
					} else {
						args = append(args, m.ID)
					}
				}
				must(t, db.ExecRaw(ctx, s, tc.corrupt, args...))
				err := tc.read()
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("reading a corrupt row: %v, want %q", err, tc.want)
				}
			})
		}
	})
}

func TestPluginConfigs(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		c := must1[persistence.PluginConfig](t)(s.CreatePluginConfig(ctx, persistence.PluginConfig{
			Name: "hook", Type: persistence.PluginNotificationWebhook, Enabled: true,
			Config: json.RawMessage(`{"format":"slack"}`), Secrets: []byte{0, 1, 2},
		}))
		got := must1[persistence.PluginConfig](t)(s.GetPluginConfig(ctx, "hook"))
		if string(got.Config) != `{"format":"slack"}` || string(got.Secrets) != "\x00\x01\x02" || !got.Enabled || !got.CreatedAt.Equal(c.CreatedAt) {
			t.Fatalf("GetPluginConfig = %+v", got)
		}
		if w := must1[persistence.PluginConfig](t)(s.GetPluginConfig(ctx, writer)); string(w.Config) != "{}" || w.Secrets != nil {
			t.Fatalf("defaults: config %s secrets %v", w.Config, w.Secrets)
		}

		// A name is unique across types.
		_, err := s.CreatePluginConfig(ctx, persistence.PluginConfig{Name: "hook", Type: persistence.PluginFileWriter})
		wantErr(t, err, persistence.ErrConflict)
		if !strings.Contains(err.Error(), `"hook" already exists`) {
			t.Fatalf("conflict error %q does not name the instance", err)
		}

		all := must1[[]persistence.PluginConfig](t)(s.ListPluginConfigs(ctx, ""))
		writers := must1[[]persistence.PluginConfig](t)(s.ListPluginConfigs(ctx, persistence.PluginFileWriter))
		if len(all) != 5 || len(writers) != 2 || writers[0].Name != spare || writers[1].Name != writer {
			t.Fatalf("ListPluginConfigs: %d in all, writers %v", len(all), writers)
		}

		got.Enabled, got.Config, got.Secrets = false, json.RawMessage(`{"format":"teams"}`), nil
		up := must1[persistence.PluginConfig](t)(s.UpdatePluginConfig(ctx, got))
		if up.Enabled || string(up.Config) != `{"format":"teams"}` || up.Secrets != nil {
			t.Fatalf("UpdatePluginConfig = %+v", up)
		}
		got.Type = persistence.PluginHTTPPoster
		_, err = s.UpdatePluginConfig(ctx, got)
		wantErr(t, err, persistence.ErrConflict)
		_, err = s.UpdatePluginConfig(ctx, persistence.PluginConfig{Name: "nothing", Type: persistence.PluginFileWriter})
		wantErr(t, err, persistence.ErrNotFound)

		must1[persistence.Route](t)(s.CreateRoute(ctx, persistence.Route{Source: poller, From: "*", To: "*", Target: spare}))
		wantErr(t, s.DeletePluginConfig(ctx, spare), persistence.ErrInUse)
		wantErr(t, s.DeletePluginConfig(ctx, poller), persistence.ErrInUse)
		must(t, s.DeletePluginConfig(ctx, "hook"))
		wantErr(t, s.DeletePluginConfig(ctx, "hook"), persistence.ErrNotFound)
		_, err = s.GetPluginConfig(ctx, "hook")
		wantErr(t, err, persistence.ErrNotFound)
	})
}

func TestRoutes(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		r := must1[persistence.Route](t)(s.CreateRoute(ctx, persistence.Route{Source: poller, From: "*", To: "acme", Target: writer, Ordered: true}))
		if r.ID == 0 || !r.Ordered || r.CreatedAt.IsZero() {
			t.Fatalf("CreateRoute = %+v", r)
		}
		if got := must1[persistence.Route](t)(s.GetRoute(ctx, r.ID)); got != r {
			t.Fatalf("GetRoute = %+v, want %+v", got, r)
		}
		for _, tc := range []struct {
			route persistence.Route
			field string
		}{
			{persistence.Route{Source: "nothing", From: "*", To: "*", Target: writer}, "source"},
			{persistence.Route{Source: poller, From: "*", To: "*", Target: "nothing"}, "target"},
			{persistence.Route{Source: poller, From: "nobody", To: "*", Target: writer}, "from"},
			{persistence.Route{Source: poller, From: "*", To: "nobody", Target: writer}, "to"},
		} {
			_, err := s.CreateRoute(ctx, tc.route)
			wantField(t, err, tc.field)
		}
		_, err := s.GetRoute(ctx, r.ID+100)
		wantErr(t, err, persistence.ErrNotFound)
		must(t, s.DeleteRoute(ctx, r.ID))
		wantErr(t, s.DeleteRoute(ctx, r.ID), persistence.ErrNotFound)
		if rs := must1[[]persistence.Route](t)(s.ListRoutes(ctx)); len(rs) != 0 {
			t.Fatalf("ListRoutes after delete = %v", rs)
		}
	})
}

// A route that covers or is covered by another with the same source and target is
// redundant and refused; anything else may coexist.
func TestRouteRedundancy(t *testing.T) {
	type rt struct {
		from, to persistence.PartyPattern
		target   persistence.InstanceName
	}
	for _, tc := range []struct {
		name     string
		existing rt
		added    rt
		conflict bool
	}{
		{"identical", rt{"acme", "local", writer}, rt{"acme", "local", writer}, true},
		{"covered by wildcard", rt{"*", "*", writer}, rt{"acme", "local", writer}, true},
		{"covers specific", rt{"acme", "local", writer}, rt{"*", "*", writer}, true},
		{"covered on from", rt{"*", "local", writer}, rt{"acme", "local", writer}, true},
		{"covers on to", rt{"acme", "local", writer}, rt{"acme", "*", writer}, true},
		{"crossed wildcards", rt{"acme", "*", writer}, rt{"*", "local", writer}, false},
		{"other party", rt{"acme", "*", writer}, rt{"beta", "*", writer}, false},
		{"other target", rt{"*", "*", writer}, rt{"*", "*", poster}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEach(t, func(t *testing.T, s *db.Store) {
				ctx := context.Background()
				first := must1[persistence.Route](t)(s.CreateRoute(ctx, persistence.Route{Source: poller, From: tc.existing.from, To: tc.existing.to, Target: tc.existing.target}))
				_, err := s.CreateRoute(ctx, persistence.Route{Source: poller, From: tc.added.from, To: tc.added.to, Target: tc.added.target})
				if !tc.conflict {
					must(t, err)
					return
				}
				wantErr(t, err, persistence.ErrConflict)
				if want := "route " + itoa(first.ID); !strings.Contains(err.Error(), want) {
					t.Fatalf("conflict %q does not name %q", err, want)
				}
			})
		})
	}
}

func TestSettings(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		_, err := s.GetSetting(ctx, "max_dispatches")
		wantErr(t, err, persistence.ErrNotFound)
		must(t, s.PutSetting(ctx, "max_dispatches", "5"))
		must(t, s.PutSetting(ctx, "max_dispatches", "7"))
		must(t, s.PutSetting(ctx, "retention_days", "30"))
		if v := must1[string](t)(s.GetSetting(ctx, "max_dispatches")); v != "7" {
			t.Fatalf("GetSetting = %q, want 7", v)
		}
		all := must1[map[string]string](t)(s.ListSettings(ctx))
		if len(all) != 2 || all["retention_days"] != "30" {
			t.Fatalf("ListSettings = %v", all)
		}
		wantField(t, s.PutSetting(ctx, "", "x"), "key")
	})
}

func TestSeed(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		data := persistence.SeedData{
			Organizations: []persistence.Party{{Name: local}},
			Plugins: []persistence.PluginConfig{
				{Name: "file_poller_default", Type: persistence.PluginFilePoller, Enabled: true, Config: json.RawMessage(`{"directory":"outbox"}`)},
				{Name: "file_writer_default", Type: persistence.PluginFileWriter, Enabled: true},
			},
			Routes:   []persistence.Route{{Source: "file_poller_default", From: "*", To: "*", Target: "file_writer_default"}},
			Settings: map[string]string{"max_dispatches": "5"},
		}
		var wg sync.WaitGroup
		results := make([]bool, 8)
		errs := make([]error, 8)
		for i := range results {
			wg.Go(func() { results[i], errs[i] = s.Seed(ctx, data) })
		}
		wg.Wait()
		seeded := 0
		for i, ok := range results {
			must(t, errs[i])
			if ok {
				seeded++
			}
		}
		if seeded != 1 {
			t.Fatalf("%d of 8 concurrent Seed calls seeded, want exactly 1", seeded)
		}
		if again := must1[bool](t)(s.Seed(ctx, data)); again {
			t.Fatal("Seed seeded twice")
		}
		o := must1[persistence.Party](t)(s.GetParty(ctx, persistence.PartyOrganization, local))
		if o.Name != local {
			t.Fatalf("seeded organization = %+v", o)
		}
		if rs := must1[[]persistence.Route](t)(s.ListRoutes(ctx)); len(rs) != 1 || rs[0].Target != "file_writer_default" {
			t.Fatalf("seeded routes = %v", rs)
		}
		settings := must1[map[string]string](t)(s.ListSettings(ctx))
		if settings["max_dispatches"] != "5" || settings["seeded_at"] == "" {
			t.Fatalf("seeded settings = %v", settings)
		}
	})
}

func TestSeedIsAllOrNothing(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := context.Background()
		bad := persistence.SeedData{
			Organizations: []persistence.Party{{Name: local}},
			Routes:        []persistence.Route{{Source: "missing", From: "*", To: "*", Target: "missing"}},
		}
		_, err := s.Seed(ctx, bad)
		wantField(t, err, "routes[0].source")
		if _, err := s.GetSetting(ctx, "seeded_at"); err == nil {
			t.Fatal("a failed seed left its marker")
		}
		if _, err := s.GetParty(ctx, persistence.PartyOrganization, local); err == nil {
			t.Fatal("a failed seed left a party")
		}
		if ok := must1[bool](t)(s.Seed(ctx, persistence.SeedData{Organizations: []persistence.Party{{Name: local}}})); !ok {
			t.Fatal("Seed after a failed seed did not seed")
		}
	})
}

func TestAPITokens(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		tk := must1[persistence.APIToken](t)(s.CreateAPIToken(ctx, "ci", hashOf("secret-1")))
		if tk.ID == 0 || tk.LastUsedAt != nil || tk.RevokedAt != nil {
			t.Fatalf("CreateAPIToken = %+v", tk)
		}
		_, err := s.CreateAPIToken(ctx, "ci", hashOf("secret-2"))
		wantErr(t, err, persistence.ErrConflict)
		_, err = s.CreateAPIToken(ctx, "other", hashOf("secret-1"))
		wantErr(t, err, persistence.ErrConflict)

		found := must1[persistence.APIToken](t)(s.FindAPIToken(ctx, hashOf("secret-1")))
		if found.ID != tk.ID || found.LastUsedAt == nil {
			t.Fatalf("FindAPIToken = %+v", found)
		}
		listed := must1[[]persistence.APIToken](t)(s.ListAPITokens(ctx))
		if len(listed) != 1 || listed[0].LastUsedAt == nil {
			t.Fatalf("ListAPITokens = %+v, want the use recorded", listed)
		}
		_, err = s.FindAPIToken(ctx, hashOf("unknown"))
		wantErr(t, err, persistence.ErrNotFound)

		must(t, s.RevokeAPIToken(ctx, "ci"))
		must(t, s.RevokeAPIToken(ctx, "ci"))
		wantErr(t, s.RevokeAPIToken(ctx, "nobody"), persistence.ErrNotFound)
		_, err = s.FindAPIToken(ctx, hashOf("secret-1"))
		wantErr(t, err, persistence.ErrNotFound)
		listed = must1[[]persistence.APIToken](t)(s.ListAPITokens(ctx))
		if len(listed) != 1 || listed[0].RevokedAt == nil {
			t.Fatalf("ListAPITokens after revoke = %+v", listed)
		}
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
