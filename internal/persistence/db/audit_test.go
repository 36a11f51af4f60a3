package db_test

import (
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"wharf/internal/audit"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/persistence/db/dbtest"
)

func auditEvents(t *testing.T, s *db.Store) []audit.Event {
	t.Helper()
	var out []audit.Event
	must(t, s.EachAudit(context.Background(), 0, func(e audit.Event) error { out = append(out, e); return nil }))
	return out
}

func changesOf(e audit.Event) string { return string(audit.ChangesJSON(e.Changes)) }

// TestAuditRecordsChanges follows one record of each kind through its changes and
// checks the events: actor from the context, action, record and a field-level diff with
// secrets only marked.
func TestAuditRecordsChanges(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := audit.WithActor(context.Background(), "user:alice")
		before := len(auditEvents(t, s))

		must1[persistence.Party](t)(s.UpdateParty(ctx, persistence.Party{Kind: persistence.PartyPartner, Name: acme, DisplayName: "ACME Inc"}))
		r := must1[persistence.Route](t)(s.CreateRoute(ctx, persistence.Route{Source: poller, From: "*", To: persistence.PartyPattern(acme), Target: writer}))
		must(t, s.DeleteRoute(ctx, r.ID))
		p := must1[persistence.PluginConfig](t)(s.GetPluginConfig(ctx, poster))
		p.Config = json.RawMessage(`{"tls":{"min_version":"1.3"},"url":"https://example.invalid/x"}`)
		p.Secrets = []byte("sealed-canary")
		must1[persistence.PluginConfig](t)(s.UpdatePluginConfig(ctx, p))
		must(t, s.PutSetting(ctx, "retention_days", "30"))
		must1[persistence.APIToken](t)(s.CreateAPIToken(ctx, "deploy", hashOf("token-canary")))
		must(t, s.RevokeAPIToken(ctx, "deploy"))
		u := must1[persistence.User](t)(s.CreateUser(ctx, persistence.User{Name: "bob", Role: persistence.RoleOperator}))
		must1[persistence.User](t)(s.SetUserRole(ctx, u.ID, persistence.RoleAdmin))
		must(t, s.DeleteUser(ctx, u.ID))

		got := auditEvents(t, s)[before:]
		want := []struct{ action, kind, id, changes string }{
			{"update", "partner", "acme", `[{"path":"display_name","old":"ACME Corp","new":"ACME Inc"}]`},
			{"create", "route", "", `"path":"target","new":"writer"`},
			{"delete", "route", "", `"path":"target","old":"writer"`},
			{"update", "plugin_instance", "poster", `{"path":"config.tls.min_version","new":"1.3"},` +
				`{"path":"config.url","new":"https://example.invalid/x"},{"path":"secrets","secret":true}`},
			{"update", "setting", "retention_days", `[{"path":"value","new":"30"}]`},
			{"create", "api_token", "deploy", `[{"path":"token","secret":true}]`},
			{"revoke", "api_token", "deploy", `[{"path":"revoked","old":false,"new":true}]`},
			{"create", "user", "", `{"path":"name","new":"bob"}`},
			{"update", "user", "", `[{"path":"role","old":"operator","new":"admin"}]`},
			{"delete", "user", "", `{"path":"name","old":"bob"}`},
		}
		if len(got) != len(want) {
			t.Fatalf("%d events, want %d: %+v", len(got), len(want), got)
		}
		for i, w := range want {
			e := got[i]
			if e.Actor != "user:alice" || e.Action != w.action || e.Kind != w.kind || (w.id != "" && e.RecordID != w.id) ||
				!strings.Contains(changesOf(e), w.changes) {
				t.Errorf("event %d = %s %s %s %q by %s %s, want %s %s %s containing %s", i, e.Action, e.Kind, e.RecordID,
					e.RecordName, e.Actor, changesOf(e), w.action, w.kind, w.id, w.changes)
			}
			if strings.Contains(changesOf(e), "canary") {
				t.Errorf("event %d holds a secret: %s", i, changesOf(e))
			}
		}
		n, problems, err := s.VerifyAudit(ctx)
		if err != nil || len(problems) != 0 || n != len(auditEvents(t, s)) {
			t.Fatalf("VerifyAudit = %d, %v, %v", n, problems, err)
		}

		// A refused change writes no event.
		if _, err := s.CreateRoute(ctx, persistence.Route{Source: poller, From: "*", To: "nobody", Target: writer}); err == nil {
			t.Fatal("route to an unknown party was stored")
		}
		if len(auditEvents(t, s)) != n {
			t.Error("a refused change left an audit event")
		}
	})
}

