package file

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"wharf/internal/delivery"
	"wharf/internal/persistence"
)

// PollerConfig is the configuration of a file-poller instance.
type PollerConfig struct {
	// Directory is the outbox the poller scans (absolute).
	Directory string `json:"directory" wharf:"required"`
	// Pattern is the path of a document under Directory, segment by segment: a literal
	// directory name or one of {to}, {from}, {filename}; {filename} comes last.
	Pattern string `json:"pattern"`
	// Organization is the sender when Pattern has no {from}.
	Organization string `json:"organization"`
	// Partner is the recipient when Pattern has no {to}.
	Partner string `json:"partner,omitempty"`
	// Interval is the time between two scans.
	Interval delivery.Duration `json:"interval"`
	// StableFor is how long a file's size and modification time must stay unchanged
	// before it is taken; 0 takes a file unchanged between two consecutive scans.
	StableFor delivery.Duration `json:"stable_for"`
	// BatchSize is the number of files handed to the core in one transaction.
	BatchSize int `json:"batch_size"`
	// ProcessedDirectory, when set, keeps taken files instead of deleting them.
	ProcessedDirectory string `json:"processed_directory,omitempty"`
	// UnroutableDirectory receives files that cannot be taken; default
	// <directory>/unroutable.
	UnroutableDirectory string `json:"unroutable_directory,omitempty"`
}

// Poller defaults.
const (
	DefaultPollerPattern = "{to}/{filename}"
	DefaultOrganization  = "local"
	DefaultInterval      = time.Second
	DefaultStableFor     = time.Second
	DefaultBatchSize     = 100
	MaxBatchSize         = 1000
)

// NewPollerConfig returns a config with its defaults set.
func NewPollerConfig() *PollerConfig {
	return &PollerConfig{
		Pattern:      DefaultPollerPattern,
		Organization: DefaultOrganization,
		Interval:     delivery.Duration(DefaultInterval),
		StableFor:    delivery.Duration(DefaultStableFor),
		BatchSize:    DefaultBatchSize,
	}
}

// Validate checks the config; errors are *persistence.FieldError.
func (c *PollerConfig) Validate() error {
	var errs persistence.FieldErrors
	if err := checkAbsDir("directory", c.Directory, true); !errs.Merge(err) {
		return err
	}
	pat, err := parsePathPattern(c.Pattern)
	if err != nil {
		errs.Add("pattern", err.Error())
	}
	// Which parties the pattern leaves to the config is known only of a valid pattern.
	if err == nil && !pat.has(segFrom) {
		if c.Organization == "" {
			errs.Add("organization", "required when pattern has no {from}")
		}
		if _, err := persistence.ParsePartyName(c.Organization); err != nil {
			errs.Add("organization", err.Error())
		}
	}
	if err == nil && !pat.has(segTo) {
		if c.Partner == "" {
			errs.Add("partner", "required when pattern has no {to}")
		}
		if _, err := persistence.ParsePartyName(c.Partner); err != nil {
			errs.Add("partner", err.Error())
		}
	}
	if c.Interval <= 0 {
		errs.Add("interval", "must be positive")
	}
	if time.Duration(c.Interval) > time.Hour {
		errs.Add("interval", "must be at most 1h")
	}
	if time.Duration(c.StableFor) > 24*time.Hour {
		errs.Add("stable_for", "must be at most 24h")
	}
	if c.BatchSize < 1 || c.BatchSize > MaxBatchSize {
		errs.Add("batch_size", fmt.Sprintf("must be between 1 and %d", MaxBatchSize))
	}
	base := filepath.Clean(c.Directory)
	if c.ProcessedDirectory != "" {
		if err := checkAbsDir("processed_directory", c.ProcessedDirectory, false); !errs.Merge(err) {
			return err
		}
		if filepath.Clean(c.ProcessedDirectory) == base {
			errs.Add("processed_directory", "must differ from directory")
		}
	}
	if c.UnroutableDirectory != "" {
		if err := checkAbsDir("unroutable_directory", c.UnroutableDirectory, false); !errs.Merge(err) {
			return err
		}
		if filepath.Clean(c.UnroutableDirectory) == base {
			errs.Add("unroutable_directory", "must differ from directory")
		}
	}
	if c.ProcessedDirectory != "" && filepath.Clean(c.ProcessedDirectory) == filepath.Clean(c.unroutableDir()) {
		errs.Add("processed_directory", "must differ from the unroutable directory")
	}
	return errs.Err()
}

