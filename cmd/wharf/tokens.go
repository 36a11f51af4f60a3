package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"text/tabwriter"
	"time"

	"wharf/internal/audit"
	"wharf/internal/auth/apitoken"
	"wharf/internal/config"
	"wharf/internal/logging"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
	"wharf/internal/records"
)

// cliActor names who a command's changes are audited as: cli:<operating system user>.
func cliActor(ctx context.Context) context.Context {
	name := "cli"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name += ":" + u.Username
	}
	return audit.WithActor(ctx, name)
}

func openStore(ctx context.Context, cfg config.Config, stderr io.Writer) (*db.Store, error) {
	if err := ensureDir(cfg.DataDir); err != nil {
		return nil, err
	}
	log := logging.New(stderr, cfg.LogLevel)
	key, err := audit.LoadOrCreateKey(cfg.AuditKeyPath(), log)
	if err != nil {
		return nil, err
	}
	return db.Open(ctx, db.Options{URL: cfg.DBURL, SQLitePath: cfg.SQLitePath(), Logger: log, AuditKey: key})
}

func runTokens(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, target, pos, err := loadTokensConfig(args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return fmt.Errorf("%w: tokens needs create, list or revoke", errUsage)
	}
	sub, rest := pos[0], pos[1:]
	wantArgs := map[string]int{"create": 1, "list": 0, "revoke": 1}
	n, ok := wantArgs[sub]
	if !ok {
		return fmt.Errorf("%w: unknown tokens command %q", errUsage, sub)
	}
	if len(rest) != n {
		return fmt.Errorf("%w: tokens %s takes %d argument(s)", errUsage, sub, n)
	}
	if target != "" && sub != "create" {
		return fmt.Errorf("%w: --target belongs to tokens create", errUsage)
	}
	if n == 1 {
		if err := apitoken.CheckName(rest[0]); err != nil {
			return fmt.Errorf("invalid token name %q: use 1 to 64 of a-z, 0-9, _ and -", rest[0])
		}
	}
	ctx = cliActor(ctx)
	store, err := openStore(ctx, cfg, stderr)
	if err != nil {
		return err
	}
	defer store.Close()
	switch sub {
	case "create":
		_, token, err := records.CreateAPIToken(ctx, store, rest[0], target)
		if err != nil {
			return err
		}
		if target != "" {
			fmt.Fprintf(stdout, "Token %q created; it may only complete and fail deliveries of %s. It is shown once; keep it safe:\n", rest[0], target)
		} else {
			fmt.Fprintf(stdout, "Token %q created. It is shown once; keep it safe:\n", rest[0])
		}
		fmt.Fprintln(stdout, token)
	case "list":
		toks, err := store.ListAPITokens(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tSCOPE\tCREATED\tLAST USED\tREVOKED")
		for _, t := range toks {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.Name, tokenScope(t), t.CreatedAt.Format(time.RFC3339), timeOrDash(t.LastUsedAt), timeOrDash(t.RevokedAt))
		}
		return tw.Flush()
	case "revoke":
		if err := store.RevokeAPIToken(ctx, rest[0]); err != nil {
			return fmt.Errorf("revoke token %s: %w", rest[0], err)
		}
		fmt.Fprintf(stdout, "Token %q revoked.\n", rest[0])
	}
	return nil
}

// tokenScope is a token's scope as lists show it: target:<instance>, or all for the
// whole REST API.
func tokenScope(t persistence.APIToken) string {
	if t.Target == "" {
		return "all"
	}
	return "target:" + string(t.Target)
}

// loadTokensConfig is loadConfig with the tokens-only --target flag added (empty when
// not given).
func loadTokensConfig(args []string) (config.Config, string, []string, error) {
	cfg, err := config.FromEnv(os.Environ())
	if err != nil {
		return cfg, "", nil, err
	}
	fs := flag.NewFlagSet("tokens", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg.RegisterFlags(fs, "data-dir", "db-url", "log-level")
	target := fs.String("target", "", "target instance whose deliveries the token may complete and fail")
	pos, err := config.ParseArgs(fs, args)
	if err != nil {
		return cfg, "", nil, fmt.Errorf("%w: tokens: %v", errUsage, err)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, "", nil, err
	}
	return cfg, *target, pos, nil
}

func timeOrDash(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Format(time.RFC3339)
}
