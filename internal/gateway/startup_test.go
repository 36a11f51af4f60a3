package gateway_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"wharf/internal/config"
	"wharf/internal/gateway"
	"wharf/internal/gateway/gatewaytest"
	"wharf/internal/persistence/db/dbtest"
	"wharf/internal/secret"
	"wharf/internal/secret/secrettest"
)

// openCfg opens a gateway as the standalone command would and returns its error; a
// gateway that opens is started and shut down again.
func openCfg(t *testing.T, cfg config.Config) error {
	t.Helper()
	log := slog.New(slog.NewTextHandler(gatewaytest.LogWriter(t), &slog.HandlerOptions{Level: slog.LevelWarn}))
	g, err := gateway.Open(context.Background(), cfg, log)
	if err != nil {
		return err
	}
	if err := g.Start(context.Background()); err != nil {
		t.Errorf("start: %v", err)
	}
	if err := g.Shutdown(context.Background()); err != nil {
		t.Errorf("shutdown: %v", err)
	}
	return nil
}

// freeAddr is a loopback address nothing listens on when it returns.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// A failed Open returns its error rather than panicking in its clean-up, and releases
// what it had taken: the HTTP address can be bound again at once.
func TestOpenFailureReleasesWhatItTook(t *testing.T) {
	addr := freeAddr(t)
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.HTTPAddr = addr
	cfg.DBURL = "postgres://wharf@127.0.0.1:1/wharf?sslmode=disable&connect_timeout=5"
	err := openCfg(t, cfg)
	if err == nil {
		t.Fatal("Open with an unreachable database succeeded")
	}
	ln, lerr := net.Listen("tcp", addr)
	if lerr != nil {
		t.Fatalf("the HTTP address is still held after the failed Open (%v): %v", err, lerr)
	}
	ln.Close()
}

// A process whose secrets key file is not the one the database was sealed with stops at
// Open, naming the key the database wants.
func TestOpenRefusesWrongSecretsKey(t *testing.T) {
	for name, u := range dbtest.URLs() {
		t.Run(name, func(t *testing.T) {
			u = dbtest.ResolveURL(t, u)
			gw := gatewaytest.Start(t, gatewaytest.Options{DBURL: u})
			keys, err := secret.ReadKeys(filepath.Join(gw.DataDir, "secrets.key"))
			if err != nil {
				t.Fatal(err)
			}
			wrong := filepath.Join(t.TempDir(), "wrong.key")
			other := secrettest.WriteNewKey(t, wrong)
			cfg := config.Default()
			cfg.DataDir, cfg.DBURL, cfg.HTTPAddr, cfg.SecretsKeyFile = gw.DataDir, u, "127.0.0.1:0", wrong
			err = openCfg(t, cfg)
			if !errors.Is(err, secret.ErrWrongKey) {
				t.Fatalf("Open with another secrets key: %v, want ErrWrongKey", err)
			}
			if want := keys[0].ID; !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "WHARF_SECRETS_KEY_FILE") {
				t.Errorf("the error does not name key %s and the variable: %v", want, err)
			}
			// The right key, also as one of several (an unfinished rekey), opens it.
			both := filepath.Join(t.TempDir(), "both.key")
			if err := secret.WriteKeyFile(both, other, keys[0]); err != nil {
				t.Fatal(err)
			}
			cfg.SecretsKeyFile = both
			if err := openCfg(t, cfg); err != nil {
				t.Fatalf("Open with the database's key as the previous one: %v", err)
			}
			if _, err := os.Stat(wrong); err != nil {
				t.Errorf("a key file the operator gave was removed: %v", err)
			}
		})
	}
}
