package api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"

	"wharf/internal/persistence"
	"wharf/internal/records"
)

// DeadLetterOps applies an operator's bulk action to deliveries and wakes the targets
// that have work again; each id has its result.
type DeadLetterOps interface {
	ActOnDeliveries(ctx context.Context, action persistence.DeliveryAction, ids []int64, actor string) ([]persistence.DeliveryActionResult, error)
}

// listDeadLetters lists failed and parked deliveries, filtered as records.ParseDeadLetterFilter reads.
func (s *Server) listDeadLetters(w http.ResponseWriter, r *http.Request) {
	p, err := parsePage(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q := r.URL.Query()
	if err := onlyParams(q, records.DeadLetterParams...); err != nil {
		s.fail(w, r, err)
		return
	}
	f, err := records.ParseDeadLetterFilter(q, time.Now())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	f.ListOptions = persistence.ListOptions{Limit: p.limit, Offset: p.offset}
	list, total, err := s.store.ListDeadLetters(r.Context(), f)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, listBody("deliveries", list, total, p))
}

// bulkRequest names the deliveries of a bulk action: explicit ids, or every dead letter
// the filter matches as long as they are at most Max.
type bulkRequest struct {
	IDs    []int64           `json:"ids"`
	Filter map[string]string `json:"filter"`
	Max    int               `json:"max"`
}

// bulkResult is one delivery's fate: the delivery as the action left it, or why the
// action did not apply.
type bulkResult struct {
	ID       int64                 `json:"id"`
	OK       bool                  `json:"ok"`
	Delivery *persistence.Delivery `json:"delivery,omitempty"`
	Error    *errorObject          `json:"error,omitempty"`
}

type bulkResponse struct {
	Action    persistence.DeliveryAction `json:"action"`
	Requested int                        `json:"requested"`
	Succeeded int                        `json:"succeeded"`
	Results   []bulkResult               `json:"results"`
}

// bulkDeadLetters answers POST /api/v1/dead-letters/<action>.
func (s *Server) bulkDeadLetters(action persistence.DeliveryAction) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req bulkRequest
		if err := decodeJSON(r, &req); err != nil {
			s.fail(w, r, err)
			return
		}
		ids, err := s.bulkIDs(r, action, req)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		res, err := s.ops.ActOnDeliveries(r.Context(), action, ids, actor(r))
		if err != nil {
			s.fail(w, r, err)
			return
		}
		out := bulkResponse{Action: action, Requested: len(ids), Results: make([]bulkResult, len(res))}
		for i, x := range res {
			br := bulkResult{ID: x.ID, OK: x.Err == nil}
			if x.Err == nil {
				out.Succeeded++
				br.Delivery = &res[i].Delivery
			} else {
				ae := s.classify(r, x.Err)
				br.Error = &errorObject{Code: ae.code, Message: ae.message}
			}
			out.Results[i] = br
		}
		writeJSON(w, http.StatusOK, out)
	}
}

// bulkIDs resolves a bulk request to ids: exactly one of ids and filter; a filter takes
// only the dead letters in a state the action takes.
func (s *Server) bulkIDs(r *http.Request, action persistence.DeliveryAction, req bulkRequest) ([]int64, error) {
	switch {
	case req.IDs != nil && req.Filter != nil:
		return nil, invalid("filter", "give either ids or filter, not both")
	case req.IDs != nil:
		if req.Max != 0 {
			return nil, invalid("max", "applies only to filter")
		}
		if len(req.IDs) == 0 || len(req.IDs) > persistence.MaxBulkDeliveries {
			return nil, invalid("ids", fmt.Sprintf("must list 1 to %d delivery ids", persistence.MaxBulkDeliveries))
		}
		return req.IDs, nil
	case req.Filter == nil:
		return nil, invalid("ids", "give either ids or filter")
	}
	limit := req.Max
	if limit == 0 {
		limit = persistence.MaxBulkDeliveries
	}
	if limit < 1 || limit > persistence.MaxBulkDeliveries {
		return nil, invalid("max", fmt.Sprintf("must be a whole number from 1 to %d", persistence.MaxBulkDeliveries))
	}
	v := url.Values{}
	for k, x := range req.Filter {
		if !slices.Contains(records.DeadLetterParams, k) {
			return nil, invalid("filter."+k, "unknown filter")
		}
		v.Set(k, x)
	}
	f, err := records.ParseDeadLetterFilter(v, time.Now())
	if err != nil {
		return nil, err
	}
	if !action.Narrow(&f) {
		return nil, &apiError{status: http.StatusConflict, code: "NO_DELIVERIES",
			message: fmt.Sprintf("%s does not take %s deliveries", action, f.State)}
	}
	f.Limit = limit
	list, total, err := s.store.ListDeadLetters(r.Context(), f)
	switch {
	case err != nil:
		return nil, err
	case total > limit:
		return nil, &apiError{status: http.StatusConflict, code: "TOO_MANY_DELIVERIES",
			message: fmt.Sprintf("the filter matches %d deliveries, more than max %d: narrow the filter or raise max (at most %d)",
				total, limit, persistence.MaxBulkDeliveries),
			details: map[string]any{"matched": total, "max": limit}}
	case total == 0:
		return nil, &apiError{status: http.StatusConflict, code: "NO_DELIVERIES", message: "the filter matches no dead letters"}
	}
	ids := make([]int64, len(list))
	for i, d := range list {
		ids[i] = d.ID
	}
	return ids, nil
}
