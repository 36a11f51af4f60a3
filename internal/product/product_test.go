package product

import (
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	if v := Version(); v == "" || strings.ContainsAny(v, " /") {
		t.Fatalf("Version() = %q, want one token", v)
	}
	for _, tc := range []struct {
		hide bool
		want string
	}{
		{false, "Wharf/" + Version()},
		{true, "Wharf"},
	} {
		if got := String(tc.hide); got != tc.want {
			t.Errorf("String(%v) = %q, want %q", tc.hide, got, tc.want)
		}
	}
}
