package file

import (
	"strconv"

	"wharf/internal/persistence"
)

// Collision is what a file writer does when the name it renders is taken by a file with
// other bytes (identical bytes always count as delivered: an earlier attempt wrote them).
type Collision string

const (
	// CollisionSuffix writes under the first free name of order-1.edi, order-2.edi, …
	// and records the name in the delivery's history.
	CollisionSuffix Collision = "suffix"
	// CollisionOverwrite replaces the file.
	CollisionOverwrite Collision = "overwrite"
	// CollisionFail fails the delivery.
	CollisionFail Collision = "fail"
)

var allCollisions = []Collision{CollisionSuffix, CollisionOverwrite, CollisionFail}

// ParseCollision parses an on_collision value.
func ParseCollision(s string) (Collision, error) {
	return persistence.ParseEnum("collision policy", s, allCollisions)
}

// maxSuffix bounds the names a suffixing writer tries before it gives up on a file.
const maxSuffix = 9999

// suffixed is the n-th alternative of a safe file name (n ≥ 1): "-n" before the last
// extension, the base cut so the whole stays within maxNameBytes.
func suffixed(name string, n int) string {
	base, ext := splitExt(name)
	if ext != "" {
		ext = "." + ext
	}
	suffix := "-" + strconv.Itoa(n)
	if room := maxNameBytes - len(ext) - len(suffix); len(base) > room {
		base = cutUTF8(base, max(room, 0))
	}
	return SafeName(base + suffix + ext)
}