// TestAuditOperatorActions checks that redispatch, redeliver and a message sent by hand
// are audited with the operator as actor, and that a source's messages and its own first
// dispatch are not.
func TestAuditOperatorActions(t *testing.T) {
	forEach(t, func(t *testing.T, s *db.Store) {
		ctx := context.Background()
		m := insert(t, s, 1, writer)[0]
		before := len(auditEvents(t, s))
		must1[[]persistence.Delivery](t)(s.Redispatch(ctx, m.ID, []persistence.InstanceName{spare}, nil, nil, "user:carol"))
		ds := deliveriesOf(t, s, m.ID)
		now := time.Now()
		for _, c := range claimAll(t, s, writer, now) {
			complete(t, s, persistence.Completion{DeliveryID: c.Delivery.ID, Token: c.Delivery.ClaimToken, Kind: persistence.OutcomeFailed, Reason: "refused", At: now})
		}
		must1[persistence.Delivery](t)(s.Redeliver(ctx, ds[0].ID, persistence.ResendSame, "user:carol"))
		got := auditEvents(t, s)[before:]
		if len(got) != 2 || got[0].Action != "redispatch" || got[1].Action != "redeliver" ||
			got[0].Actor != "user:carol" || got[1].Actor != "user:carol" {
			t.Fatalf("events = %+v, want redispatch and redeliver by user:carol", got)
		}

		// A message sent by hand is audited with its insert; one from a source is not.
		first := must1[int64](t)(s.AllocateMessageIDs(ctx, 2))
		byHand := newMessage(first, true, writer)
		byHand.Actor, byHand.ByOperator = "token:deploy", true
		fromSource := newMessage(first+1, true, writer)
		fromSource.Actor = "source:poller"
		must1[[]persistence.Message](t)(s.InsertMessages(ctx, []persistence.NewMessage{byHand, fromSource}))
		got = auditEvents(t, s)[before+2:]
		if len(got) != 1 || got[0].Action != "send" || got[0].Actor != "token:deploy" ||
			got[0].RecordID != fmt.Sprint(first) || !strings.Contains(changesOf(got[0]), `"path":"to","new":"local"`) {
			t.Fatalf("events after inserting a message by hand and one from a source = %+v", got)
		}
	})
}

// TestAuditVerifyFindsTampering changes one byte of one stored event and deletes another,
// as someone with write access to the database could, and expects VerifyAudit to name
// both.
func TestAuditVerifyFindsTampering(t *testing.T) {
	dbtest.ForEach(t, func(t *testing.T, s *db.Store) {
		t.Parallel()
		ctx := audit.WithActor(context.Background(), "cli")
		for _, name := range []persistence.PartyName{"p1", "p2", "p3", "p4", "p5"} {
			must1[persistence.Party](t)(s.CreateParty(ctx, persistence.Party{Kind: persistence.PartyPartner, Name: name}))
		}
		if err := db.ExecRaw(ctx, s, `UPDATE audit_events SET actor = 'cla' WHERE id = 2`); err == nil {
			t.Fatal("an audit event was updated")
		}
		if err := db.ExecRaw(ctx, s, `DELETE FROM audit_events WHERE id = 4`); err == nil {
			t.Fatal("an audit event was deleted")
		}
		dropAuditGuards(t, s)
		must(t, db.ExecRaw(ctx, s, `UPDATE audit_events SET actor = 'cla' WHERE id = 2`))
		must(t, db.ExecRaw(ctx, s, `DELETE FROM audit_events WHERE id = 4`))
		_, problems, err := s.VerifyAudit(ctx)
		must(t, err)
		var named []int64
		for _, p := range problems {
			named = append(named, p.EventID)
		}
		if !slices.Contains(named, 2) || !slices.Contains(named, 5) || !strings.Contains(problems[len(problems)-1].Text+problemsText(problems), "gap") {
			t.Fatalf("problems = %v, want event 2 changed and a gap before event 5", problems)
		}
	})
}

