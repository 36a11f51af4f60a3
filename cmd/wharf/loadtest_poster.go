package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"wharf/internal/config"
	"wharf/internal/loadtest"
)

const posterUsage = "Usage: wharf loadtest poster -db-url postgres://… [flags]\n\n" +
	"Measures http-poster deliveries of a distributed installation: one `serve api` process takes\n" +
	"documents over REST, -plugins `serve plugin http-poster` processes post them to a receiver\n" +
	"in this process that answers after -delay; PostgreSQL and a NATS bus are shared.\n"

// posterFlags are the flags of `wharf loadtest poster`.
type posterFlags struct {
	fs                   *flag.FlagSet
	n, size, plugins     *int
	concurrency, senders *int
	repeat               *int
	dbURL, compare       *string
	delay, timeout       *time.Duration
	keep                 *bool
}

func newPosterFlags() *posterFlags {
	fs := flag.NewFlagSet("loadtest poster", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return &posterFlags{
		fs:          fs,
		dbURL:       fs.String("db-url", "", "PostgreSQL URL, required (a private schema is created and dropped per round)"),
		n:           fs.Int("n", 1000, "number of documents per round"),
		size:        fs.Int("size-kib", 4, "size of each document in KiB"),
		plugins:     fs.Int("plugins", 1, "number of serve plugin http-poster processes"),
		compare:     fs.String("compare", "", "comma-separated plugin process counts to run back to back (e.g. 1,2), each against the first; replaces -plugins"),
		delay:       fs.Duration("delay", 20*time.Millisecond, "how long the receiver takes to answer each post"),
		concurrency: fs.Int("concurrency", 0, "the target's max_concurrent, the posts each plugin process runs at once (0: the target's default)"),
		senders:     fs.Int("senders", 16, "clients sending documents through the REST API at once"),
		repeat:      fs.Int("repeat", 1, "run the rounds this many times, interleaved (1,2,1,2 for -compare 1,2 -repeat 2); ratios are then also given as medians"),
		timeout:     fs.Duration("timeout", 10*time.Minute, "give up a round after this long"),
		keep:        fs.Bool("keep", false, "keep the temporary directory"),
	}
}

// runLoadtestPoster runs `wharf loadtest poster`.
func runLoadtestPoster(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newPosterFlags()
	pos, err := config.ParseArgs(f.fs, args)
	if errors.Is(err, flag.ErrHelp) {
		printPosterHelp(stdout)
		return nil
	}
	if err == nil && len(pos) > 0 {
		err = fmt.Errorf("unexpected argument %q", pos[0])
	}
	var rounds []int
	if err == nil {
		rounds, err = posterRounds(f)
	}
	if err != nil {
		printPosterHelp(stderr)
		return fmt.Errorf("%w: loadtest poster: %v", errUsageShown, err)
	}
	bin, dir, remove, err := loadtestDir(*f.keep)
	if err != nil {
		return err
	}
	defer remove()
	fmt.Fprintf(stdout, "loadtest poster: %d documents of %d KiB per round, REST send -> serve api -> serve plugin http-poster -> receiver answering after %s, in %s\n",
		*f.n, *f.size, *f.delay, dir)
	printHostLoad(stdout)
	// Rounds of the same counts alternate, so a change in the machine's load falls on
	// every count alike rather than on one.
	passes := make([][]loadtest.PosterResult, *f.repeat)
	for pass := range passes {
		for i, plugins := range rounds {
			res, err := loadtest.RunPoster(ctx, loadtest.PosterOptions{
				N: *f.n, SizeKiB: *f.size, Plugins: plugins, Delay: *f.delay, MaxConcurrent: *f.concurrency,
				Senders: *f.senders, Bin: bin, Dir: filepath.Join(dir, fmt.Sprintf("round-%d-%d", pass+1, i+1)), DBURL: *f.dbURL,
				Timeout: *f.timeout, Progress: stdout,
			})
			if err != nil {
				return fmt.Errorf("loadtest poster with %d plugin process(es): %w", plugins, err)
			}
			passes[pass] = append(passes[pass], res)
		}
	}
	printPosterResults(stdout, passes)
	return nil
}

// posterRounds are the plugin process counts to run: -compare's, else -plugins.
func posterRounds(f *posterFlags) ([]int, error) {
	switch {
	case *f.dbURL == "":
		return nil, errors.New("-db-url is required: the processes of a distributed installation share PostgreSQL")
	case *f.n <= 0:
		return nil, errors.New("-n must be positive")
	case *f.size < 0:
		return nil, errors.New("-size-kib must not be negative")
	case *f.delay < 0:
		return nil, errors.New("-delay must not be negative")
	case *f.concurrency < 0 || *f.concurrency > 256:
		return nil, errors.New("-concurrency must be between 1 and 256, or 0 for the target's default")
	case *f.senders <= 0:
		return nil, errors.New("-senders must be positive")
	case *f.repeat <= 0:
		return nil, errors.New("-repeat must be positive")
	}
	if *f.compare == "" {
		if *f.plugins <= 0 {
			return nil, errors.New("-plugins must be positive")
		}
		return []int{*f.plugins}, nil
	}
	var rounds []int
	for _, s := range strings.Split(*f.compare, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("-compare %q: each entry must be a positive number of plugin processes", *f.compare)
		}
		rounds = append(rounds, v)
	}
	if len(rounds) < 2 {
		return nil, fmt.Errorf("-compare %q: name at least two plugin process counts", *f.compare)
	}
	return rounds, nil
}

