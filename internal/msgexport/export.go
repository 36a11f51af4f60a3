// Package msgexport writes a filtered message list as CSV, the same way for the REST API
// and the web UI: streamed page by page, bounded by MaxRows (stated in the response's
// headers), every cell quoted as encoding/csv does and guarded against spreadsheet
// formulas.
package msgexport

import (
	"context"
	"encoding/csv"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"wharf/internal/persistence"
)

const (
	// MaxRows bounds one export; the headers say when the list held more.
	MaxRows = 10000
	// pageRows is how many rows one store read fetches.
	pageRows = 500
)

// Response headers that state the bound and what it left out.
const (
	HeaderMaxRows   = "Wharf-Export-Max-Rows"
	HeaderTotal     = "Wharf-Export-Total"
	HeaderTruncated = "Wharf-Export-Truncated"
)

// Lister reads one page of messages and the number the filter matches.
type Lister interface {
	ListMessages(ctx context.Context, f persistence.MessageFilter) ([]persistence.Message, int, error)
}

// Columns heads the export; Row fills them in this order.
var Columns = []string{"id", "created_at", "direction", "from", "to", "source", "status",
	"original_file_name", "size", "correlation_id", "sha256"}

// Directions tells, per message, which way it went; nil leaves the column empty.
type Directions func(persistence.Message) persistence.Direction

// Send writes every message f matches, up to MaxRows, newest first, as a CSV attachment.
// A failure before the first byte is returned for the caller to answer; once the status is
// sent, a failed read can only cut the file short: it is logged and the handler aborted.
func Send(w http.ResponseWriter, r *http.Request, log *slog.Logger, l Lister, f persistence.MessageFilter, dir Directions) error {
	ctx := r.Context()
	// Later arrivals would shift the pages under the export; it stops at its own start.
	if now := time.Now(); f.Until.IsZero() || f.Until.After(now) {
		f.Until = now
	}
	f.Offset, f.Limit = 0, pageRows
	msgs, total, err := l.ListMessages(ctx, f)
	if err != nil {
		return fmt.Errorf("export messages: %w", err)
	}
	h := w.Header()
	h.Set("Content-Type", "text/csv; charset=utf-8")
	h.Set("Content-Disposition", `attachment; filename="messages.csv"`)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set(HeaderMaxRows, strconv.Itoa(MaxRows))
	h.Set(HeaderTotal, strconv.Itoa(total))
	h.Set(HeaderTruncated, strconv.FormatBool(total > MaxRows))
	w.WriteHeader(http.StatusOK)

	cw := csv.NewWriter(w)
	_ = cw.Write(Columns)
	written := 0
	for len(msgs) > 0 && written < MaxRows {
		for _, m := range msgs[:min(len(msgs), MaxRows-written)] {
			_ = cw.Write(Row(m, dir))
			written++
		}
		cw.Flush()
		if err := cw.Error(); err != nil {
			abort(ctx, log, err)
		}
		if len(msgs) < pageRows || written >= MaxRows {
			break
		}
		f.Offset += pageRows
		if msgs, _, err = l.ListMessages(ctx, f); err != nil {
			abort(ctx, log, err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		abort(ctx, log, err)
	}
	return nil
}

// abort ends a response already under way; a client that went away is not worth a log line.
func abort(ctx context.Context, log *slog.Logger, err error) {
	if ctx.Err() == nil {
		log.ErrorContext(ctx, "message export cut short", "error", err)
	}
	panic(http.ErrAbortHandler)
}

// Row is one message as the export's cells.
func Row(m persistence.Message, dir Directions) []string {
	var d persistence.Direction
	if dir != nil {
		d = dir(m)
	}
	return []string{
		strconv.FormatInt(m.ID, 10),
		m.CreatedAt.UTC().Format(time.RFC3339Nano),
		string(d),
		Cell(string(m.From)),
		Cell(string(m.To)),
		Cell(string(m.Source)),
		string(m.Status),
		Cell(string(m.OriginalFileName)),
		strconv.FormatInt(m.Size, 10),
		Cell(m.CorrelationID),
		m.SHA256,
	}
}

// Cell guards text a partner or a system chose: a spreadsheet takes a cell beginning with
// = + - @ (or a tab or carriage return before one) for a formula, so it gets a leading
// apostrophe and stays text.
func Cell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// PartyLister reads one page of parties of a kind.
type PartyLister interface {
	ListParties(ctx context.Context, kind persistence.PartyKind, opt persistence.ListOptions) ([]persistence.Party, int, error)
}

// LoadPartners reads every partner, a page at a time.
func LoadPartners(ctx context.Context, l PartyLister) ([]persistence.Party, error) {
	var out []persistence.Party
	for {
		ps, total, err := l.ListParties(ctx, persistence.PartyPartner, persistence.ListOptions{Limit: 1000, Offset: len(out)})
		if err != nil {
			return nil, fmt.Errorf("list partners: %w", err)
		}
		out = append(out, ps...)
		if len(ps) == 0 || len(out) >= total {
			return out, nil
		}
	}
}

// DirectionsOf tells a message's direction by its parties: from one of partners is
// inbound, to one outbound, anything else (organization to organization) neither.
func DirectionsOf(partners []persistence.Party) Directions {
	names := make(map[persistence.PartyName]bool, len(partners))
	for _, p := range partners {
		names[p.Name] = true
	}
	return func(m persistence.Message) persistence.Direction {
		switch {
		case names[m.From]:
			return persistence.DirectionInbound
		case names[m.To]:
			return persistence.DirectionOutbound
		}
		return ""
	}
}
