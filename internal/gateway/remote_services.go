package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"wharf/internal/audit"
	"wharf/internal/persistence"
	"wharf/internal/services"
	"wharf/internal/ui"
)

// In a distributed installation the plugin instances run in plugin processes, while the
// operator acts in the API process. Every process with the plugin role answers start,
// stop, restart and list requests on a bus subject of its own; the API process finds the
// processes that serve an instance from their heartbeats and asks each of them.

// serviceControlTimeout bounds one request: a stop or restart drains in-flight work.
const serviceControlTimeout = time.Minute

// processServicesSubject is the request/reply subject of one process's plugin instances.
func processServicesSubject(processID string) string { return "process." + processID + ".services" }

type serviceRequest struct {
	Action string                   `json:"action"` // start, stop, restart or list
	Name   persistence.InstanceName `json:"name,omitempty"`
	Actor  string                   `json:"actor,omitempty"` // who acts, for the audit log
}

type serviceReply struct {
	Error    string            `json:"error,omitempty"`
	NotFound bool              `json:"not_found,omitempty"`
	Statuses []services.Status `json:"statuses,omitempty"`
}

// serveServiceControl answers the API process's requests for this process's instances.
func (g *Gateway) serveServiceControl() error {
	_, err := g.Bus.Respond(processServicesSubject(g.holder), func(_ string, data []byte) []byte {
		var req serviceRequest
		var rep serviceReply
		if err := json.Unmarshal(data, &req); err != nil {
			rep.Error = "bad request: " + err.Error()
			return mustJSON(rep)
		}
		ctx, cancel := context.WithTimeout(audit.WithActor(context.Background(), req.Actor), serviceControlTimeout)
		defer cancel()
		var err error
		switch req.Action {
		case "start":
			err = g.Services.Start(ctx, req.Name)
		case "stop":
			err = g.Services.Stop(ctx, req.Name)
		case "restart":
			err = g.Services.Restart(ctx, req.Name)
		case "list":
			rep.Statuses, err = g.Services.List(ctx)
		default:
			err = fmt.Errorf("unknown action %q", req.Action)
		}
		if err != nil {
			rep.Error, rep.NotFound = err.Error(), errors.Is(err, persistence.ErrNotFound)
		}
		return mustJSON(rep)
	})
	if err != nil {
		return fmt.Errorf("serve service control: %w", err)
	}
	return nil
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v) // the replies hold strings, booleans and times only
	return b
}

// serviceControl is what the UI and REST act on: this process's own instances when it
// runs them, else the plugin processes' over the bus.
func (g *Gateway) serviceControl() ui.ServiceControl {
	if g.roles.Plugins {
		return g.Services
	}
	return remoteServices{g}
}

// remoteServices controls the plugin instances of the installation's plugin processes
// from a process that runs none (the API process).
type remoteServices struct{ g *Gateway }

// processesServing are the live plugin processes that run instances of typ (name too
// when the process runs a single instance).
func (r remoteServices) processesServing(ctx context.Context, typ persistence.PluginType, name persistence.InstanceName) ([]string, error) {
	procs, err := r.g.Store.ListProcesses(ctx)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	var ids []string
	for _, p := range procs {
		if p.Stale(now) {
			continue
		}
		for _, role := range p.Roles {
			if servesInstance(role, typ, name) {
				ids = append(ids, p.ID)
				break
			}
		}
	}
	return ids, nil
}

// servesInstance reads a role as Roles.Names writes it: "plugin" (every instance),
// "plugin:TYPE" or "plugin:TYPE/NAME".
func servesInstance(role string, typ persistence.PluginType, name persistence.InstanceName) bool {
	if role == "plugin" {
		return true
	}
	spec, ok := strings.CutPrefix(role, "plugin:")
	if !ok {
		return false
	}
	if typ == "" {
		return true // any plugin process
	}
	t, n, one := strings.Cut(spec, "/")
	return t == string(typ) && (!one || n == string(name))
}

func (r remoteServices) ask(ctx context.Context, processID string, req serviceRequest) (serviceReply, error) {
	var rep serviceReply
	ctx, cancel := context.WithTimeout(ctx, serviceControlTimeout)
	defer cancel()
	data, err := r.g.Bus.Request(ctx, processServicesSubject(processID), mustJSON(req))
	if err != nil {
		return rep, fmt.Errorf("process %s: %w", processID, err)
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		return rep, fmt.Errorf("process %s: bad reply: %w", processID, err)
	}
	return rep, nil
}

func (r remoteServices) act(ctx context.Context, action string, name persistence.InstanceName) error {
	rec, err := r.g.Store.GetPluginConfig(ctx, name)
	if err != nil {
		return fmt.Errorf("%s %s: %w", action, name, err)
	}
	ids, err := r.processesServing(ctx, rec.Type, name)
	if err != nil {
		return fmt.Errorf("%s %s: %w", action, name, err)
	}
	if len(ids) == 0 {
		return fmt.Errorf("%s %s: no running plugin process serves it; start one with wharf serve plugin %s: %w",
			action, name, rec.Type, persistence.ErrConflict)
	}
	var errs []error
	for _, id := range ids {
		rep, err := r.ask(ctx, id, serviceRequest{Action: action, Name: name, Actor: audit.ActorFrom(ctx)})
		switch {
		case err != nil:
			errs = append(errs, err)
		case rep.Error != "":
			errs = append(errs, fmt.Errorf("process %s: %s", id, rep.Error))
		}
	}
	return errors.Join(errs...)
}

func (r remoteServices) Start(ctx context.Context, name persistence.InstanceName) error {
	return r.act(ctx, "start", name)
}

func (r remoteServices) Stop(ctx context.Context, name persistence.InstanceName) error {
	return r.act(ctx, "stop", name)
}

func (r remoteServices) Restart(ctx context.Context, name persistence.InstanceName) error {
	return r.act(ctx, "restart", name)
}

// List is every configured instance as the plugin processes report it: running where any
// process runs it, else failed where one failed to start it, else as configured here.
func (r remoteServices) List(ctx context.Context) ([]services.Status, error) {
	local, err := r.g.Services.List(ctx)
	if err != nil {
		return nil, err
	}
	ids, err := r.processesServing(ctx, "", "")
	if err != nil {
		return nil, err
	}
	best := map[persistence.InstanceName]services.Status{}
	for _, id := range ids {
		rep, err := r.ask(ctx, id, serviceRequest{Action: "list"})
		if err != nil || rep.Error != "" {
			r.g.log.Warn("list a plugin process's services", "process", id, "err", errors.Join(err, errors.New(rep.Error)))
			continue
		}
		for _, st := range rep.Statuses {
			if cur, ok := best[st.Name]; !ok || stateRank(st.State) > stateRank(cur.State) {
				best[st.Name] = st
			}
		}
	}
	for i, st := range local {
		if b, ok := best[st.Name]; ok && stateRank(b.State) > stateRank(st.State) {
			local[i] = b
		}
	}
	return local, nil
}

// stateRank orders what the processes report of one instance: one running copy makes it
// running.
func stateRank(s services.State) int {
	switch s {
	case services.StateRunning:
		return 4
	case services.StateDegraded:
		return 3
	case services.StateFailed:
		return 2
	case services.StateStopped:
		return 1
	}
	return 0
}
