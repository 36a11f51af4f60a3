package module

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// moduleOf names the protocol module a package belongs to, or "" for the core.
func moduleOf(pkg string) string {
	for _, prefix := range []string{"wharf/internal/protocol/", "wharf/internal/notification"} {
		if rest, ok := strings.CutPrefix(pkg, prefix); ok {
			if i := strings.Index(rest, "/"); i >= 0 {
				rest = rest[:i]
			}
			return prefix + rest
		}
	}
	return ""
}

// TestDependencyDirection holds the layering: the core imports no protocol module and no
// module imports another; only cmd/wharf brings modules in. Tests may import modules to
// exercise them.
func TestDependencyDirection(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(filepath.Join(root, "internal"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := "wharf/" + filepath.ToSlash(rel)
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		own := moduleOf(pkg)
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			other := moduleOf(p)
			if other == "" || other == own {
				continue
			}
			if own == "" {
				t.Errorf("%s: core package %s imports module %s", path, pkg, p)
			} else {
				t.Errorf("%s: module %s imports another module %s", path, own, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 10 {
		t.Fatalf("only %d files checked; the walk is broken", checked)
	}
}
