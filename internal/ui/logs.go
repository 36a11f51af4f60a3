package ui

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"
	"unicode/utf8"
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
	Level  string
	Q      string
	min    slog.Level
	Errors map[string]string
}

func parseLogsFilter(q url.Values) logsFilter {
	f := logsFilter{Level: q.Get("level"), Q: q.Get("q"), min: slog.LevelDebug, Errors: map[string]string{}}
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
	Available bool
	Lines     []logLine
	LiveURL   string
}

func (s *Server) logLines(f logsFilter) []logLine {
	if s.logs == nil {
		return nil
	}
	var out []logLine
	for _, e := range s.logs.Tail(f.min, f.Q, logsShown) {
		out = append(out, logLine{Time: e.Time, Level: e.Level.String(), Class: levelBadge(e.Level), Message: e.Message, Attrs: e.Attrs})
	}
	return out
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
	d := logsData{Filter: f, Available: s.logs != nil}
	for _, l := range logLevels {
		d.Levels = append(d.Levels, l.Name)
	}
	if len(f.Errors) > 0 {
		s.render(w, r, http.StatusBadRequest, "logs", pageData{Title: "Logs", Data: d})
		return
	}
	d.Lines = s.logLines(f)
	v := url.Values{"level": {f.Level}}
	if f.Q != "" {
		v.Set("q", f.Q)
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
	s.serveLive(w, r, liveStream{logs: true, every: logsEvery,
		render: func(ctx context.Context, c changes) ([]sseEvent, error) {
			if !c.logs {
				return nil, nil
			}
			html, err := s.fragment("logs", "log-lines", logsData{Filter: f, Available: s.logs != nil, Lines: s.logLines(f)})
			if err != nil {
				return nil, err
			}
			return []sseEvent{{Name: "logs", Data: html}}, nil
		}})
}