func problemsText(ps []audit.Problem) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.String() + "\n")
	}
	return b.String()
}

func dropAuditGuards(t *testing.T, s *db.Store) {
	t.Helper()
	ctx := context.Background()
	if s.Dialect() == db.DialectPostgres {
		must(t, db.ExecRaw(ctx, s, `DROP TRIGGER audit_events_append_only ON audit_events`))
		return
	}
	must(t, db.ExecRaw(ctx, s, `DROP TRIGGER audit_events_no_update`))
	must(t, db.ExecRaw(ctx, s, `DROP TRIGGER audit_events_no_delete`))
}

// configTables are the tables holding configuration; every Store method that writes one
// must write an audit event.
var configTables = []string{"parties", "routes", "plugin_configs", "certificates", "settings", "api_tokens", "users",
	"identity_providers", "partner_pauses", "callback_secrets"}

// notAudited are the exported methods that write a configuration table without an audit
// event, each with the reason.
var notAudited = map[string]string{
	"SetCertificateUses": "derived from the owning record's change, which is audited",
	"AcceptTOTPStep":     "a sign-in step, not a configuration change",
	"UseRecoveryCode":    "a sign-in step, not a configuration change",
	"TouchUserSignIn":    "a sign-in, not a configuration change",
	"FindAPIToken":       "records a token's last use, not a configuration change",

	"TouchCallbackSecret": "records a callback secret's last use, not a configuration change",
}

// TestEveryConfigChangeIsAudited reads the package's source: each exported Store method
// that reaches (through the package's own functions) a statement writing a configuration
// table must also reach a call of audit, or be listed in notAudited with a reason.
func TestEveryConfigChangeIsAudited(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	must(t, err)
	writes := regexp.MustCompile(`(?is)\b(INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+(` + strings.Join(configTables, "|") + `)\b`)

	type fn struct {
		writesConfig bool
		audits       bool
		calls        []string
	}
	funcs := map[string]*fn{} // by name; methods by their name alone, which is unique enough here
	var storeMethods []string
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				info := &fn{}
				ast.Inspect(fd.Body, func(n ast.Node) bool {
					switch x := n.(type) {
					case *ast.BasicLit:
						if x.Kind == token.STRING && writes.MatchString(x.Value) {
							info.writesConfig = true
						}
					case *ast.CallExpr:
						var name string
						switch f := x.Fun.(type) {
						case *ast.Ident:
							name = f.Name
						case *ast.SelectorExpr:
							name = f.Sel.Name
						}
						if name == "audit" || name == "auditDiff" {
							info.audits = true
						}
						if name != "" {
							info.calls = append(info.calls, name)
						}
					}
					return true
				})
				funcs[fd.Name.Name] = info
				if fd.Recv != nil && fd.Name.IsExported() {
					if star, ok := fd.Recv.List[0].Type.(*ast.StarExpr); ok {
						if id, ok := star.X.(*ast.Ident); ok && id.Name == "Store" {
							storeMethods = append(storeMethods, fd.Name.Name)
						}
					}
				}
			}
		}
	}
	var reach func(name string, seen map[string]bool) (writes, audits bool)
	reach = func(name string, seen map[string]bool) (bool, bool) {
		f, ok := funcs[name]
		if !ok || seen[name] {
			return false, false
		}
		seen[name] = true
		w, a := f.writesConfig, f.audits
		for _, c := range f.calls {
			cw, ca := reach(c, seen)
			w, a = w || cw, a || ca
		}
		return w, a
	}
	checked := 0
	for _, m := range storeMethods {
		w, a := reach(m, map[string]bool{})
		if !w {
			continue
		}
		checked++
		if _, exempt := notAudited[m]; exempt {
			continue
		}
		if !a {
			t.Errorf("Store.%s changes configuration without writing an audit event", m)
		}
	}
	if checked < 20 {
		t.Errorf("only %d methods write configuration tables; the source scan is broken", checked)
	}
}
