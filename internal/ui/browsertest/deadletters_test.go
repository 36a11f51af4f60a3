package browsertest

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// keyColumnsShown is, for the first dead letter's row, which key cells (select, delivery,
// state, target, age) a 375 px screen shows without scrolling.
const keyColumnsShown = `(function () {
	var row = document.querySelector("table.dead-letters tbody tr");
	return Array.from(row.cells).slice(0, 5).map(function (c) {
		var r = c.getBoundingClientRect();
		return r.width > 0 && r.right <= 376 && getComputedStyle(c).display !== "none";
	});
})()`

// stepDeadLetters fails a delivery for good, finds it among the dead letters on a phone
// with its key columns in view, and skips it through the confirmation that names how
// many deliveries the action takes.
func stepDeadLetters(t *testing.T, b *browser) {
	partner := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such order", http.StatusBadRequest)
	}))
	t.Cleanup(partner.Close)
	b.h.mustJSON("POST", "/api/v1/plugins/configs/http-poster", map[string]any{
		"name": "poster_refusing", "enabled": true, "url": partner.URL + "/in", "retry": map[string]any{"max_retries": 0},
	}, nil)
	b.h.mustJSON("POST", "/api/v1/services/http-poster/poster_refusing/start", map[string]any{}, nil)
	id := b.h.sendMessage("local", "b", "poster_refusing", "order-refused.xml", "<order>refused</order>")
	b.h.waitStatus(id, "error")

	defer b.do(t, "restore the window", chromedp.EmulateViewport(1280, 900))
	b.do(t, "resize", chromedp.EmulateViewport(375, 900))
	b.open(t, "/ui/dead-letters?target=poster_refusing")
	if w := run(t, b, "measure", chromedp.Evaluate[int](`document.scrollingElement.scrollWidth`)); w > 375 {
		t.Errorf("the dead letters are %d px wide at 375 px: %v", w, run(t, b, "find the overflow", chromedp.Evaluate[[]string](overflowing)))
	}
	shown := run(t, b, "key columns", chromedp.Evaluate[[]bool](keyColumnsShown))
	if len(shown) != 5 || slices.Contains(shown, false) {
		t.Errorf("key columns in view at 375 px (select, delivery, state, target, age) = %v", shown)
	}
	b.shoot(t, "dead-letters", 375)
	b.checkClean(t, "/ui/dead-letters at 375 px")

	b.do(t, "select the delivery", chromedp.Click(chromedp.CSS("table.dead-letters tbody input[name=id]")))
	b.submit(t, "button[name=action][value=skip]", "main")
	if text := b.mainText(t); !strings.Contains(text, "Skip 1 delivery?") {
		t.Fatalf("the skip button did not lead to its confirmation:\n%s", text)
	}
	b.submit(t, "form[action='/ui/dead-letters/skip'] button[type=submit]", "main")
	if text := b.mainText(t); !strings.Contains(text, "1 of 1 deliveries skipped.") {
		t.Fatalf("after confirming:\n%s", text)
	}
	b.h.waitStatus(id, "skipped")
}
