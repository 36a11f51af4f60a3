package ui

import (
	"strconv"
	"testing"
)

func TestPageLinks(t *testing.T) {
	url := func(offset int) string { return "?offset=" + strconv.Itoa(offset) }
	for _, tc := range []struct {
		name                string
		offset, total, size int
		want                string // page numbers, * the current one, _ a gap
	}{
		{"one page", 0, 25, 25, ""},
		{"empty", 0, 0, 25, ""},
		{"two pages", 25, 26, 25, "1 2*"},
		{"first of many", 0, 1000, 50, "1* 2 3 _ 20"},
		{"middle", 500, 1000, 50, "1 _ 9 10 11* 12 13 _ 20"},
		{"near the start", 100, 1000, 50, "1 2 3* 4 5 _ 20"},
		{"last", 950, 1000, 50, "1 _ 18 19 20*"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			for i, p := range pageLinks(tc.offset, tc.total, tc.size, url) {
				if i > 0 {
					got += " "
				}
				switch {
				case p.Number == 0:
					got += "_"
				case p.URL != url((p.Number-1)*tc.size):
					t.Fatalf("page %d links %q", p.Number, p.URL)
				default:
					got += strconv.Itoa(p.Number)
				}
				if p.Current {
					got += "*"
				}
			}
			if got != tc.want {
				t.Errorf("pages = %q, want %q", got, tc.want)
			}
		})
	}
}
