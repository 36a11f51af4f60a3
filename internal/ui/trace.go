package ui

import (
	"net/http"
	"net/url"
	"strings"

	"wharf/internal/persistence"
)

// The Trace page draws everything that came from one origin event or carries one
// correlation id as timelines: final statuses first, then per message its own lines
// and per delivery its transitions, receipts and whatever other lines its history holds
// (kinds are drawn as they are named, so lines of new kinds show without a change here).
// It asks the store the same question, with the same checks, as GET /api/v1/trace.

var _ = registerPages([]string{"trace"}, (*Server).traceRoutes)

func (s *Server) traceRoutes() []pageRoute {
	return []pageRoute{{"GET /ui/trace", http.HandlerFunc(s.tracePage)}}
}

// traceData is the page: the search as typed, why it was refused, and the trace.
type traceData struct {
	OriginEventID, CorrelationID string
	Errors                       map[string]string
	Searched                     bool
	Messages                     []traceMessage
	Truncated                    bool
	Limit                        int
}

// traceMessage is one message's timelines: its own lines and one per delivery.
type traceMessage struct {
	persistence.TracedMessage
	Lines      []persistence.HistoryEntry // lines about the message itself
	Deliveries []traceDelivery
}

type traceDelivery struct {
	persistence.Delivery
	Lines []persistence.HistoryEntry
}

func (s *Server) tracePage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d := traceData{OriginEventID: strings.TrimSpace(q.Get("origin_event_id")), CorrelationID: strings.TrimSpace(q.Get("correlation_id")),
		Limit: persistence.MaxTraceMessages}
	status := http.StatusOK
	if traceSearched(q) {
		d.Searched = true
		tq := persistence.TraceQuery{OriginEventID: d.OriginEventID, CorrelationID: d.CorrelationID}
		if err := tq.Check(); err != nil {
			d.Errors, status = fieldErrors(err), http.StatusBadRequest
		} else {
			tr, err := s.store.Trace(r.Context(), tq)
			if err != nil {
				s.fail(w, r, err)
				return
			}
			d.Messages, d.Truncated = traceTimelines(tr), tr.Truncated
		}
	}
	s.render(w, r, status, "trace", pageData{Title: "Trace", Data: d})
}

// traceSearched tells a search (even an empty one) from the page opened bare.
func traceSearched(q url.Values) bool {
	return q.Has("origin_event_id") || q.Has("correlation_id")
}

// traceTimelines sorts each message's history into its own lines and each delivery's,
// keeping the order the lines were written.
func traceTimelines(tr persistence.Trace) []traceMessage {
	out := make([]traceMessage, len(tr.Messages))
	for i, m := range tr.Messages {
		tm := traceMessage{TracedMessage: m}
		at := make(map[int64]int, len(m.Deliveries))
		for j, d := range m.Deliveries {
			at[d.ID] = j
			tm.Deliveries = append(tm.Deliveries, traceDelivery{Delivery: d})
		}
		for _, h := range m.History {
			if h.DeliveryID != nil {
				if j, ok := at[*h.DeliveryID]; ok {
					tm.Deliveries[j].Lines = append(tm.Deliveries[j].Lines, h)
					continue
				}
			}
			tm.Lines = append(tm.Lines, h)
		}
		out[i] = tm
	}
	return out
}

// Badge is the badge-* class of the delivery's state.
func (d traceDelivery) Badge() string { return deliveryBadge(d.State) }
