package config

import (
	"flag"
	"fmt"
	"strings"
)

// GlobalFlags names every global flag RegisterFlags knows.
var GlobalFlags = []string{"data-dir", "db-url", "http-addr", "public-url", "nats", "nats-listen", "as2-addr", "log-level", "listen", "payload-dir"}

// RegisterFlags adds the named global flags to fs, bound to c, with c's current values
// (defaults and environment) as their defaults; a flag given on the command line then
// wins. Commands register only the flags that mean something to them. An unknown name is
// a programming error and panics, as flag.FlagSet does for a flag defined twice.
func (c *Config) RegisterFlags(fs *flag.FlagSet, names ...string) {
	for _, name := range names {
		if name == logLevelFlag {
			fs.Var(&levelFlag{c}, name, "log level: debug, info, warn or error (env "+logLevelEnv+")")
			continue
		}
		s, ok := settingByFlag(name)
		if !ok {
			panic(fmt.Sprintf("config: no global flag %q", name))
		}
		fs.Var(&stringFlag{c: c, s: s}, name, s.usage+" (env "+s.env+")")
	}
}

func settingByFlag(name string) (setting, bool) {
	for _, s := range settings {
		if s.flag != "" && s.flag == name {
			return s, true
		}
	}
	return setting{}, false
}

// stringFlag stores the value as given; Validate checks it afterwards, so every bad flag
// is reported together with the rest.
type stringFlag struct {
	c *Config
	s setting
}

func (f *stringFlag) String() string {
	if f == nil || f.c == nil {
		return ""
	}
	return *f.s.field(f.c)
}

func (f *stringFlag) Set(v string) error {
	*f.s.field(f.c) = v
	f.c.fromFlag |= f.s.bit
	return nil
}

// levelFlag parses at once: the field is typed, so there is nothing to hold for later.
// It uses the same ParseLogLevel as the environment.
type levelFlag struct{ c *Config }

func (f *levelFlag) String() string {
	if f == nil || f.c == nil {
		return ""
	}
	return strings.ToLower(f.c.LogLevel.String())
}

func (f *levelFlag) Set(v string) error {
	lvl, err := ParseLogLevel(v)
	if err != nil {
		return err
	}
	f.c.LogLevel = lvl
	return nil
}

// ParseArgs parses flags wherever they stand among the positional arguments —
// "tokens create ci --data-dir ./x" and "tokens --data-dir ./x create ci" alike — and
// returns the positionals in order. "--" ends the flags: everything after it is
// positional, even if it starts with '-'.
func ParseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var positionals []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		consumed := args[:len(args)-len(rest)]
		if endedByTerminator(fs, consumed) {
			return append(positionals, rest...), nil
		}
		if len(rest) == 0 {
			return positionals, nil
		}
		positionals = append(positionals, rest[0])
		args = rest[1:]
	}
}

// endedByTerminator tells whether the flag package stopped at "--" (which it consumes)
// rather than at a positional argument. It walks the consumed arguments as the flag
// package did, so a "--" that was a flag's value ("--data-dir --") does not count.
func endedByTerminator(fs *flag.FlagSet, consumed []string) bool {
	for i := 0; i < len(consumed); i++ {
		arg := consumed[i]
		if arg == "--" {
			return true
		}
		name := strings.TrimPrefix(strings.TrimPrefix(arg, "-"), "-")
		if strings.Contains(name, "=") {
			continue
		}
		f := fs.Lookup(name)
		if f == nil {
			continue
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			continue
		}
		i++ // the next argument is this flag's value
	}
	return false
}
