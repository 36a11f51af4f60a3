package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"wharf/internal/config"
	"wharf/internal/loadtest"
)

func runLoadtest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("loadtest", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	n := fs.Int("n", 1000, "number of files")
	size := fs.Int("size-kib", 4, "size of each file in KiB")
	dbURL := fs.String("db-url", "", "run against PostgreSQL at this URL (a private schema is created and dropped)")
	killAfter := fs.Int("kill-after", 0, "kill the gateway with SIGKILL after this many deliveries, then restart it")
	rate := fs.Float64("rate", 0, "drop this many files per second (0: as fast as possible)")
	timeout := fs.Duration("timeout", 10*time.Minute, "give up after this long")
	keep := fs.Bool("keep", false, "keep the temporary directory")
	pos, err := config.ParseArgs(fs, args)
	if err != nil {
		return fmt.Errorf("%w: loadtest: %v", errUsage, err)
	}
	if len(pos) != 1 || pos[0] != "files" {
		return fmt.Errorf("%w: loadtest needs a scenario: files", errUsage)
	}
	bin, err := os.Executable()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "wharf-loadtest-")
	if err != nil {
		return err
	}
	if !*keep {
		defer os.RemoveAll(dir)
	}
	fmt.Fprintf(stdout, "loadtest files: %d files of %d KiB, file poller -> file writer, in %s\n", *n, *size, dir)
	res, err := loadtest.RunFiles(ctx, loadtest.FilesOptions{
		N: *n, SizeKiB: *size, Bin: bin, Dir: dir, DBURL: *dbURL, KillAfter: *killAfter, Rate: *rate, Timeout: *timeout, Progress: stdout,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "database:        %s\n", res.Database)
	fmt.Fprintf(stdout, "messages:        %d delivered, every one verified byte for byte\n", res.N)
	fmt.Fprintf(stdout, "elapsed:         %s\n", res.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(stdout, "throughput:      %.0f messages/s\n", res.PerSecond)
	fmt.Fprintf(stdout, "latency:         p50 %s  p95 %s  p99 %s\n", res.P50.Round(time.Millisecond), res.P95.Round(time.Millisecond), res.P99.Round(time.Millisecond))
	fmt.Fprintf(stdout, "gateway CPU:     %.2f s\n", res.CPUSeconds)
	fmt.Fprintf(stdout, "gateway peak RSS: %.0f MiB\n", res.PeakRSSMiB)
	if res.Killed {
		fmt.Fprintln(stdout, "crash:           killed with SIGKILL mid-run and restarted; nothing lost, nothing doubled")
	}
	return nil
}
