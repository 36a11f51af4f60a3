package ui

import (
	"context"

	"wharf/internal/persistence"
)

// prunedOf is what retention removed of a message, nil when it removed nothing.
func (s *Server) prunedOf(ctx context.Context, id int64) (*persistence.Pruned, error) {
	all, err := s.store.PrunedFor(ctx, []int64{id})
	if err != nil {
		return nil, err
	}
	p, ok := all[id]
	if !ok {
		return nil, nil
	}
	return &p, nil
}
