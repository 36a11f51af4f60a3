package persistence

import (
	"errors"
	"fmt"
	"testing"
)

func TestFieldErrors(t *testing.T) {
	var es FieldErrors
	if es.Err() != nil {
		t.Fatal("no errors is not nil")
	}
	es.Add("port", "Enter a whole number, e.g. 8081.")
	es.Add("path", "Enter a path starting with /.")
	es.Add("port", "a later reason")
	err := fmt.Errorf("save config: %w", es.Err())

	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "port" {
		t.Fatalf("errors.As = %v", fe)
	}
	all, ok := AllFieldErrors(err)
	if !ok || len(all) != 2 || all[0].Message != "Enter a whole number, e.g. 8081." || all[1].Field != "path" {
		t.Fatalf("AllFieldErrors = %v, %v", all, ok)
	}
	if got := err.Error(); got != "save config: port: Enter a whole number, e.g. 8081.; path: Enter a path starting with /." {
		t.Errorf("Error() = %q", got)
	}

	for _, tc := range []struct {
		name string
		err  error
		n    int
		ok   bool
	}{
		{"nil", nil, 0, true},
		{"joined", errors.Join(&FieldError{"a", "x"}, &FieldError{"b", "y"}), 2, true},
		{"with a fault", errors.Join(&FieldError{"a", "x"}, errors.New("disk full")), 1, false},
		{"fault only", errors.New("disk full"), 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := AllFieldErrors(tc.err)
			if len(got) != tc.n || ok != tc.ok {
				t.Errorf("AllFieldErrors = %d errors, %v; want %d, %v", len(got), ok, tc.n, tc.ok)
			}
			var m FieldErrors
			if m.Merge(tc.err) != tc.ok || len(m) != tc.n {
				t.Errorf("Merge = %v with %d", !tc.ok, len(m))
			}
		})
	}
}
