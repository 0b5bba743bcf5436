package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/pistra/pistra/policies/presets"
)

// presets lists the presets this pistrac embeds, each with the first
// sentence of its comment, or prints one preset's CUE: what importing it brings,
// its claims with their dates and pages included.
func (c *cli) presets(args []string) int {
	flags := c.flags("presets", "[NAME]")
	pos, status, ok := c.parse(flags, args, 0, 1)
	if !ok {
		return status
	}
	names := presets.Names()
	if len(pos) == 1 {
		name := strings.TrimPrefix(pos[0], "presets.")
		if !slices.Contains(names, name) {
			return c.usageError("presets", "no preset %q (presets: %s)", pos[0], strings.Join(names, ", "))
		}
		src, _ := fs.ReadFile(presets.FS, name+".cue") // embedded: cannot fail
		c.stdout.Write(src)
		return exitOK
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	for _, name := range names {
		src, _ := fs.ReadFile(presets.FS, name+".cue")
		fmt.Fprintf(tw, "presets.%s\t%s\n", name, firstSentence(src))
	}
	tw.Flush()
	fmt.Fprintf(c.stdout, "\nimport %q in a policy file; \"pistrac presets NAME\" prints one.\n", presets.Module)
	return exitOK
}

// firstSentence is the first sentence of a file's leading comment.
func firstSentence(src []byte) string {
	var words []string
	sc := bufio.NewScanner(bytes.NewReader(src))
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "//")
		if !ok {
			break
		}
		for _, w := range strings.Fields(line) {
			words = append(words, w)
			if strings.HasSuffix(w, ".") || strings.HasSuffix(w, ":") {
				return strings.TrimRight(strings.Join(words, " "), ".:")
			}
		}
	}
	return strings.Join(words, " ")
}
