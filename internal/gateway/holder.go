package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"wharf/internal/persistence/db"
)

// holderFile holds the id this process's claims carry across its restarts: one data
// directory is one process, so the id lives there.
const holderFile = "holder.id"

// loadOrCreateHolder reads the process's holder id from the data directory, creating it
// on the first start. The id is written under a temporary name and linked into place, so
// the file is never seen half-written and two starts racing agree on one id.
func loadOrCreateHolder(dataDir string) (string, error) {
	path := filepath.Join(dataDir, holderFile)
	id, err := readHolder(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return id, err
	}
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("create %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(dataDir, holderFile+".tmp-*")
	if err != nil {
		return "", fmt.Errorf("create %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(hex.EncodeToString(b) + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("create %s: %w", path, err)
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("create %s: %w", path, err)
	}
	return readHolder(path)
}

func readHolder(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	id := strings.TrimSpace(string(b))
	if id == "" {
		return "", fmt.Errorf("read %s: the file is empty; delete it and start again", path)
	}
	if err := db.ValidHolder(id); err != nil {
		return "", fmt.Errorf("read %s: %w; delete it and start again", path, err)
	}
	return id, nil
}

// releasePreviousClaims hands back at once what this process's previous run still held
// when it ended without releasing (killed, power cut), instead of after the lease.
func (g *Gateway) releasePreviousClaims(ctx context.Context) error {
	ds, err := g.Store.ReleasePreviousClaims(ctx, time.Now())
	if err != nil {
		return err
	}
	if len(ds) > 0 {
		g.log.Info("released the deliveries the previous run held", "count", len(ds))
	}
	return nil
}
