package main

import (
	"context"
	"fmt"
	"io"

	"wharf/internal/services"
)

// serviceLister reports the plugin instances and how they stand.
type serviceLister interface {
	List(ctx context.Context) ([]services.Status, error)
}

// printSummary prints what a started process offers and, never hidden behind "running",
// every plugin instance that failed to start with its reason.
func printSummary(ctx context.Context, w io.Writer, httpAddr, dataDir string, svcs serviceLister) error {
	list, err := svcs.List(ctx)
	if err != nil {
		return fmt.Errorf("start-up summary: %w", err)
	}
	var failed []services.Status
	for _, s := range list {
		if s.State == services.StateFailed {
			failed = append(failed, s)
		}
	}
	switch len(failed) {
	case 0:
		fmt.Fprintf(w, "Wharf is running: http://%s/ui/ and /api/v1 (data in %s)\n", httpAddr, dataDir)
	default:
		fmt.Fprintf(w, "Wharf is running with %d of its services failed: http://%s/ui/ and /api/v1 (data in %s)\n", len(failed), httpAddr, dataDir)
	}
	for _, s := range list {
		if s.Addr != "" {
			fmt.Fprintf(w, "  %s (%s) listens on %s\n", s.Name, s.Type, s.Addr)
		}
	}
	for _, s := range failed {
		fmt.Fprintf(w, "  FAILED %s (%s): %s; fix it, then start it on the Services page or restart\n", s.Name, s.Type, s.Error)
	}
	return nil
}
