package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"wharf/internal/auth/setuplink"
	"wharf/internal/config"
	"wharf/internal/persistence"
	"wharf/internal/persistence/db"
)

// firstAdminName is the administrator standalone creates on a database without users.
const firstAdminName persistence.UserName = "admin"

func runUsers(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, role, pos, err := loadUsersConfig(args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return fmt.Errorf("%w: users needs create, list, reset, disable, enable, delete or sign-out", errUsage)
	}
	sub, rest := pos[0], pos[1:]
	wantArgs := map[string]int{"create": 1, "list": 0, "reset": 1, "disable": 1, "enable": 1, "delete": 1, "sign-out": 1}
	n, ok := wantArgs[sub]
	if !ok {
		return fmt.Errorf("%w: unknown users command %q", errUsage, sub)
	}
	if len(rest) != n {
		return fmt.Errorf("%w: users %s takes %d argument(s)", errUsage, sub, n)
	}
	if role != "" && sub != "create" {
		return fmt.Errorf("%w: --role applies to users create only", errUsage)
	}
	var name persistence.UserName
	if n == 1 {
		if name, err = persistence.ParseUserName(rest[0]); err != nil {
			return err
		}
	}
	var base string
	if sub == "create" || sub == "reset" {
		// Known before the store is touched, so a missing public URL changes nothing.
		if base, err = cfg.BaseURL(); err != nil {
			return err
		}
	}
	ctx = cliActor(ctx)
	store, err := openStore(ctx, cfg, stderr)
	if err != nil {
		return err
	}
	defer store.Close()
	now := time.Now()

	if sub == "list" {
		return listUsers(ctx, store, stdout, now)
	}
	if sub == "create" {
		if role == "" {
			role = persistence.RoleOperator
		}
		u, token, err := setuplink.Create(ctx, store, persistence.User{Name: name, Role: role}, now)
		if errors.Is(err, persistence.ErrConflict) {
			return fmt.Errorf("user %q already exists; wharf users reset %s gives it a new set-up link", name, name)
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "User %q (%s) created. Send them this set-up link; it works once, until %s:\n",
			name, role, u.SetupExpiresAt.UTC().Format(time.RFC3339))
		fmt.Fprintln(stdout, setuplink.URL(base, token))
		return nil
	}

	u, err := store.GetUserByName(ctx, name)
	if err != nil {
		return err
	}
	switch sub {
	case "reset":
		token, expires, err := setuplink.Reset(ctx, store, u.ID, now)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Every session of %q has ended. Using this link replaces their password and TOTP; it works once, until %s:\n",
			name, expires.UTC().Format(time.RFC3339))
		fmt.Fprintln(stdout, setuplink.URL(base, token))
	case "disable", "enable":
		err := store.SetUserDisabled(ctx, u.ID, sub == "disable")
		if errors.Is(err, persistence.ErrLastUser) {
			return lastUserErr(err)
		}
		if err != nil {
			return err
		}
		if sub == "disable" {
			fmt.Fprintf(stdout, "User %q disabled; their sessions have ended.\n", name)
		} else {
			fmt.Fprintf(stdout, "User %q enabled.\n", name)
		}
	case "delete":
		err := store.DeleteUser(ctx, u.ID)
		if errors.Is(err, persistence.ErrLastUser) {
			return lastUserErr(err)
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "User %q deleted.\n", name)
	case "sign-out":
		if err := store.BumpUserGeneration(ctx, u.ID); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Every session of %q has ended.\n", name)
	}
	return nil
}

// loadUsersConfig is loadConfig with the users-only --role flag added. The role is
// empty when the flag is not given.
func loadUsersConfig(args []string) (config.Config, persistence.UserRole, []string, error) {
	cfg, err := config.FromEnv(os.Environ())
	if err != nil {
		return cfg, "", nil, err
	}
	fs := flag.NewFlagSet("users", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg.RegisterFlags(fs, "data-dir", "db-url", "http-addr", "public-url", "log-level")
	var role persistence.UserRole
	fs.Func("role", "role of a new user", func(s string) (err error) {
		role, err = persistence.ParseUserRole(s)
		return err
	})
	pos, err := config.ParseArgs(fs, args)
	if err != nil {
		return cfg, "", nil, fmt.Errorf("%w: users: %v", errUsage, err)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, "", nil, err
	}
	return cfg, role, pos, nil
}

func lastUserErr(err error) error {
	return fmt.Errorf("refused, enable or create another administrator first: %w", err)
}

func listUsers(ctx context.Context, store *db.Store, stdout io.Writer, now time.Time) error {
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tROLE\tSTATE\tLAST SIGN-IN")
	for offset := 0; ; {
		users, total, err := store.ListUsers(ctx, persistence.ListOptions{Limit: 1000, Offset: offset})
		if err != nil {
			return err
		}
		for _, u := range users {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", u.Name, u.Role, u.State(now), timeOrDash(u.LastSignInAt))
		}
		offset += len(users)
		if len(users) == 0 || offset >= total {
			break
		}
	}
	return tw.Flush()
}

// printFirstAdminLink prints a set-up link for a first administrator when nobody can
// ever sign in otherwise: on a database without users it creates the administrator;
// while that administrator is the only user and has no credentials, each start replaces
// the link, so a lost or expired one is recovered by restarting. It prints nothing when
// other users exist. The link is a secret, so it goes to stdout and never to the log.
func printFirstAdminLink(ctx context.Context, store *db.Store, cfg config.Config, stdout io.Writer, now time.Time) error {
	users, total, err := store.ListUsers(ctx, persistence.ListOptions{Limit: 1})
	if err != nil {
		return err
	}
	pending := total == 1 && users[0].Name == firstAdminName && !users[0].Disabled &&
		users[0].PasswordHash == "" && len(users[0].SealedTOTP) == 0 && users[0].OIDCSubject == ""
	if total != 0 && !pending {
		return nil
	}
	base, err := cfg.BaseURL()
	if err != nil {
		return err
	}
	token, hash, err := setuplink.New()
	if err != nil {
		return err
	}
	expires := now.Add(setuplink.TTL)
	if pending {
		err = store.SetUserSetupToken(ctx, users[0].ID, hash, expires)
	} else {
		_, err = store.CreateUser(ctx, persistence.User{Name: firstAdminName, Role: persistence.RoleAdmin,
			SetupTokenHash: hash, SetupExpiresAt: &expires})
	}
	if err != nil {
		return fmt.Errorf("create the first administrator: %w", err)
	}
	fmt.Fprintf(stdout, "Create the first administrator: %s\n", setuplink.URL(base, token))
	return nil
}
