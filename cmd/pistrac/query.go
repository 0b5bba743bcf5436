package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/pistra/pistra/compiler"
	"github.com/pistra/pistra/compiler/explain"
	capsdoc "github.com/pistra/pistra/runtime/caps"
	"github.com/pistra/pistra/runtime/plan"
)

func (c *cli) explain(args []string) int {
	fs := c.flags("explain", "(-profile P | -key K) -route R -model M [-caps a,b] [-suspend RULE,...] (POLICYDIR | -bundle FILE)")
	var q explain.Query
	fs.StringVar(&q.Profile, "profile", "", "the `PROFILE` whose plan to explain")
	fs.StringVar(&q.Key, "key", "", "the `KEY` name whose profile to use, instead of -profile")
	route := fs.String("route", "", "the inbound `ROUTE`: "+strings.Join(routeNames(), ", "))
	fs.StringVar(&q.Model, "model", "", "the requested `MODEL` or alias")
	caps := fs.String("caps", "", "comma-separated `CAPS` the request uses: "+strings.Join(plan.CapNames(), ", ")+
		" (\"pistrac caps\" says what counts as using each)")
	suspend := fs.String("suspend", "", "comma-separated access `RULES` to decide with suspended, as pistrad does while they are")
	bundlePath := fs.String("bundle", "", "read the graph from bundle.json `FILE` instead of a policy directory")
	pos, status, ok := c.parse(fs, args, 0, 1)
	if !ok {
		return status
	}
	var err error
	if q.Caps, err = plan.ParseCaps(*caps); err != nil {
		return c.usageError("explain", "%v", err)
	}
	if *suspend != "" {
		q.Suspend = strings.Split(*suspend, ",")
	}
	q.Route = plan.Route(*route)
	g, status := c.loadSource("explain", pos, *bundlePath)
	if g == nil {
		return status
	}
	if err := explain.Plan(c.stdout, g, q); err != nil {
		return c.fail("explain", err, exitFail)
	}
	return exitOK
}

func (c *cli) catalog(args []string) int {
	fs := c.flags("catalog", "[-format text|json] (POLICYDIR | -bundle FILE)")
	format := fs.String("format", "text", "output `FORMAT`: text or json")
	bundlePath := fs.String("bundle", "", "read the graph from bundle.json `FILE` instead of a policy directory")
	pos, status, ok := c.parse(fs, args, 0, 1)
	if !ok {
		return status
	}
	if *format != "text" && *format != "json" {
		return c.usageError("catalog", "unknown format %q (formats: text, json)", *format)
	}
	g, status := c.loadSource("catalog", pos, *bundlePath)
	if g == nil {
		return status
	}
	if err := explain.Catalog(c.stdout, g, c.now(), *format); err != nil {
		return c.fail("catalog", err, exitUsage)
	}
	return exitOK
}

// diff follows diff(1): 0 when nothing changed, 1 when plans or settings
// did, 2 when either side cannot be loaded.
func (c *cli) diff(args []string) int {
	fs := c.flags("diff", "A B")
	pos, status, ok := c.parse(fs, args, 2, 2)
	if !ok {
		return status
	}
	var graphs [2]*plan.Graph
	var places [2]explain.Positions
	for i, path := range pos {
		g, err := load(path)
		if err != nil {
			return c.fail("diff", err, exitUsage)
		}
		graphs[i] = g
		if info, err := os.Stat(path); err == nil && info.IsDir() {
			src, err := compiler.LoadSource(path)
			if err != nil {
				return c.fail("diff", err, exitUsage)
			}
			places[i] = positions{src}
		}
	}
	changed, err := explain.Diff(c.stdout, graphs[0], graphs[1], places[0], places[1])
	switch {
	case err != nil:
		return c.fail("diff", err, exitUsage)
	case changed > 0:
		return exitFail
	}
	return exitOK
}

// positions places diff's changes in a policy directory.
type positions struct{ src *compiler.Source }

func (p positions) Pos(path ...any) string {
	elems := make([]any, len(path))
	for i, e := range path {
		if n, ok := e.(explain.Named); ok {
			e = compiler.Named(n)
		}
		elems[i] = e
	}
	if at := p.src.Pos(elems...); at.File != "" {
		return at.String()
	}
	return ""
}

// caps prints what each capability is, what in a request counts as using
// it, and where the facts come from: the text schema/policy.cue carries.
func (c *cli) caps(args []string) int {
	fs := c.flags("caps", "")
	if _, status, ok := c.parse(fs, args, 0, 0); !ok {
		return status
	}
	for _, l := range capsdoc.Reference(78) {
		fmt.Fprintln(c.stdout, l)
	}
	return exitOK
}

// maxKeyLen bounds what hash-key reads; client keys are short tokens.
const maxKeyLen = 4096

func (c *cli) hashKey(args []string) int {
	fs := c.flags("hash-key", "< KEYFILE")
	if _, status, ok := c.parse(fs, args, 0, 0); !ok {
		return status
	}
	b, err := io.ReadAll(io.LimitReader(c.stdin, maxKeyLen+1))
	if err != nil {
		return c.fail("hash-key", fmt.Errorf("reading stdin: %w", err), exitUsage)
	}
	if len(b) > maxKeyLen {
		return c.usageError("hash-key", "stdin holds more than %d bytes; expected one key", maxKeyLen)
	}
	key := strings.TrimSpace(string(b))
	if key == "" {
		return c.usageError("hash-key", "no key on stdin")
	}
	sum := sha256.Sum256([]byte(key))
	fmt.Fprintf(c.stdout, "sha256:%s\n", hex.EncodeToString(sum[:]))
	return exitOK
}

func routeNames() []string {
	out := make([]string, len(plan.Routes))
	for i, r := range plan.Routes {
		out[i] = string(r)
	}
	return out
}
