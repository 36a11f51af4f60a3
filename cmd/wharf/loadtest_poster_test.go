package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"wharf/internal/loadtest"
)

// TestLoadtestPosterFlags holds `loadtest poster` to its own usage and refuses what it
// cannot run, naming the flag, before it starts any process.
func TestLoadtestPosterFlags(t *testing.T) {
	const db = "postgres://wharf@127.0.0.1:1/none"
	runLoadtestCases(t, []loadtestCase{
		{name: "-h", args: []string{"loadtest", "poster", "-h"}, code: 0,
			stdout:     []string{"Usage: wharf loadtest poster", "-db-url", "-plugins", "-compare", "-delay", "-concurrency", "-senders", "-n", "-size-kib"},
			notPrinted: []string{"-profiles", "-kill-after"}},
		{name: "listed without a scenario", args: []string{"loadtest", "-h"}, code: 0,
			stdout: []string{"wharf loadtest files|as2|poster", "Usage: wharf loadtest poster", "-compare"}},
		{name: "no database", args: []string{"loadtest", "poster"}, code: 2,
			stderr: []string{"-db-url is required", "Usage: wharf loadtest poster"}},
		{name: "a flag of another scenario", args: []string{"loadtest", "poster", "-db-url", db, "-profiles", "signed"}, code: 2,
			stderr: []string{"flag provided but not defined: -profiles"}},
		{name: "compare with one count", args: []string{"loadtest", "poster", "-db-url", db, "-compare", "2"}, code: 2,
			stderr: []string{`-compare "2": name at least two`}},
		{name: "compare with a bad count", args: []string{"loadtest", "poster", "-db-url", db, "-compare", "1,x"}, code: 2,
			stderr: []string{`-compare "1,x": each entry must be a positive number`}},
		{name: "no plugin process", args: []string{"loadtest", "poster", "-db-url", db, "-plugins", "0"}, code: 2,
			stderr: []string{"-plugins must be positive"}},
		{name: "concurrency out of range", args: []string{"loadtest", "poster", "-db-url", db, "-concurrency", "300"}, code: 2,
			stderr: []string{"-concurrency must be between 1 and 256"}},
		{name: "negative delay", args: []string{"loadtest", "poster", "-db-url", db, "-delay", "-1s"}, code: 2,
			stderr: []string{"-delay must not be negative"}},
		{name: "no senders", args: []string{"loadtest", "poster", "-db-url", db, "-senders", "0"}, code: 2,
			stderr: []string{"-senders must be positive"}},
		{name: "no pass", args: []string{"loadtest", "poster", "-db-url", db, "-compare", "1,2", "-repeat", "0"}, code: 2,
			stderr: []string{"-repeat must be positive"}},
	})
}

// TestPosterRatios holds the ratio lines to each pass's rounds: every pass's second count
// against its own first, and the median over the passes.
func TestPosterRatios(t *testing.T) {
	round := func(plugins int, perSecond float64) loadtest.PosterResult {
		procs := []loadtest.ProcessUsage{{Role: "api", CPU: time.Second}}
		for i := range plugins {
			procs = append(procs, loadtest.ProcessUsage{Role: "plugin " + string(rune('1'+i)), CPU: time.Second})
		}
		return loadtest.PosterResult{N: 1000, Plugins: plugins, PerSecond: perSecond, P50: 30 * time.Millisecond, P95: 60 * time.Millisecond, Processes: procs}
	}
	tests := []struct {
		name   string
		passes [][]loadtest.PosterResult
		want   string
	}{
		{"one pass", [][]loadtest.PosterResult{{round(1, 200), round(2, 360)}},
			"ratio:    2 plugin processes deliver 1.80x what 1 deliver(s)\n"},
		{"three passes", [][]loadtest.PosterResult{{round(1, 200), round(2, 360)}, {round(1, 100), round(2, 150)}, {round(1, 250), round(2, 500)}},
			"ratio:    2 plugin processes deliver 1.80x, 1.50x, 2.00x what 1 deliver(s); median 1.80x\n"},
		{"two passes", [][]loadtest.PosterResult{{round(1, 200), round(2, 360)}, {round(1, 100), round(2, 150)}},
			"ratio:    2 plugin processes deliver 1.80x, 1.50x what 1 deliver(s); median 1.65x\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			printPosterResults(&out, tt.passes)
			if !strings.Contains(out.String(), tt.want) {
				t.Errorf("output lacks %q:\n%s", tt.want, out.String())
			}
			if rows := strings.Count(out.String(), "30ms"); rows != 2*len(tt.passes) {
				t.Errorf("%d rounds printed, want %d:\n%s", rows, 2*len(tt.passes), out.String())
			}
		})
	}
}
