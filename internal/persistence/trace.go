package persistence

import "fmt"

// MaxTraceMessages bounds the messages one trace returns; a trace with more says it was
// truncated.
const MaxTraceMessages = 200

// TraceQuery names what to trace: exactly one of the two ids.
type TraceQuery struct {
	OriginEventID string
	CorrelationID string
}

// Check refuses a query that names neither id or both, or an id no message could carry,
// naming the parameter.
func (q TraceQuery) Check() error {
	var errs FieldErrors
	switch {
	case q.OriginEventID == "" && q.CorrelationID == "":
		errs.Add("origin_event_id", "give origin_event_id or correlation_id")
	case q.OriginEventID != "" && q.CorrelationID != "":
		errs.Add("correlation_id", "give origin_event_id or correlation_id, not both")
	}
	for _, f := range []struct{ name, v string }{{"origin_event_id", q.OriginEventID}, {"correlation_id", q.CorrelationID}} {
		if err := CheckReference(f.v); err != nil {
			errs.Add(f.name, err.Error())
		}
	}
	return errs.Err()
}

// String names the query as an operator reads it.
func (q TraceQuery) String() string {
	if q.OriginEventID != "" {
		return fmt.Sprintf("origin event id %q", q.OriginEventID)
	}
	return fmt.Sprintf("correlation id %q", q.CorrelationID)
}

// Trace is everything that came from one origin event or carries one correlation id:
// each message with its final status, its deliveries with their final states, and its
// whole history in the order it was written.
type Trace struct {
	Messages []TracedMessage `json:"messages"`
	// Truncated is set when more than MaxTraceMessages messages matched; the first ones
	// (by id) are returned.
	Truncated bool `json:"truncated"`
}

// TracedMessage is one message of a trace. Its status is its final status.
type TracedMessage struct {
	Message
	Deliveries []Delivery `json:"deliveries"`
	// History is every line of the message, of all kinds, in id order; a line about a
	// delivery names it.
	History []HistoryEntry `json:"history"`
	// Pruned says what retention removed of the message (its payloads, its history before
	// a time, and where that history was archived); nil when retention removed nothing.
	Pruned *Pruned `json:"pruned,omitempty"`
}
