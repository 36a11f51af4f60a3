// Package product names Wharf to the outside: the version of this build and the product
// string its HTTP clients, listeners and receipts carry.
package product

import (
	"runtime/debug"
	"sync"
)

// Name is the product's name.
const Name = "Wharf"

// version is set at build time: go build -ldflags "-X wharf/internal/product.version=1.4.0".
var version string

// Version is the build's version: the one the linker set, else the module version Go
// recorded (a build by go install of a tagged version), else "devel".
func Version() string { return buildVersion() }

var buildVersion = sync.OnceValue(func() string {
	if version != "" {
		return version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "devel"
})

// String is the product string Wharf sends (User-Agent, Server, an MDN's Reporting-UA):
// "Wharf/<version>", or "Wharf" alone when the version is hidden.
func String(hideVersion bool) string {
	if hideVersion {
		return Name
	}
	return Name + "/" + Version()
}
