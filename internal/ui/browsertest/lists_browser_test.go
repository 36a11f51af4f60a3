package browsertest

import (
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
)

// keyColumnBox finds the first key cell of a table and says whether its box lies within
// the viewport's width, with its right edge; "" when there is no such cell or it is hidden.
const keyColumnBox = `(function (sel) {
	var e = document.querySelector(sel);
	if (!e) { return "no element " + sel; }
	var r = e.getBoundingClientRect();
	if (r.width === 0 || r.height === 0) { return sel + " is hidden"; }
	if (r.left < 0 || r.right > window.innerWidth) { return sel + " reaches " + Math.round(r.left) + " to " + Math.round(r.right) + " px of " + window.innerWidth; }
	return "";
})(%q)`

// stepKeyColumns photographs the partner page, a message's page and the message list at
// 1280 and 375 px in both themes, and requires each list's key column (status, target,
// expiry, health) to be in view at 375 px without scrolling sideways.
func stepKeyColumns(t *testing.T, b *browser) {
	id := b.h.sendMessage("local", "b", "file_writer_default", "order-listed.xml", "<order>listed</order>")
	b.h.waitStatus(id, "delivered")
	// A certificate, so the certificate list has a row.
	b.h.mustJSON("POST", "/api/v1/certificates/generate", map[string]any{"subject": map[string]any{"common_name": "listed.example"}}, nil)
	pages := []struct {
		name, path, key string
	}{
		{"list-messages", "/ui/messages", "#message-table tbody td.col-key"},
		{"list-partners", "/ui/partners", "#party-table tbody td.col-key"},
		{"list-partner", "/ui/partners/b", "#partner-traffic tbody td.col-key"},
		{"list-partner-routes", "/ui/partners/b", "#party-routes tbody td.col-key"},
		{"list-message", fmt.Sprintf("/ui/messages/%d", id), "#message-verdict .verdict-text"},
		{"list-certificates", "/ui/certificates", "#certificate-table tbody td.col-key"},
		{"list-routes", "/ui/routes", "#route-table tbody td.col-key"},
	}
	b.eachLook(t, func(theme string, width int64) {
		for _, p := range pages {
			b.open(t, p.path)
			if problem := run(t, b, "find the key column", chromedp.Evaluate[string](fmt.Sprintf(keyColumnBox, p.key))); problem != "" {
				t.Errorf("%s at %d px (%s theme): %s", p.path, width, theme, problem)
			}
			b.shoot(t, p.name, int(width))
			b.checkClean(t, fmt.Sprintf("%s at %d px, %s theme", p.path, width, theme))
		}
	})
}
