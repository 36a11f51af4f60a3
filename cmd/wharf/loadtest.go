package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"wharf/internal/config"
	"wharf/internal/loadtest"
)

func runLoadtest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	scenario, rest := splitScenario(args)
	if scenario == "poster" {
		return runLoadtestPoster(ctx, rest, stdout, stderr)
	}
	if scenario == "" {
		if isHelp(args) {
			printLoadtestHelp(stdout, "")
			return nil
		}
		printLoadtestHelp(stderr, "")
		return fmt.Errorf("%w: loadtest needs a scenario: files, as2 or poster", errUsageShown)
	}
	f := newLoadtestFlags(scenario)
	pos, err := config.ParseArgs(f.fs, rest)
	if errors.Is(err, flag.ErrHelp) {
		printLoadtestHelp(stdout, scenario)
		return nil
	}
	if err == nil && len(pos) > 0 {
		err = fmt.Errorf("unexpected argument %q", pos[0])
	}
	if err != nil {
		printLoadtestHelp(stderr, scenario)
		return fmt.Errorf("%w: loadtest %s: %v", errUsageShown, scenario, err)
	}
	var as2Profiles []loadtest.AS2Profile
	if scenario == "as2" {
		if as2Profiles, err = loadtest.ParseAS2Profiles(*f.profiles, *f.mdn, *f.signedMDN); err != nil {
			return fmt.Errorf("%w: loadtest as2: %v", errUsageShown, err)
		}
		if err := checkMessageLimit(*f.maxMiB, *f.size); err != nil {
			return fmt.Errorf("%w: loadtest as2: %v", errUsageShown, err)
		}
		if err := checkStorage(f); err != nil {
			return fmt.Errorf("%w: loadtest as2: %v", errUsageShown, err)
		}
	}
	if scenario == "files" {
		if err := checkSessions(f); err != nil {
			return fmt.Errorf("%w: loadtest files: %v", errUsageShown, err)
		}
	}
	bin, dir, remove, err := loadtestDir(*f.keep)
	if err != nil {
		return err
	}
	defer remove()
	if scenario == "as2" {
		return runLoadtestAS2(ctx, stdout, loadtest.AS2Options{
			N: *f.n, SizeKiB: *f.size, Profiles: as2Profiles, Bin: bin, Dir: dir, Rate: *f.rate, Concurrency: *f.concurrency,
			MaxMiB: *f.maxMiB, KillAfter: *f.killAfter, Kills: *f.kills, KillSender: *f.killSender, Timeout: *f.timeout, Progress: stdout,
			Storage: *f.storage, S3: loadtest.S3Options{Endpoint: *f.s3Endpoint, Bucket: *f.s3Bucket, Region: *f.s3Region},
		})
	}
	fmt.Fprintf(stdout, "loadtest files: %d files of %d KiB, file poller -> file writer%s, in %s\n", *f.n, *f.size, sessionsNote(*f.sessions, *f.ordered), dir)
	res, err := loadtest.RunFiles(ctx, loadtest.FilesOptions{
		N: *f.n, SizeKiB: *f.size, Bin: bin, Dir: dir, DBURL: *f.dbURL, KillAfter: *f.killAfter, Kills: *f.kills, Rate: *f.rate,
		Sessions: *f.sessions, Ordered: *f.ordered, Timeout: *f.timeout, Progress: stdout,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "database:        %s\n", res.Database)
	switch {
	case *f.ordered:
		fmt.Fprintf(stdout, "route:           ordered, %d sessions\n", *f.sessions)
	case *f.sessions > 0:
		fmt.Fprintf(stdout, "route:           unordered, sidecars naming %d sessions\n", *f.sessions)
	default:
		fmt.Fprintf(stdout, "route:           unordered\n")
	}
	fmt.Fprintf(stdout, "messages:        %d delivered, every one verified byte for byte\n", res.N)
	if *f.ordered {
		fmt.Fprintf(stdout, "order:           every session's files written in the order dropped\n")
	}
	fmt.Fprintf(stdout, "elapsed:         %s\n", res.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(stdout, "throughput:      %.0f messages/s\n", res.PerSecond)
	fmt.Fprintf(stdout, "latency:         p50 %s  p95 %s  p99 %s\n", res.P50.Round(time.Millisecond), res.P95.Round(time.Millisecond), res.P99.Round(time.Millisecond))
	fmt.Fprintf(stdout, "gateway CPU:     %.2f s\n", res.CPUSeconds)
	fmt.Fprintf(stdout, "gateway peak RSS: %.0f MiB\n", res.PeakRSSMiB)
	printCrashes(stdout, res.Crashes, "the gateway")
	return nil
}

// sessionsNote describes how the files spread over partners and sessions.
func sessionsNote(sessions int, ordered bool) string {
	switch {
	case sessions == 0:
		return ""
	case ordered:
		return fmt.Sprintf(", ordered route, %d sessions", sessions)
	}
	return fmt.Sprintf(", unordered route, %d partners", sessions)
}

// printCrashes lists a run's kills, if any, with the time each restart and recovery took.
func printCrashes(w io.Writer, crashes []loadtest.Crash, what string) {
	if len(crashes) == 0 {
		return
	}
	times := "times"
	if len(crashes) == 1 {
		times = "time"
	}
	fmt.Fprintf(w, "crashes:  %s killed with SIGKILL %d %s and restarted on the same data; nothing lost, nothing doubled\n", what, len(crashes), times)
	fmt.Fprintln(w, "          from the kill until: restarted: /healthz answered; next file: the first file written after the restart was in the inbox;")
	fmt.Fprintln(w, "          caught up: the last file dropped before the kill was in the inbox")
	rows := [][]string{{"kill", "after files", "restarted", "next file", "caught up"}}
	for i, c := range crashes {
		rows = append(rows, []string{fmt.Sprint(i + 1), fmt.Sprint(c.Arrived), c.Restart.Round(time.Millisecond).String(),
			c.Recover.Round(time.Millisecond).String(), c.CaughtUp.Round(time.Millisecond).String()})
	}
	printTable(w, rows, 1)
}

// runLoadtestAS2 runs the as2 scenario and prints one row per profile.
func runLoadtestAS2(ctx context.Context, stdout io.Writer, opt loadtest.AS2Options) error {
	files := "files"
	if opt.N == 1 {
		files = "file"
	}
	fmt.Fprintf(stdout, "loadtest as2: %d %s of %d KiB per profile, A: file poller -> as2-sender -> B: as2-receiver -> file writer, in %s\n",
		opt.N, files, opt.SizeKiB, opt.Dir)
	if opt.Concurrency > 0 {
		fmt.Fprintf(stdout, "concurrency: A's as2-sender runs %d attempts at once; B's as2-receiver takes as many requests\n", opt.Concurrency)
	}
	// Both gateways share the machine with whatever else runs on it; the load says how
	// much that was.
	printHostLoad(stdout)
	res, err := loadtest.RunAS2(ctx, opt)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "message limit: %d MiB (receivers' max_body_mib, AS2 profiles' max_message_size_mib, on A and B)\n", res.MessageLimitMiB)
	rows := [][]string{{"profile", "MDN", "msgs/s", "p50", "p95", "p99", "CPU s/msg A+B", "A", "B", "peak RSS MiB A", "B"}}
	sinceStart := false
	for _, r := range res.Rounds {
		n := time.Duration(r.N)
		rows = append(rows, []string{
			r.Profile.Protection(), r.Profile.Receipt(), threeDigits(r.PerSecond),
			r.P50.Round(time.Millisecond).String(), r.P95.Round(time.Millisecond).String(), r.P99.Round(time.Millisecond).String(),
			threeDigits(r.CPUPerMessage().Seconds()), threeDigits((r.CPUA / n).Seconds()), threeDigits((r.CPUB / n).Seconds()),
			fmt.Sprintf("%.0f", float64(r.PeakRSSA)/(1<<20)), fmt.Sprintf("%.0f", float64(r.PeakRSSB)/(1<<20)),
		})
		sinceStart = sinceStart || r.PeakSinceStart
	}
	printTable(stdout, rows, 2)
	victim := "B (the receiving gateway)"
	if opt.KillSender {
		victim = "A (the sending gateway)"
	}
	printCrashes(stdout, res.Crashes, victim)
	fmt.Fprintln(stdout, "checked:  every file byte for byte in B's inbox; on A and on B exactly one delivered message per file, each with its MDN stored")
	fmt.Fprintln(stdout, "latency:  from a file's rename into A's outbox until B has written it to its inbox and A has recorded the delivery (MDN checked) as delivered")
	fmt.Fprintln(stdout, "CPU:      user+system time of each process during the round (/proc/<pid>/stat), per message")
	if sinceStart {
		fmt.Fprintln(stdout, "peak RSS: VmHWM of each process since it started (this kernel refused a reset per round)")
	} else {
		fmt.Fprintln(stdout, "peak RSS: VmHWM of each process during the round")
	}
	return nil
}

// threeDigits shows a figure with three significant digits, and whole numbers from 100 up.
func threeDigits(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

// printTable prints rows in columns: the first left columns aligned left (names), the
// others right (figures).
func printTable(w io.Writer, rows [][]string, left int) {
	widths := make([]int, len(rows[0]))
	for _, row := range rows {
		for i, cell := range row {
			widths[i] = max(widths[i], len(cell))
		}
	}
	for _, row := range rows {
		var b strings.Builder
		for i, cell := range row {
			if i > 0 {
				b.WriteString("  ")
			}
			pad := strings.Repeat(" ", widths[i]-len(cell))
			if i < left {
				b.WriteString(cell + pad)
			} else {
				b.WriteString(pad + cell)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}