func (c *PollerConfig) unroutableDir() string {
	if c.UnroutableDirectory != "" {
		return filepath.Clean(c.UnroutableDirectory)
	}
	return filepath.Join(filepath.Clean(c.Directory), "unroutable")
}

func checkAbsDir(field, dir string, required bool) error {
	switch {
	case dir == "" && required:
		return &persistence.FieldError{Field: field, Message: "required"}
	case dir == "":
		return nil
	case !filepath.IsAbs(dir):
		return &persistence.FieldError{Field: field, Message: "must be an absolute path"}
	case strings.ContainsRune(dir, 0):
		return &persistence.FieldError{Field: field, Message: "must not contain NUL"}
	}
	return nil
}

// segKind is what one segment of a poller path pattern stands for.
type segKind int

const (
	segLiteral segKind = iota
	segTo
	segFrom
	segFilename
)

var pollerPlaceholders = map[string]segKind{
	"{to}":       segTo,
	"{from}":     segFrom,
	"{filename}": segFilename,
}

type pathSegment struct {
	kind segKind
	text string // the literal directory name
}

// pathPattern is a parsed poller pattern: directory segments, then {filename}.
type pathPattern []pathSegment

func (p pathPattern) has(k segKind) bool {
	for _, s := range p {
		if s.kind == k {
			return true
		}
	}
	return false
}

func parsePathPattern(s string) (pathPattern, error) {
	switch {
	case s == "":
		return nil, fmt.Errorf("required")
	case strings.HasPrefix(s, "/"):
		return nil, fmt.Errorf("must be relative to the directory")
	case strings.ContainsRune(s, '\\'):
		return nil, fmt.Errorf(`separate segments with "/", not "\"`)
	}
	parts := strings.Split(s, "/")
	if len(parts) > 8 {
		return nil, fmt.Errorf("at most 8 segments")
	}
	var out pathPattern
	seen := map[segKind]bool{}
	for i, part := range parts {
		if k, ok := pollerPlaceholders[part]; ok {
			if seen[k] {
				return nil, fmt.Errorf("%s appears twice", part)
			}
			seen[k] = true
			if k == segFilename && i != len(parts)-1 {
				return nil, fmt.Errorf("{filename} must be the last segment")
			}
			out = append(out, pathSegment{kind: k})
			continue
		}
		if open := strings.IndexByte(part, '{'); open >= 0 {
			if end := strings.IndexByte(part[open:], '}'); end > 0 {
				name := part[open : open+end+1]
				if _, known := pollerPlaceholders[name]; known {
					return nil, fmt.Errorf("segment %q: a placeholder must be the whole segment", part)
				}
				return nil, fmt.Errorf("unknown placeholder %s: use {to}, {from} or {filename}", name)
			}
		}
		switch {
		case part == "":
			return nil, fmt.Errorf("empty segment")
		case part == "." || part == "..":
			return nil, fmt.Errorf("segment %q is not allowed", part)
		case strings.HasPrefix(part, "."):
			return nil, fmt.Errorf("segment %q: dot directories are never scanned", part)
		case strings.ContainsAny(part, "{}"):
			return nil, fmt.Errorf("segment %q: unbalanced braces", part)
		}
		if _, err := persistence.ParseFileName(part); err != nil {
			return nil, fmt.Errorf("segment %q: %v", part, err)
		}
		if i == len(parts)-1 {
			return nil, fmt.Errorf("must end with {filename}")
		}
		out = append(out, pathSegment{kind: segLiteral, text: part})
	}
	if !seen[segFilename] {
		return nil, fmt.Errorf("must end with {filename}")
	}
	return out, nil
}
