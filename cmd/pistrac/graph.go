package main

import (
	"bytes"
	"os"

	"github.com/pistra/pistra/compiler"
	"github.com/pistra/pistra/compiler/graph"
)

// graph writes the decision graph as one self-contained HTML page, marked
// against -base when given.
func (c *cli) graph(args []string) int {
	fs := c.flags("graph", "[-o FILE] [-base OLD] [-title T] (POLICYDIR | -bundle FILE)")
	out := fs.String("o", "", "write the page to `FILE` instead of stdout")
	basePath := fs.String("base", "", "mark what changed against the graph in `OLD` (a bundle.json or a policy directory)")
	title := fs.String("title", "", "the page's `TITLE` (default: the policy's source hash)")
	bundlePath := fs.String("bundle", "", "read the graph from bundle.json `FILE` instead of a policy directory")
	pos, status, ok := c.parse(fs, args, 0, 1)
	if !ok {
		return status
	}
	g, status := c.loadSource("graph", pos, *bundlePath)
	if g == nil {
		return status
	}
	opt := graph.Options{Title: *title}
	if len(pos) == 1 {
		src, err := compiler.LoadSource(pos[0])
		if err != nil {
			return c.fail("graph", err, exitUsage)
		}
		opt.Positions = positions{src}
	}
	if *basePath != "" {
		base, err := load(*basePath)
		if err != nil {
			return c.fail("graph", err, exitUsage)
		}
		opt.Base = base
	}
	var page bytes.Buffer
	if err := graph.Render(&page, g, opt); err != nil {
		return c.fail("graph", err, exitFail)
	}
	if *out == "" {
		_, err := c.stdout.Write(page.Bytes())
		return c.writeStatus(err)
	}
	return c.writeStatus(os.WriteFile(*out, page.Bytes(), 0o644))
}

// writeStatus is the status after writing the page: an output that cannot
// be written is a usage problem.
func (c *cli) writeStatus(err error) int {
	if err != nil {
		return c.fail("graph", err, exitUsage)
	}
	return exitOK
}
