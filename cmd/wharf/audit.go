package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"wharf/internal/audit"
	"wharf/internal/config"
	"wharf/internal/logging"
	"wharf/internal/persistence/db"
)

// errAuditFailed makes the command exit 1 after it printed the problems.
var errAuditFailed = errors.New("the audit log does not verify")

func runAudit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: audit needs verify or export", errUsage)
	}
	sub := args[0]
	own, rest, err := takeFlags(args[1:], "file", "after-id")
	if err != nil {
		return err
	}
	cfg, pos, err := loadConfig("audit", rest, "data-dir", "db-url", "log-level")
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("%w: audit %s takes no arguments, got %q", errUsage, sub, pos)
	}
	log := logging.New(stderr, cfg.LogLevel)
	// The key must exist: a new one would make every stored event look changed.
	key, err := audit.LoadKeyFile(cfg.AuditKeyPath(), log)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("no audit key at %s: set WHARF_AUDIT_KEY_FILE to the key the gateway uses", cfg.AuditKeyPath())
	}
	if err != nil {
		return err
	}
	switch sub {
	case "verify":
		if _, ok := own["after-id"]; ok {
			return fmt.Errorf("%w: audit verify takes --file, not --after-id", errUsage)
		}
		if f, ok := own["file"]; ok {
			return verifyAuditFile(f, key, stdout)
		}
		store, err := openAuditStore(ctx, cfg, key, stderr)
		if err != nil {
			return err
		}
		defer store.Close()
		n, problems, err := store.VerifyAudit(ctx)
		if err != nil {
			return err
		}
		return reportAudit(stdout, n, problems)
	case "export":
		if _, ok := own["file"]; ok {
			return fmt.Errorf("%w: audit export writes to standard output and takes --after-id, not --file", errUsage)
		}
		var after int64
		if v, ok := own["after-id"]; ok {
			if after, err = strconv.ParseInt(v, 10, 64); err != nil || after < 0 {
				return fmt.Errorf("%w: --after-id must be an event id (0 or more), got %q", errUsage, v)
			}
		}
		store, err := openAuditStore(ctx, cfg, key, stderr)
		if err != nil {
			return err
		}
		defer store.Close()
		w := bufio.NewWriter(stdout)
		enc := json.NewEncoder(w)
		if err := store.EachAudit(ctx, after, func(e audit.Event) error { return enc.Encode(e) }); err != nil {
			return err
		}
		return w.Flush()
	default:
		return fmt.Errorf("%w: unknown audit command %q", errUsage, sub)
	}
}

// openAuditStore opens the database with the existing audit key; schema messages stay
// off standard output, which an export writes to.
func openAuditStore(ctx context.Context, cfg config.Config, key []byte, stderr io.Writer) (*db.Store, error) {
	return db.Open(ctx, db.Options{URL: cfg.DBURL, SQLitePath: cfg.SQLitePath(), Logger: logging.New(stderr, cfg.LogLevel), AuditKey: key})
}

// verifyAuditFile checks an export (JSON lines, oldest first). An export that starts
// after event N is checked from its first event's prev_hash on.
func verifyAuditFile(path string, key []byte, stdout io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open audit export: %w", err)
	}
	defer f.Close()
	dec := json.NewDecoder(bufio.NewReader(f))
	var v *audit.Verifier
	for line := 1; ; line++ {
		var e audit.Event
		err := dec.Decode(&e)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("audit export %s, event %d: %w", path, line, err)
		}
		if v == nil {
			v = audit.NewVerifier(key, e.ID-1, e.PrevHash)
		}
		v.Add(e)
	}
	if v == nil {
		fmt.Fprintln(stdout, "The export holds no events.")
		return nil
	}
	n, problems := v.Result()
	return reportAudit(stdout, n, problems)
}

func reportAudit(stdout io.Writer, n int, problems []audit.Problem) error {
	if len(problems) == 0 {
		fmt.Fprintf(stdout, "The audit log verifies: %d events, none changed, none missing.\n", n)
		return nil
	}
	fmt.Fprintf(stdout, "The audit log does NOT verify (%d events checked):\n", n)
	for _, p := range problems {
		fmt.Fprintln(stdout, "  "+p.String())
	}
	return errAuditFailed
}

// takeFlags removes the command's own --name VALUE and --name=VALUE flags from args,
// leaving the global ones for loadConfig.
func takeFlags(args []string, names ...string) (map[string]string, []string, error) {
	own := map[string]string{}
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || !contains(names, name) {
			rest = append(rest, a)
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				return nil, nil, fmt.Errorf("%w: --%s needs a value", errUsage, name)
			}
			i++
			value = args[i]
		}
		own[name] = value
	}
	return own, rest, nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
