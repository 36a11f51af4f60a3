package ui

import "wharf/internal/module"

// fieldGroup is one part of a module's panel form: a fieldset, or a part folded away in
// <details> (opened when one of its fields was refused).
type fieldGroup struct {
	Title  string
	Folded bool
	Open   bool
	Fields []module.PanelField
}

// fieldGroups splits a panel's fields into their groups, in the order they first appear,
// the folded ones last.
func fieldGroups(fields []module.PanelField, errs map[string]string) []fieldGroup {
	var open, folded []fieldGroup
	index := map[string]int{}
	for _, f := range fields {
		list := &open
		if f.Folded {
			list = &folded
		}
		key := f.Group
		if f.Folded {
			key = "\x00" + key
		}
		i, ok := index[key]
		if !ok {
			i = len(*list)
			index[key] = i
			*list = append(*list, fieldGroup{Title: f.Group, Folded: f.Folded})
		}
		g := &(*list)[i]
		g.Fields = append(g.Fields, f)
		if errs[f.Name] != "" {
			g.Open = true
		}
	}
	return append(open, folded...)
}
