package ui

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"
	"unicode/utf8"

	"wharf/internal/logging"
)

var _ = registerPages([]string{"logs"}, (*Server).logsRoutes)

func (s *Server) logsRoutes() []pageRoute {
	return []pageRoute{
		{"GET /ui/logs", http.HandlerFunc(s.logsPage)},
		{"GET /ui/live/logs", http.HandlerFunc(s.logsLive)},
	}
}

const (
	// logsShown is the most lines the logs page shows.
	logsShown = 200
	// logsEvery is the least time between two live renders of the logs.
	logsEvery = time.Second
	// maxLogQuery bounds the text filter, in characters.
	maxLogQuery = 200
)

// logLevels are the levels the filter offers, as minimums.
var logLevels = []struct {
	Name  string
	Level slog.Level
}{{"debug", slog.LevelDebug}, {"info", slog.LevelInfo}, {"warn", slog.LevelWarn}, {"error", slog.LevelError}}

// logsFilter is the filter form as typed, and why a field was refused.
type logsFilter struct {
	Level   string
	Q       string
	Process string // the process whose log is shown; empty is this one
	min     slog.Level
	Errors  map[string]string
}

func parseLogsFilter(q url.Values) logsFilter {
	f := logsFilter{Level: q.Get("level"), Q: q.Get("q"), Process: q.Get("process"), min: slog.LevelDebug, Errors: map[string]string{}}
	if f.Level == "" {
		f.Level = "debug"
	}
	found := false
	for _, l := range logLevels {
		if l.Name == f.Level {
			f.min, found = l.Level, true
		}
	}
	if !found {
		f.Errors["level"] = "Choose a level from the list."
	}
	if !utf8.ValidString(f.Q) || utf8.RuneCountInString(f.Q) > maxLogQuery {
		f.Errors["q"] = fmt.Sprintf("Search text is at most %d characters.", maxLogQuery)
	}
	if f.Process != "" && !validProcessID(f.Process) {
		f.Errors["process"] = "Choose a process from the list."
	}
	return f
}

// logLine is one record as the page shows it.
type logLine struct {
	Time    time.Time
	Level   string
	Class   string // the badge-* class of its level
	Message string
	Attrs   string
}

type logsData struct {
	Filter    logsFilter
	Levels    []string
	Processes []processOption // the selector's choices; empty shows no selector
	Available bool
	Lines     []logLine
	Unread    string // why the chosen process's lines could not be read
	LiveURL   string
}

// logLines are the lines f selects, from this process's ring or another process's over
// the bus; the second result says why another process's could not be read.
func (s *Server) logLines(ctx context.Context, f logsFilter) ([]logLine, string) {
	var entries []logging.Entry
	if id, ok := s.remoteProcess(f); ok {
		var err error
		if entries, err = s.processLogs.Tail(ctx, id, f.min, f.Q, logsShown); err != nil {
			s.log.WarnContext(ctx, "read another process's log", "process", id, "err", err)
			return nil, "The process did not answer; it may have stopped. Choose another process or try again."
		}
	} else if s.logs != nil {
		entries = s.logs.Tail(f.min, f.Q, logsShown)
	}
	var out []logLine
	for _, e := range entries {
		out = append(out, logLine{Time: e.Time, Level: e.Level.String(), Class: levelBadge(e.Level), Message: e.Message, Attrs: e.Attrs})
	}
	return out, ""
}

// logsAvailable says whether the page has lines to show for f.
func (s *Server) logsAvailable(f logsFilter) bool {
	_, remote := s.remoteProcess(f)
	return remote || s.logs != nil
}

func levelBadge(l slog.Level) string {
	switch {
	case l >= slog.LevelError:
		return "danger"
	case l >= slog.LevelWarn:
		return "warning"
	case l >= slog.LevelInfo:
		return "info"
	}
	return "neutral"
}

// logsPage shows the newest lines of the gateway's own log, filtered by a minimum level
// and a text, and follows them live.
func (s *Server) logsPage(w http.ResponseWriter, r *http.Request) {
	f := parseLogsFilter(r.URL.Query())
	d := logsData{Filter: f, Available: s.logsAvailable(f), Processes: s.processOptions(r)}
	for _, l := range logLevels {
		d.Levels = append(d.Levels, l.Name)
	}
	if len(f.Errors) > 0 {
		s.render(w, r, http.StatusBadRequest, "logs", pageData{Title: "Logs", Data: d})
		return
	}
	d.Lines, d.Unread = s.logLines(r.Context(), f)
	v := url.Values{"level": {f.Level}}
	if f.Q != "" {
		v.Set("q", f.Q)
	}
	if f.Process != "" {
		v.Set("process", f.Process)
	}
	d.LiveURL = "/ui/live/logs?" + v.Encode()
	s.render(w, r, http.StatusOK, "logs", pageData{Title: "Logs", Data: d})
}

// logsLive streams the filtered lines again whenever new ones are logged.
func (s *Server) logsLive(w http.ResponseWriter, r *http.Request) {
	f := parseLogsFilter(r.URL.Query())
	if len(f.Errors) > 0 {
		http.Error(w, "invalid filters", http.StatusBadRequest)
		return
	}
	ls := liveStream{logs: true, every: logsEvery}
	if id, ok := s.remoteProcess(f); ok {
		// The other process's new lines arrive over the bus, not in this ring.
		wake, cancel, err := s.processLogs.Watch(r.Context(), id)
		if err != nil {
			s.log.ErrorContext(r.Context(), "follow another process's log", "process", id, "err", err)
			http.Error(w, "cannot follow the process's log", http.StatusServiceUnavailable)
			return
		}
		defer cancel()
		ls.logs, ls.logWake = false, wake
	}
	ls.render = func(ctx context.Context, c changes) ([]sseEvent, error) {
		if !c.logs {
			return nil, nil
		}
		d := logsData{Filter: f, Available: s.logsAvailable(f)}
		d.Lines, d.Unread = s.logLines(ctx, f)
		html, err := s.fragment("logs", "log-lines", d)
		if err != nil {
			return nil, err
		}
		return []sseEvent{{Name: "logs", Data: html}}, nil
	}
	s.serveLive(w, r, ls)
}
