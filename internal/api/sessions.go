package api

import (
	"context"
	"net/http"

	"wharf/internal/persistence"
)

// SessionOps are the operator's actions on ordered sessions: each returns one result per
// id (a state the action does not apply to is that result's ErrConflict) and wakes the
// targets that have work again.
type SessionOps interface {
	ResubmitDeliveries(ctx context.Context, ids []int64, actor string) ([]persistence.DeliveryActionResult, error)
	SkipDeliveries(ctx context.Context, ids []int64, actor string) ([]persistence.DeliveryActionResult, error)
}

// listSessions lists the blocked ordered sessions, filtered by target and party.
func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	p, err := parsePage(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	for name := range q {
		switch {
		case name != "target" && name != "party" && name != "limit" && name != "offset":
			s.fail(w, r, invalid(name, "unknown parameter"))
			return
		case len(q[name]) > 1:
			s.fail(w, r, invalid(name, "given more than once"))
			return
		}
	}
	f := persistence.SessionFilter{ListOptions: persistence.ListOptions{Limit: p.limit, Offset: p.offset}}
	if v := q.Get("target"); v != "" {
		if f.Target, err = persistence.ParseInstanceName(v); err != nil {
			s.fail(w, r, invalid("target", err.Error()))
			return
		}
	}
	if v := q.Get("party"); v != "" {
		if f.Party, err = persistence.ParsePartyName(v); err != nil {
			s.fail(w, r, invalid("party", err.Error()))
			return
		}
	}
	list, total, err := s.store.ListBlockedSessions(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, listBody("sessions", list, total, p))
}

// deliveryAction answers POST /api/v1/deliveries/{id}/<action> with the delivery as the
// action left it; a state the action does not apply to is 409 with code.
func (s *Server) deliveryAction(act func(SessionOps) func(context.Context, []int64, string) ([]persistence.DeliveryActionResult, error), code string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, err := pathID(r, "id")
		if err != nil {
			s.fail(w, r, err)
			return
		}
		res, err := act(s.ops)(r.Context(), []int64{id}, actor(r))
		if err == nil {
			err = res[0].Err
		}
		if err != nil {
			s.fail(w, r, withCode(err, persistence.ErrConflict, code))
			return
		}
		writeJSON(w, http.StatusOK, res[0].Delivery)
	}
}

func resubmitOp(o SessionOps) func(context.Context, []int64, string) ([]persistence.DeliveryActionResult, error) {
	return o.ResubmitDeliveries
}

func skipOp(o SessionOps) func(context.Context, []int64, string) ([]persistence.DeliveryActionResult, error) {
	return o.SkipDeliveries
}