// printPosterResults prints one row per round and, for several counts, each round's
// throughput against the first count's of its pass, and the median of those ratios over
// the passes.
func printPosterResults(w io.Writer, passes [][]loadtest.PosterResult) {
	most := 0
	for _, r := range slices.Concat(passes...) {
		most = max(most, r.Plugins)
	}
	head := []string{"pass", "plugin processes", "msgs/s", "attempt p50", "p95", "CPU s/msg api"}
	for i := range most {
		head = append(head, fmt.Sprintf("plugin %d", i+1))
	}
	rows := [][]string{head}
	for pass, results := range passes {
		for _, r := range results {
			n := time.Duration(r.N)
			row := []string{fmt.Sprint(pass + 1), fmt.Sprint(r.Plugins), threeDigits(r.PerSecond),
				r.P50.Round(time.Millisecond).String(), r.P95.Round(time.Millisecond).String()}
			for _, p := range r.Processes {
				row = append(row, fmt.Sprintf("%.5f", (p.CPU/n).Seconds()))
			}
			for len(row) < len(head) {
				row = append(row, "")
			}
			rows = append(rows, row)
		}
	}
	printTable(w, rows, 2)
	for i := 1; i < len(passes[0]); i++ {
		ratios := make([]float64, len(passes))
		shown := make([]string, len(passes))
		for pass, results := range passes {
			ratios[pass] = results[i].PerSecond / results[0].PerSecond
			shown[pass] = fmt.Sprintf("%.2fx", ratios[pass])
		}
		line := fmt.Sprintf("ratio:    %d plugin processes deliver %s what %d deliver(s)", passes[0][i].Plugins, strings.Join(shown, ", "), passes[0][0].Plugins)
		if len(passes) > 1 {
			line += fmt.Sprintf("; median %.2fx", median(ratios))
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintln(w, "checked:  every document reached the receiver exactly once; the database holds each message delivered")
	fmt.Fprintln(w, "msgs/s:   the whole backlog, built through the REST API while the receiver held every post, over the time from")
	fmt.Fprintln(w, "          letting the posts through until the last arrival (so the REST API's pace is not measured)")
	fmt.Fprintln(w, "attempt:  from a claim until the receiver's answer, as the history holds them, for the attempts claimed after the posts were let through")
	fmt.Fprintln(w, "CPU:      user+system time of each process from letting the posts through until the last arrival (/proc/<pid>/stat), per document")
}

// median is the middle of vs, or the mean of the two in the middle.
func median(vs []float64) float64 {
	s := slices.Sorted(slices.Values(vs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func printPosterHelp(w io.Writer) {
	fmt.Fprint(w, posterUsage, "\nFlags:\n")
	fs := newPosterFlags().fs
	fs.SetOutput(w)
	fs.PrintDefaults()
}
