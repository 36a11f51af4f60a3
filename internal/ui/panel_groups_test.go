package ui

import (
	"reflect"
	"testing"

	"wharf/internal/module"
)

func TestFieldGroups(t *testing.T) {
	fields := []module.PanelField{
		{Name: "a", Group: "Identity"},
		{Name: "x", Group: "Advanced", Folded: true},
		{Name: "b", Group: "Security"},
		{Name: "c", Group: "Identity"},
		{Name: "y", Group: "Advanced", Folded: true},
	}
	names := func(gs []fieldGroup) [][]string {
		var out [][]string
		for _, g := range gs {
			row := []string{g.Title}
			for _, f := range g.Fields {
				row = append(row, f.Name)
			}
			out = append(out, row)
		}
		return out
	}
	got := fieldGroups(fields, nil)
	want := [][]string{{"Identity", "a", "c"}, {"Security", "b"}, {"Advanced", "x", "y"}}
	if !reflect.DeepEqual(names(got), want) {
		t.Errorf("groups = %v, want %v", names(got), want)
	}
	if got[2].Open || !got[2].Folded {
		t.Errorf("the advanced group is open without an error: %+v", got[2])
	}
	if got := fieldGroups(fields, map[string]string{"y": "wrong"}); !got[2].Open {
		t.Error("a folded group with a refused field stays closed")
	}
}
