package db_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every query of the history carries a time range, so that PostgreSQL reads only the
// month partitions it needs: the statements naming message_history in the store bound at.
func TestHistoryQueriesBoundTheirTime(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	stmt := regexp.MustCompile("(?s)`[^`]*\\bFROM message_history\\b[^`]*`")
	bound := regexp.MustCompile(`\bat\s*(<|>|<=|>=)\s*(\?|\(SELECT\b)`)
	seen := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range stmt.FindAllString(string(src), -1) {
			seen++
			if !bound.MatchString(q) {
				t.Errorf("%s: a history query without a time bound: %s", f, q)
			}
		}
	}
	if seen == 0 {
		t.Fatal("found no history query: the scan is broken")
	}
}
