package sender

import (
	"bufio"
	"fmt"
	"io"
	gomime "mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"wharf/internal/delivery"
	"wharf/internal/persistence"
)

// Bounds of what a refusal's body contributes to the recorded reason.
const (
	answerPeekBytes = 1 << 10
	answerLineBytes = 200
)

// statusError is the reason of a 4xx answer: the status line and the first line of a
// text body, since receivers put the why there (a size limit, an unknown AS2 id) and a
// bare status leaves the operator guessing. The line is bounded and sanitized like every
// reason; an HTML page or a binary body adds nothing.
func statusError(resp *http.Response) error {
	base := delivery.HTTPStatusError(resp.StatusCode)
	line := firstLine(resp)
	if line == "" || strings.EqualFold(strings.TrimSuffix(line, "."), http.StatusText(resp.StatusCode)) {
		return base
	}
	return fmt.Errorf("%w: %s", base, line)
}

// firstLine reads at most answerPeekBytes of a text/plain (or untyped) body and returns
// its first non-empty line, cut to answerLineBytes.
func firstLine(resp *http.Response) string {
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		mt, _, err := gomime.ParseMediaType(ct)
		if err != nil || mt != "text/plain" {
			return ""
		}
	}
	peek, _ := io.ReadAll(io.LimitReader(resp.Body, answerPeekBytes))
	sc := bufio.NewScanner(strings.NewReader(string(peek)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if strings.ContainsRune(line, 0) {
			return ""
		}
		if len(line) > answerLineBytes {
			cut := answerLineBytes
			for cut > 0 && !utf8.RuneStart(line[cut]) {
				cut--
			}
			line = line[:cut] + "…"
		}
		return persistence.SanitizeReason(line)
	}
	return ""
}
