package db_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// historyRewrite matches a statement that changes or removes history rows.
var historyRewrite = regexp.MustCompile(`(?is)\b(UPDATE\s+message_history|DELETE\s+FROM\s+message_history|TRUNCATE\s+(TABLE\s+)?message_history|DROP\s+TABLE\s+(IF\s+EXISTS\s+)?message_history)\b`)

// retentionFile names the only files that may remove history: retention prunes it.
func retentionFile(path string) bool {
	return strings.HasPrefix(filepath.Base(path), "retention")
}

// erasureRewrite is the one change to history rows besides retention: an erasure blanks
// the reason text that quoted the erased document, in erasure_history.go alone, and
// touches no other column.
var erasureRewrite = regexp.MustCompile(`(?is)^.UPDATE\s+message_history\s+SET\s+reason\s*=\s*\?\s+WHERE\b[^;]*$`)

// allowedRewrite tells whether a file may hold a statement that changes history.
func allowedRewrite(path, stmt string) bool {
	if retentionFile(path) {
		return true
	}
	return filepath.Base(path) == "erasure_history.go" && erasureRewrite.MatchString(stmt)
}

func TestHistoryRewriteMatcher(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		want bool
	}{
		{"UPDATE message_history SET reason = ''", true},
		{"update\n\tmessage_history set actor = ?", true},
		{"DELETE FROM message_history WHERE id = ?", true},
		{"delete  from message_history", true},
		{"TRUNCATE message_history", true},
		{"DROP TABLE IF EXISTS message_history", true},
		{"INSERT INTO message_history (message_id) VALUES (?)", false},
		{"SELECT * FROM message_history", false},
		{"UPDATE messages SET status = ?", false},
		{"DELETE FROM message_history_export", false},
	} {
		if got := historyRewrite.MatchString(tc.sql); got != tc.want {
			t.Errorf("%q: matched %v, want %v", tc.sql, got, tc.want)
		}
	}
}

// TestHistoryIsAppendOnly reads every Go source of the project: no string in it updates,
// deletes, truncates or drops message history, except in a retention file (and the
// erasure's blanking of reasons in erasure_history.go). History is
// written by the store's history writer alone and is only ever appended to.
func TestHistoryIsAppendOnly(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("the project root is not %s: %v", root, err)
	}
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		files++
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if ok && lit.Kind == token.STRING && historyRewrite.MatchString(lit.Value) && !allowedRewrite(path, lit.Value) {
				t.Errorf("%s changes or removes history rows (%s): history is append-only; only retention prunes it and erasure blanks reasons", path, historyRewrite.FindString(lit.Value))
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 200 {
		t.Errorf("only %d Go files scanned; the source scan is broken", files)
	}
}
