// Package version is the build's version, as pistra's binaries report it
// and as the claims pistra makes itself (its translators') name it.
package version

import (
	"runtime/debug"
	"sync"
)

// Version is set at link time by release builds:
//
//	-ldflags "-X github.com/pistra/pistra/runtime/version.Version=v1.4.0"
//
// Left empty, String reads it from the build information.
var Version string

// String is the version: the linked-in one, else the module version the
// toolchain recorded, else the VCS revision it was built from, else "dev".
var String = sync.OnceValue(func() string {
	if Version != "" {
		return Version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			return "dev-" + s.Value[:12]
		}
	}
	return "dev"
})
