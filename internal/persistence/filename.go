package persistence

import "strings"

// Unhidden makes a partner's file name visible: leading spaces go and a leading dot
// becomes "_", so ".hidden", ".wharf-tmp-x" or "  .edi " never land as dot files, which
// tools and the file poller skip and the writer uses for its own temporary files.
func Unhidden(name string) string {
	name = strings.TrimLeft(name, " ")
	if strings.HasPrefix(name, ".") {
		name = "_" + name[1:]
	}
	return name
}
