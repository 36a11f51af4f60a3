package ui

import (
	"context"
	"errors"
	"html/template"
	"sync"
	"sync/atomic"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/settings"
)

// timeLayout is the one way the UI shows a time, in the display_timezone setting's zone.
const timeLayout = "2006-01-02 15:04:05 MST"

// zoneTTL bounds how stale the zone a page shows times in may be.
const zoneTTL = time.Second

// displayZone is the zone of the display_timezone setting, read at most once per zoneTTL
// before a page renders. The template function "when" reads it.
type displayZone struct {
	loc    atomic.Pointer[time.Location]
	mu     sync.Mutex
	readAt time.Time
}

func newDisplayZone() *displayZone {
	z := &displayZone{}
	z.loc.Store(time.UTC)
	return z
}

// refresh reads the setting when the zone read last is older than zoneTTL. A failed read
// keeps the zone read last: times still show, in a zone that was right a moment ago.
func (z *displayZone) refresh(ctx context.Context, st interface {
	GetSetting(ctx context.Context, key string) (string, error)
}) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if !z.readAt.IsZero() && time.Since(z.readAt) < zoneTTL {
		return
	}
	v, err := st.GetSetting(ctx, settings.DisplayTimezone)
	switch {
	case errors.Is(err, persistence.ErrNotFound):
		v = settings.Defaults()[settings.DisplayTimezone]
	case err != nil:
		return
	}
	// The setting was validated when written; a zone this build does not know shows UTC.
	loc, err := time.LoadLocation(v)
	if err != nil {
		loc = time.UTC
	}
	z.loc.Store(loc)
	z.readAt = time.Now()
}

// changed makes the next page read the setting again.
func (z *displayZone) changed() {
	z.mu.Lock()
	z.readAt = time.Time{}
	z.mu.Unlock()
}

// when is the template function every time on a page goes through: a time.Time, a
// *time.Time or an RFC 3339 text becomes <time datetime="…UTC…">…in the zone…</time>; a
// zero or nil time and empty text become nothing, and other text stays as it is.
func (z *displayZone) when(v any) template.HTML {
	var t time.Time
	switch x := v.(type) {
	case time.Time:
		t = x
	case *time.Time:
		if x == nil {
			return ""
		}
		t = *x
	case string:
		parsed, err := time.Parse(time.RFC3339Nano, x)
		if err != nil {
			return template.HTML(template.HTMLEscapeString(x))
		}
		t = parsed
	}
	if t.IsZero() {
		return ""
	}
	return template.HTML(`<time datetime="` + t.UTC().Format(time.RFC3339) + `">` +
		template.HTMLEscapeString(t.In(z.loc.Load()).Format(timeLayout)) + `</time>`)
}
