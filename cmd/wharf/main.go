// Command wharf is the Wharf B2B message gateway.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

const usage = `Usage: wharf <command> [flags] [arguments]

Commands:
  standalone            run the whole gateway in one process
  serve api|plugin TYPE [NAME]|sweeper
                        run one role of a distributed installation (PostgreSQL and
                        an external NATS bus; see docs/deployment.md)
  users create NAME [--role admin|operator]
                        create a user (default role operator) and print a one-time
                        set-up link, valid 24 hours, on the last line
  users list            list users with their role, state and last sign-in
  users reset NAME      end the user's sessions and print a new set-up link; using it
                        replaces the password and TOTP
  users disable NAME    disable a user and end their sessions
  users enable NAME     enable a disabled user
  users delete NAME     delete a user
  users sign-out NAME   end every session of a user
  tokens create NAME [--target INSTANCE]
                        create an API token (printed once, on the last line); with
                        --target it may only complete and fail that target's deliveries
  tokens list           list API tokens
  tokens revoke NAME    revoke an API token
  audit verify [--file F]
                        check the audit log's hash chain in the database, or in an
                        export file; names every changed event and every gap
  audit export [--after-id N]
                        write the audit events after N as JSON lines
  secrets rekey         seal every stored secret under a new master key in the secrets
                        key file; stop every gateway process on the database first;
                        safe to interrupt and run again
  loadtest files        measure file-to-file throughput on a throwaway instance
  loadtest as2          measure AS2 throughput between two throwaway instances
  version               print the version

Global flags (each also a WHARF_* variable):
  --data-dir DIR        data directory (WHARF_DATA_DIR, default ./wharf-data)
  --db-url URL          PostgreSQL URL (WHARF_DB_URL, default SQLite in the data directory)
  --http-addr ADDR      listen address (WHARF_HTTP_ADDR, default 127.0.0.1:8080)
  --public-url URL      URL links are built from (WHARF_PUBLIC_URL, default from a
                        loopback --http-addr)
  --nats URL            external NATS bus (WHARF_NATS_URL; credentials and TLS from
                        WHARF_NATS_CREDS, _USER/_PASSWORD, _TOKEN, _TLS_CA/_CERT/_KEY)
  --nats-listen ADDR    also open the embedded bus on host:port (WHARF_NATS_LISTEN)
  --listen ADDR         probe address of a plugin or sweeper process (WHARF_PROBE_ADDR)
  --as2-addr ADDR       host:port of the default AS2 receiver when a new database is
                        seeded (WHARF_AS2_ADDR, default 127.0.0.1:8081)
  --log-level LEVEL     debug, info, warn or error (WHARF_LOG_LEVEL)
`

// errUsage marks a command line that was wrong; main prints the usage after it.
var errUsage = errors.New("usage")

// errUsageShown marks a command line that was wrong where the command has printed its
// own usage already.
var errUsageShown = errors.New("usage")

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "standalone":
		err = runStandalone(ctx, args[1:], stdout, stderr)
	case "serve":
		err = runServe(ctx, args[1:], stdout, stderr)
	case "users":
		err = runUsers(ctx, args[1:], stdout, stderr)
	case "tokens":
		err = runTokens(ctx, args[1:], stdout, stderr)
	case "audit":
		err = runAudit(ctx, args[1:], stdout, stderr)
	case "secrets":
		err = runSecrets(ctx, args[1:], stdout, stderr)
	case "loadtest":
		err = runLoadtest(ctx, args[1:], stdout, stderr)
	case "version", "--version":
		fmt.Fprintln(stdout, "wharf", version())
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
	default:
		err = fmt.Errorf("%w: unknown command %q", errUsage, args[0])
	}
	if err != nil {
		fmt.Fprintln(stderr, "wharf:", oneLine(err.Error()))
		if errors.Is(err, errAuditFailed) {
			return 1
		}
		if errors.Is(err, errUsageShown) {
			return 2
		}
		if errors.Is(err, errUsage) {
			fmt.Fprint(stderr, "\n", usage)
			return 2
		}
		return 1
	}
	return 0
}

// oneLine folds an error that spans lines (a database driver reports each connection
// attempt on a line of its own) into one, so a failure is one line on the terminal and
// in a service manager's log.
func oneLine(s string) string {
	lines := strings.Split(s, "\n")
	kept := lines[:0]
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			kept = append(kept, l)
		}
	}
	return strings.Join(kept, " ")
}
