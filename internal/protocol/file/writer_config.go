package file

import (
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"wharf/internal/delivery"
	"wharf/internal/persistence"
)

// WriterConfig is the configuration of a file-writer instance.
type WriterConfig struct {
	delivery.TargetOptions
	// Directory is the base directory every file is written under (absolute).
	Directory string `json:"directory" wharf:"required"`
	// Pattern is the path of a file under Directory, with placeholders; see
	// WriterPlaceholders.
	Pattern string `json:"pattern"`
	// OnCollision is what happens when the name is taken by a file with other bytes:
	// suffix (default), overwrite or fail.
	OnCollision string `json:"on_collision"`
	// FileMode and DirMode are octal permissions ("0640") of created files and
	// directories.
	FileMode string `json:"file_mode"`
	DirMode  string `json:"dir_mode"`
}

// Writer defaults.
const (
	DefaultWriterPattern = "{from}/{original_filename}"
	DefaultFileMode      = "0640"
	DefaultDirMode       = "0750"
)

// NewWriterConfig returns a config with its defaults set.
func NewWriterConfig() *WriterConfig {
	return &WriterConfig{
		Pattern:     DefaultWriterPattern,
		OnCollision: string(CollisionSuffix),
		FileMode:    DefaultFileMode,
		DirMode:     DefaultDirMode,
	}
}

// Validate checks the config; errors are *persistence.FieldError.
func (c *WriterConfig) Validate() error {
	var errs persistence.FieldErrors
	if err := targetOptionsError(c.TargetOptions.Validate()); !errs.Merge(err) {
		return err
	}
	if err := checkAbsDir("directory", c.Directory, true); !errs.Merge(err) {
		return err
	}
	if _, err := parseNamePattern(c.Pattern); err != nil {
		errs.Add("pattern", err.Error())
	}
	if _, err := ParseCollision(c.OnCollision); err != nil {
		errs.Add("on_collision", err.Error())
	}
	if _, err := parseMode(c.FileMode); err != nil {
		errs.Add("file_mode", err.Error())
	}
	if _, err := parseMode(c.DirMode); err != nil {
		errs.Add("dir_mode", err.Error())
	}
	return errs.Err()
}

// targetOptionsError turns an error of delivery.TargetOptions.Validate, which starts with
// the field's JSON path ("retry.max_retries: …"), into a FieldError.
func targetOptionsError(err error) error {
	if err == nil {
		return nil
	}
	field, msg, ok := strings.Cut(err.Error(), ": ")
	if !ok {
		return &persistence.FieldError{Field: "retry", Message: err.Error()}
	}
	return &persistence.FieldError{Field: field, Message: msg}
}

// parseMode reads an octal permission such as "0640"; special bits are refused.
func parseMode(s string) (fs.FileMode, error) {
	if s == "" {
		return 0, fmt.Errorf("required")
	}
	v, err := strconv.ParseUint(s, 8, 32)
	if err != nil {
		return 0, fmt.Errorf("must be octal permissions like 0640")
	}
	if v > 0o777 {
		return 0, fmt.Errorf("must be at most 0777 (no setuid, setgid or sticky bits)")
	}
	return fs.FileMode(v), nil
}
