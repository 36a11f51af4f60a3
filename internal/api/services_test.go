package api

import (
	"testing"
	"time"
)

func TestServices(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		b.seed()
		since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		b.ops.services["outbox"] = ServiceStatus{Name: "outbox", Type: "file-poller", Role: "source", Enabled: true, State: ServiceRunning, Since: since}
		b.ops.services["inbox"] = ServiceStatus{Name: "inbox", Type: "file-writer", Role: "target", Enabled: true, State: ServiceFailed, Error: "directory missing", Since: since}

		var list struct {
			Services []ServiceStatus `json:"services"`
			Total    int             `json:"total"`
		}
		b.must(200, "GET", "/api/v1/services", "").json(t, &list)
		if list.Total != 2 || list.Services[0].Name != "inbox" || list.Services[0].Error != "directory missing" || !list.Services[1].Since.Equal(since) {
			t.Errorf("list %+v", list)
		}

		var st ServiceStatus
		b.must(200, "POST", "/api/v1/services/file-poller/outbox/stop", "").json(t, &st)
		if st.State != ServiceStopped {
			t.Errorf("after stop: %+v", st)
		}
		b.must(200, "POST", "/api/v1/services/file-poller/outbox/start", "{}")
		b.must(200, "POST", "/api/v1/services/file-writer/inbox/restart", "").json(t, &st)
		if st.State != ServiceRunning {
			t.Errorf("after restart: %+v", st)
		}
		want := []string{"stop outbox", "start outbox", "restart inbox"}
		if len(b.ops.actions) != len(want) {
			t.Fatalf("actions %v", b.ops.actions)
		}
		for i := range want {
			if b.ops.actions[i] != want[i] {
				t.Errorf("actions %v, want %v", b.ops.actions, want)
			}
		}

		b.must(404, "POST", "/api/v1/services/file-writer/outbox/restart", "")  // type and name disagree
		b.must(404, "POST", "/api/v1/services/file-writer/nope/restart", "")    // no such instance
		b.must(404, "POST", "/api/v1/services/file-writer/archive/restart", "") // Ops knows no service
		b.must(400, "POST", "/api/v1/services/ftp/outbox/restart", "")
		if r := b.do("POST", "/api/v1/services/file-poller/outbox/restart", "", withContentType("text/plain")); r.status != 415 {
			t.Errorf("as text/plain: %d", r.status)
		}
	})
}

func TestActionsNeedJSONContentType(t *testing.T) {
	eachStore(t, func(t *testing.T, b *bundle) {
		b.seed()
		b.ops.services["outbox"] = ServiceStatus{Name: "outbox", Type: "file-poller", State: ServiceRunning}
		if r := b.do("POST", "/api/v1/services/file-poller/outbox/stop", "", withoutHeader("Content-Type")); r.status != 415 {
			t.Errorf("without Content-Type: %d %s", r.status, r.body)
		}
		if len(b.ops.actions) != 0 {
			t.Errorf("acted: %v", b.ops.actions)
		}
	})
}
