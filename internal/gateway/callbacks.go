package gateway

import (
	"context"
	"path/filepath"

	"wharf/internal/api"
	"wharf/internal/callbacks"
)

// callbackDir is where a process that serves the API spools accepted status callbacks.
const callbackDir = "callbacks"

// startCallbacks opens the status callback spool in the data directory (applying what an
// earlier run accepted and did not apply) and returns the API's intake.
func (g *Gateway) startCallbacks() (api.Callbacks, error) {
	log := g.log.With("component", "callbacks")
	sp, err := callbacks.Open(filepath.Join(g.cfg.DataDir, callbackDir), g.Store, g.Metrics, log)
	if err != nil {
		return nil, err
	}
	sp.Alerts = g.Alerts
	sp.Start()
	g.callbackSpool = sp
	return callbacks.Intake{
		Verifier: &callbacks.Verifier{Secrets: g.Store, Opener: g.Box, Refusals: g.Metrics, Log: log},
		Spool:    sp,
	}, nil
}

// stopCallbacks applies what the spool holds within ctx and closes it; the HTTP server
// has stopped, so nothing new arrives.
func (g *Gateway) stopCallbacks(ctx context.Context) error {
	if g.callbackSpool == nil {
		return nil
	}
	return g.callbackSpool.Stop(ctx)
}
