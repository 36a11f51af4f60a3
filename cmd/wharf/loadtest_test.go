package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestLoadtestHelp holds each scenario's -h to its own flags, and a command line that is
// wrong to its scenario's usage, never the top-level one. None of these starts a gateway.
func TestLoadtestHelp(t *testing.T) {
	runLoadtestCases(t, []loadtestCase{
		{name: "as2 -h", args: []string{"loadtest", "as2", "-h"}, code: 0,
			stdout:     []string{"Usage: wharf loadtest as2", "-profiles", "-mdn", "-signed-mdn", "-concurrency", "-max-mib", "-size-kib", "-timeout", "-kill-after", "-kills", "-kill-sender", "-storage", "-s3-endpoint", "-s3-bucket", "-s3-region"},
			notPrinted: []string{"Commands:", "-db-url"}},
		{name: "files --help", args: []string{"loadtest", "files", "--help"}, code: 0,
			stdout:     []string{"Usage: wharf loadtest files", "-db-url", "-kill-after", "-kills", "-n", "-rate", "-ordered", "-sessions"},
			notPrinted: []string{"Commands:", "-profiles", "-max-mib", "-concurrency", "-kill-sender"}},
		{name: "flags before the scenario", args: []string{"loadtest", "-h", "as2"}, code: 0,
			stdout: []string{"Usage: wharf loadtest as2", "-max-mib"}, notPrinted: []string{"Commands:"}},
		{name: "no scenario -h", args: []string{"loadtest", "-h"}, code: 0,
			stdout: []string{"wharf loadtest files", "wharf loadtest as2", "-kill-after", "-max-mib"}, notPrinted: []string{"Commands:"}},
		{name: "no scenario", args: []string{"loadtest"}, code: 2,
			stderr: []string{"needs a scenario: files, as2 or poster", "wharf loadtest files"}, notPrinted: []string{"Commands:"}},
		{name: "a flag of the other scenario", args: []string{"loadtest", "files", "-profiles", "signed"}, code: 2,
			stderr: []string{"flag provided but not defined: -profiles", "Usage: wharf loadtest files"}, notPrinted: []string{"Commands:"}},
		{name: "ordered without sessions", args: []string{"loadtest", "files", "-ordered"}, code: 2,
			stderr: []string{"-ordered needs -sessions of at least 1"}},
		{name: "negative sessions", args: []string{"loadtest", "files", "-sessions", "-1"}, code: 2,
			stderr: []string{"-sessions must not be negative"}},
		{name: "max-mib out of range", args: []string{"loadtest", "as2", "-max-mib", "5000"}, code: 2,
			stderr: []string{"-max-mib must be between 1 and 4096"}},
		{name: "files over the default limit", args: []string{"loadtest", "as2", "-size-kib", "600000"}, code: 2,
			stderr: []string{"do not fit the message limit of 512 MiB; raise it with -max-mib"}},
		{name: "unknown storage", args: []string{"loadtest", "as2", "-storage", "nfs"}, code: 2,
			stderr: []string{`-storage "nfs": want local or s3`}},
		{name: "S3 flags without S3 storage", args: []string{"loadtest", "as2", "-s3-endpoint", "http://127.0.0.1:9000", "-s3-bucket", "b"}, code: 2,
			stderr: []string{"-s3-bucket, -s3-endpoint needs -storage s3"}},
		{name: "files over a raised limit", args: []string{"loadtest", "as2", "-size-kib", "2048", "-max-mib", "1"}, code: 2,
			stderr: []string{"do not fit the message limit of 1 MiB"}},
	})
}

// loadtestCase is a command line of `wharf loadtest` and what it must print.
type loadtestCase struct {
	name       string
	args       []string
	code       int
	stdout     []string // each must appear
	stderr     []string
	notPrinted []string // in neither
}

// runLoadtestCases runs each case's command line, none of which may start a gateway.
func runLoadtestCases(t *testing.T, tests []loadtestCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit code %d, want %d\nstderr: %s", code, tt.code, stderr.String())
			}
			for _, want := range tt.stdout {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
				}
			}
			for _, want := range tt.stderr {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
				}
			}
			for _, not := range tt.notPrinted {
				if strings.Contains(stdout.String()+stderr.String(), not) {
					t.Errorf("output has %q:\n%s%s", not, stdout.String(), stderr.String())
				}
			}
		})
	}
}
