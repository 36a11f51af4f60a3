package main

import "testing"

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
	})
}
