package db

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Process is one process of an installation as its last heartbeat reported it.
type Process struct {
	ID          string // the holder id, kept across the process's restarts
	Host        string
	Roles       []string
	Version     string
	StartedAt   time.Time
	HeartbeatAt time.Time
}

// maxProcessField bounds the host, roles and version a process reports.
const maxProcessField = 256

// RecordHeartbeat stores p as the latest word of its process (a row per process id).
func (s *Store) RecordHeartbeat(ctx context.Context, p Process) error {
	if p.ID == "" {
		return fmt.Errorf("record heartbeat: the process id is empty")
	}
	if err := ValidHolder(p.ID); err != nil {
		return fmt.Errorf("record heartbeat: %w", err)
	}
	roles := strings.Join(p.Roles, ",")
	for name, v := range map[string]string{"host": p.Host, "roles": roles, "version": p.Version} {
		if len(v) > maxProcessField {
			return fmt.Errorf("record heartbeat: %s is longer than %d bytes", name, maxProcessField)
		}
	}
	err := s.write(ctx, func(t *txn) error {
		_, err := t.exec(ctx, `INSERT INTO processes (id, host, roles, version, started_at, heartbeat_at)
			VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET host = excluded.host, roles = excluded.roles, version = excluded.version,
				started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at`,
			p.ID, p.Host, roles, p.Version, s.tv(p.StartedAt), s.tv(p.HeartbeatAt))
		return err
	})
	if err != nil {
		return fmt.Errorf("record heartbeat of %s: %w", p.ID, err)
	}
	return nil
}

// ListProcesses lists every process that ever sent a heartbeat, latest heartbeat first.
func (s *Store) ListProcesses(ctx context.Context) ([]Process, error) {
	var out []Process
	err := s.read(ctx, func(t *txn) error {
		rows, err := t.query(ctx, `SELECT id, host, roles, version, started_at, heartbeat_at FROM processes
			ORDER BY heartbeat_at DESC, id`)
		out, err = collect(rows, err, func(r rowScanner) (Process, error) {
			var p Process
			var roles string
			if err := r.Scan(&p.ID, &p.Host, &roles, &p.Version, timeCol{&p.StartedAt}, timeCol{&p.HeartbeatAt}); err != nil {
				return p, fmt.Errorf("read process: %w", err)
			}
			if roles != "" {
				p.Roles = strings.Split(roles, ",")
			}
			return p, nil
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	return out, nil
}

// HeartbeatInterval is how often every process reports itself; a process silent for
// three intervals is shown as stale (stopped, killed or cut off).
const HeartbeatInterval = 10 * time.Second

// Stale reports whether p has missed three heartbeats by now.
func (p Process) Stale(now time.Time) bool { return now.Sub(p.HeartbeatAt) > 3*HeartbeatInterval }
