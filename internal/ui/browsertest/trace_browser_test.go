package browsertest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"
)

// stepTrace follows a delivered message's Trace link and photographs the trace at
// desktop and phone widths in both themes: its timelines must fit 375 px without
// scrolling sideways.
func stepTrace(t *testing.T, b *browser) {
	id := b.h.sendMessage("local", "b", "file_writer_default", "order-traced.xml", "<order>traced</order>")
	b.h.waitStatus(id, "delivered")
	code, data := b.h.api("GET", fmt.Sprintf("/api/v1/messages/%d", id), "", nil)
	var m struct {
		OriginEventID string `json:"origin_event_id"`
	}
	if code != http.StatusOK || json.Unmarshal(data, &m) != nil || m.OriginEventID == "" {
		t.Fatalf("message %d = %d: %s", id, code, data)
	}
	b.open(t, fmt.Sprintf("/ui/messages/%d", id))
	b.do(t, "follow the Trace link", chromedp.Click(chromedp.CSS(`a[href^="/ui/trace?origin_event_id="]`)),
		chromedp.WaitVisible(chromedp.CSS(`#trace-final-title`)))
	if got := b.location(t); got != "/ui/trace?origin_event_id="+m.OriginEventID {
		t.Fatalf("the Trace link leads to %s", got)
	}
	b.eachLook(t, func(theme string, width int64) {
		b.open(t, "/ui/trace?origin_event_id="+m.OriginEventID)
		if width == 375 {
			if w := run(t, b, "measure", chromedp.Evaluate[int](`document.scrollingElement.scrollWidth`)); w > 375 {
				t.Errorf("the trace is %d px wide at 375 px (%s theme): %v", w, theme,
					run(t, b, "find the overflow", chromedp.Evaluate[[]string](overflowing)))
			}
		}
		b.shoot(t, "trace", int(width))
		b.checkClean(t, fmt.Sprintf("the trace at %d px, %s theme", width, theme))
	})
}
