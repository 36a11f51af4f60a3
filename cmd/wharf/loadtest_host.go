package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
)

// loadtestDir returns the wharf binary a scenario starts as its child processes and a new
// temporary directory for the run; remove deletes the directory unless keep is set.
func loadtestDir(keep bool) (bin, dir string, remove func(), err error) {
	if bin, err = os.Executable(); err != nil {
		return "", "", nil, err
	}
	if dir, err = os.MkdirTemp("", "wharf-loadtest-"); err != nil {
		return "", "", nil, err
	}
	remove = func() {}
	if !keep {
		remove = func() { os.RemoveAll(dir) }
	}
	return bin, dir, remove, nil
}

// printHostLoad says how busy the machine was when a run began: every process of the
// run shares it with whatever else runs there.
func printHostLoad(w io.Writer) {
	if load, err := os.ReadFile("/proc/loadavg"); err == nil && len(strings.Fields(string(load))) >= 3 {
		fmt.Fprintf(w, "host: %d CPUs, load average %s at the start\n", runtime.NumCPU(), strings.Join(strings.Fields(string(load))[:3], " "))
	}
}
