package browsertest

import (
	"bytes"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

var refusedLinkRE = regexp.MustCompile(`href="/ui/messages/(\d+)"`)

// A message the AS2 receiver refused shows in the messages list under the refused
// filter and in the dashboard's problems; its page gives the reason, the disposition
// and the request's stages to download. Requests from unknown AS2 ids show on the
// unknown senders page.
func TestRefusedMessagePages(t *testing.T) {
	h := start(t)
	c, _ := h.signedIn(t, "alice")
	h.mustJSON("POST", "/api/v1/partners", map[string]any{"name": "b"}, nil)
	h.mustJSON("POST", "/api/v1/as2/local-profiles", map[string]any{"organization": "local", "as2_id": "WHARF"}, nil)
	h.mustJSON("POST", "/api/v1/as2/remote-profiles", remoteJSON("https://partner.example/as2"), nil)
	var rcv struct {
		Port int    `json:"port"`
		Path string `json:"path"`
	}
	h.mustJSON("GET", "/api/v1/plugins/configs/as2-receiver/as2_receiver_default", nil, &rcv)

	post := func(from string) *http.Response {
		req, err := http.NewRequest("POST", fmt.Sprintf("http://127.0.0.1:%d%s", rcv.Port, rcv.Path),
			bytes.NewReader([]byte("not a CMS envelope")))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", `application/pkcs7-mime; smime-type=enveloped-data; name="smime.p7m"`)
		req.Header.Set("AS2-From", from)
		req.Header.Set("AS2-To", "WHARF")
		req.Header.Set("Message-ID", fmt.Sprintf("<%d@partner.example>", time.Now().UnixNano()))
		req.Header.Set("Disposition-Notification-To", "edi@partner.example")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := post("PARTNER-B"); resp.StatusCode != http.StatusOK {
		t.Fatalf("refused message answered %d, want 200 with the MDN", resp.StatusCode)
	}
	if resp := post("STRANGER"); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("unknown sender answered %d, want 403", resp.StatusCode)
	}

	list := c.get(t, "/ui/messages?status=refused")
	m := refusedLinkRE.FindStringSubmatch(list.body)
	if list.status != http.StatusOK || m == nil {
		t.Fatalf("refused filter = %d, no message listed:\n%s", list.status, list.body)
	}
	if home := c.get(t, "/ui/"); !strings.Contains(home.body, `href="/ui/messages?status=refused"><span class="badge badge-refused">Refused</span> 1 message</a>`) {
		t.Errorf("the dashboard's problems do not count the refused message:\n%s", home.body)
	}
	page := c.get(t, "/ui/messages/"+m[1])
	for _, want := range []string{"decryption-failed", "could not be decrypted", "PARTNER-B",
		"payload?stage=received", "payload?stage=headers", "payload?stage=receipt"} {
		if !strings.Contains(page.body, want) {
			t.Errorf("message page lacks %q", want)
		}
	}
	if r := c.get(t, "/ui/messages/"+m[1]+"/payload?stage=received"); r.status != http.StatusOK || r.body != "not a CMS envelope" {
		t.Errorf("raw body download = %d %q", r.status, r.body)
	}

	deadline := time.Now().Add(20 * time.Second)
	for {
		r := c.get(t, "/ui/unknown-senders")
		if strings.Contains(r.body, "STRANGER") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the unknown sender is not listed:\n%s", r.body)
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not a wait for work
	}
}
