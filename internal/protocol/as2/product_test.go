package as2_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"wharf/internal/product"
)

// TestProductString: Wharf names itself with its version in User-Agent, Server and an
// MDN's Reporting-UA until the hide_version setting leaves the version out. B hides it:
// A's record of B's answer and receipt says "Wharf"; B's record of A's request says
// "Wharf/<version>"; each REST API's Server field follows its own setting.
func TestProductString(t *testing.T) {
	a := startPeer(t, "WHARF-A", "")
	b := startPeer(t, "WHARF-B", "")
	connect(t, a, b)
	b.json("PUT", "/api/v1/settings", map[string]string{"hide_version": "true"}, nil)
	full := product.String(false)

	for _, tc := range []struct {
		p    *peer
		want string
	}{{a, full}, {b, "Wharf"}} {
		resp, err := http.Get(tc.p.gw.URL() + "/api/v1/health")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Server"); got != tc.want {
			t.Errorf("%s's REST API: Server %q, want %q", tc.p.name, got, tc.want)
		}
	}

	var sent messageView
	a.multipart("/api/v1/messages", map[string]string{"from": "local", "to": "b", "target": "as2_sender_default"}, "po.txt", []byte("order 1"), &sent)
	var out struct {
		Outbound []struct {
			PartnerSoftware string `json:"partner_software"`
			MDN             *struct {
				ReportingUA string `json:"reporting_ua"`
			} `json:"mdn"`
		} `json:"outbound"`
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var got messageView
		a.do("GET", fmt.Sprintf("/api/v1/messages/%d", sent.ID), "", nil, &got)
		if err := json.Unmarshal(got.Protocols["as2"], &out); err == nil && len(out.Outbound) == 1 && out.Outbound[0].MDN != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no receipt for message %d: %s", sent.ID, got.Protocols["as2"])
		}
		time.Sleep(20 * time.Millisecond)
	}
	o := out.Outbound[0]
	if o.PartnerSoftware != "Wharf" {
		t.Errorf("B's answer: Server %q, want Wharf", o.PartnerSoftware)
	}
	if ua := o.MDN.ReportingUA; ua != "Wharf" && !strings.HasSuffix(ua, "; Wharf") {
		t.Errorf("B's MDN: Reporting-UA %q, want Wharf without a version", ua)
	}

	var list struct {
		Messages []messageView `json:"messages"`
	}
	b.do("GET", "/api/v1/messages?from=a", "", nil, &list)
	if len(list.Messages) != 1 {
		t.Fatalf("B has %d messages from A", len(list.Messages))
	}
	var detail messageView
	b.do("GET", fmt.Sprintf("/api/v1/messages/%d", list.Messages[0].ID), "", nil, &detail)
	if !strings.Contains(string(detail.Protocols["as2"]), `"`+full+`"`) {
		t.Errorf("B's record of A's request does not name %q: %s", full, detail.Protocols["as2"])
	}
}
