package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"wharf/internal/audit"
	"wharf/internal/secret/rekey"
)

func runSecrets(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, pos, err := loadConfig("secrets", args, "data-dir", "db-url", "log-level")
	if err != nil {
		return err
	}
	if len(pos) != 1 || pos[0] != "rekey" {
		return fmt.Errorf("%w: secrets needs rekey, and no other argument", errUsage)
	}
	keyPath := cfg.SecretsKeyPath()
	// Rekeying works on what exists: it must neither make a database nor a key file.
	if _, err := os.Stat(keyPath); err != nil {
		return fmt.Errorf("secrets key file %s: %w; set WHARF_SECRETS_KEY_FILE or --data-dir to where the gateway keeps it", keyPath, err)
	}
	if !cfg.IsPostgres() {
		if _, err := os.Stat(cfg.SQLitePath()); errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("no database at %s: set --data-dir (or --db-url) to the gateway's", cfg.SQLitePath())
		}
	}
	store, err := openStore(ctx, cfg, stderr)
	if err != nil {
		return err
	}
	defer store.Close()
	if seeded, err := store.Seeded(ctx); err != nil {
		return err
	} else if !seeded {
		return errors.New("the database holds no gateway's data: set --data-dir (or --db-url) to the gateway's")
	}
	res, err := rekey.Run(ctx, store, keyPath)
	if err != nil {
		return fmt.Errorf("secrets rekey: %w", err)
	}
	dropped, _ := json.Marshal(res.Dropped)
	newID, _ := json.Marshal(res.KeyID)
	if err := store.RecordAudit(cliActor(ctx), "rekey", "secrets", res.KeyID, "secrets key",
		[]audit.Change{{Path: "key_ids", Old: dropped, New: newID}}); err != nil {
		return fmt.Errorf("secrets rekey: done, but recording it in the audit log failed: %w", err)
	}
	if !res.Generated {
		fmt.Fprintf(stdout, "Completed an unfinished rekey to key %s.\n", res.KeyID)
	}
	fmt.Fprintf(stdout, "Resealed %d values under key %s (%d were under it already); removed keys: %v.\n",
		res.Resealed, res.KeyID, res.Kept, res.Dropped)
	fmt.Fprintf(stdout, "Back up %s now: backups of the old key no longer open this database.\n", keyPath)
	return nil
}
