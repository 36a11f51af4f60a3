package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// loadtestUsage introduces each scenario's flags in `wharf loadtest SCENARIO -h`.
var loadtestUsage = map[string]string{
	"files": "Usage: wharf loadtest files [flags]\n\nMeasures file-to-file throughput on a throwaway instance: file poller -> file writer.\n",
	"as2":   "Usage: wharf loadtest as2 [flags]\n\nMeasures AS2 throughput between two throwaway instances: A: file poller -> as2-sender -> B: as2-receiver -> file writer.\n",
}

// defaultMessageLimitMiB is the message size limit of a new instance (the receiver's
// max_body_mib and the AS2 profiles' max_message_size_mib); maxMessageLimitMiB the
// highest -max-mib, the receiver's largest max_body_mib.
const (
	defaultMessageLimitMiB = 512
	maxMessageLimitMiB     = 4096
)

// loadtestFlags holds the flags of one scenario.
type loadtestFlags struct {
	fs                   *flag.FlagSet
	n, size, concurrency *int
	killAfter, kills     *int
	maxMiB               *int
	dbURL, profiles, mdn *string
	rate                 *float64
	timeout              *time.Duration
	keep, signedMDN      *bool
	killSender           *bool
	sessions             *int
	ordered              *bool
	storage              *string
	s3Endpoint, s3Bucket *string
	s3Region             *string
}

// newLoadtestFlags declares the flags scenario takes, and only those, so its -h lists
// them and a flag of the other scenario is refused by name.
func newLoadtestFlags(scenario string) *loadtestFlags {
	fs := flag.NewFlagSet("loadtest "+scenario, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := &loadtestFlags{fs: fs}
	if scenario == "as2" {
		f.n = fs.Int("n", 1000, "number of files per profile")
	} else {
		f.n = fs.Int("n", 1000, "number of files")
	}
	f.size = fs.Int("size-kib", 4, "size of each file in KiB")
	f.rate = fs.Float64("rate", 0, "drop this many files per second (0: as fast as possible)")
	f.timeout = fs.Duration("timeout", 10*time.Minute, "give up after this long")
	f.keep = fs.Bool("keep", false, "keep the temporary directory")
	f.kills = fs.Int("kills", 1, "with -kill-after: kill this many times, every -kill-after more files")
	switch scenario {
	case "files":
		f.dbURL = fs.String("db-url", "", "run against PostgreSQL at this URL (a private schema is created and dropped)")
		f.killAfter = fs.Int("kill-after", 0, "kill the gateway with SIGKILL after this many files arrived in the inbox, then restart it")
		f.sessions = fs.Int("sessions", 0, "spread the files round-robin over this many partners, so over as many sessions (0: one partner)")
		f.ordered = fs.Bool("ordered", false, "with -sessions: make the route ordered and check that each session's files were written in the order dropped")
	case "as2":
		f.profiles = fs.String("profiles", "all", "comma-separated protection profiles, each none or a +-joined set of compressed, signed, encrypted, optionally followed by /sync, /async, /signed-mdn or /unsigned-mdn")
		f.mdn = fs.String("mdn", "sync", "MDN mode of profiles without /sync or /async: sync or async")
		f.signedMDN = fs.Bool("signed-mdn", true, "ask for a signed MDN in profiles without /signed-mdn or /unsigned-mdn (the none profile does not)")
		f.concurrency = fs.Int("concurrency", 64, "attempts each as2-sender runs at once (max_concurrent); each as2-receiver takes at least as many requests at once; 0 keeps the defaults")
		f.killAfter = fs.Int("kill-after", 0, "kill the receiving gateway (B) with SIGKILL after this many files arrived in its inbox, then restart it")
		f.killSender = fs.Bool("kill-sender", false, "with -kill-after, kill the sending gateway (A) instead of B")
		f.storage = fs.String("storage", "local", "payload storage of both instances: local, or s3 (a bucket, each instance under a prefix of its own)")
		f.s3Endpoint = fs.String("s3-endpoint", "", "with -storage s3: the S3 endpoint URL, credentials from the AWS credential chain; empty starts versitygw (WHARF_TEST_S3_VERSITYGW, else on the PATH) for the run")
		f.s3Bucket = fs.String("s3-bucket", "wharf-loadtest", "with -storage s3: the bucket (it must exist at an -s3-endpoint)")
		f.s3Region = fs.String("s3-region", "us-east-1", "with -storage s3: the bucket's region")
		f.maxMiB = fs.Int("max-mib", 0, fmt.Sprintf("message size limit in MiB on both instances (each receiver's max_body_mib, both AS2 profiles' max_message_size_mib), 1 to %d; 0 keeps the default of %d", maxMessageLimitMiB, defaultMessageLimitMiB))
	}
	return f
}

// printLoadtestHelp writes the scenario's usage and flags, or both scenarios' when none is
// named.
func printLoadtestHelp(w io.Writer, scenario string) {
	scenarios := []string{scenario}
	if scenario == "" {
		fmt.Fprint(w, "Usage: wharf loadtest files|as2|poster [flags]\n\n")
		scenarios = []string{"files", "as2", "poster"}
	}
	for i, sc := range scenarios {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if sc == "poster" {
			printPosterHelp(w)
			continue
		}
		fmt.Fprint(w, loadtestUsage[sc], "\nFlags:\n")
		fs := newLoadtestFlags(sc).fs
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
}

// splitScenario takes the scenario out of the arguments, wherever it stands among the
// flags.
func splitScenario(args []string) (string, []string) {
	for i, a := range args {
		if a == "files" || a == "as2" || a == "poster" {
			return a, append(slices.Clone(args[:i]), args[i+1:]...)
		}
	}
	return "", args
}

func isHelp(args []string) bool {
	return slices.ContainsFunc(args, func(a string) bool { return a == "-h" || a == "-help" || a == "--help" })
}

// checkMessageLimit refuses a -max-mib out of range, and files the limit would refuse.
func checkMessageLimit(maxMiB, sizeKiB int) error {
	if maxMiB < 0 || maxMiB > maxMessageLimitMiB {
		return fmt.Errorf("-max-mib must be between 1 and %d, or 0 for the default", maxMessageLimitMiB)
	}
	limit := maxMiB
	if limit == 0 {
		limit = defaultMessageLimitMiB
	}
	if sizeKiB >= limit<<10 {
		return fmt.Errorf("files of %d KiB do not fit the message limit of %d MiB; raise it with -max-mib", sizeKiB, limit)
	}
	return nil
}

// checkSessions refuses a negative -sessions, and -ordered without sessions to key.
func checkSessions(f *loadtestFlags) error {
	switch {
	case *f.sessions < 0:
		return errors.New("-sessions must not be negative")
	case *f.ordered && *f.sessions < 1:
		return errors.New("-ordered needs -sessions of at least 1")
	}
	return nil
}

// checkStorage refuses a -storage other than local or s3, and S3 flags without -storage s3.
func checkStorage(f *loadtestFlags) error {
	switch *f.storage {
	case "local", "s3":
	default:
		return fmt.Errorf("-storage %q: want local or s3", *f.storage)
	}
	var stray []string
	f.fs.Visit(func(fl *flag.Flag) {
		if strings.HasPrefix(fl.Name, "s3-") && *f.storage != "s3" {
			stray = append(stray, "-"+fl.Name)
		}
	})
	if len(stray) > 0 {
		return fmt.Errorf("%s needs -storage s3", strings.Join(stray, ", "))
	}
	return nil
}
