// Package presets holds the catalog presets pistrac ships: one CUE package,
// imported by a policy as "pistra.dev/presets", with one field per way of
// reaching a provider (presets.gemini, presets.azure, ...), each written in
// the file of its name and every capability claim in it dated and sourced.
// pistrac serves the import from this embedded copy, so using a preset
// needs no network and no CUE registry, and the presets a build read are
// those of the pistrac that built it.
package presets

import (
	"embed"
	"io/fs"
	"strings"
)

// Module is the import path of the presets' package.
const Module = "pistra.dev/presets"

//go:embed *.cue
var files embed.FS

// FS holds the presets' files, one per preset, named like its field.
var FS fs.FS = files

// Names lists the presets, sorted.
func Names() []string {
	entries, _ := fs.ReadDir(files, ".") // embedded: cannot fail
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = strings.TrimSuffix(e.Name(), ".cue")
	}
	return out
}
