package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"cuelang.org/go/cue/parser"

	"github.com/pistra/pistra/compiler/probe"
	"github.com/pistra/pistra/runtime/plan"
)

const probeSynopsis = "-provider P -channel C [-model M] [-o FILE] [-yes] [-timeout D] (POLICYDIR | -bundle FILE)"

// probeFlags are probe's settings.
type probeFlags struct {
	provider, channel, model, out, bundle string
	yes                                   bool
	timeout                               time.Duration
}

func (c *cli) probe(args []string) int {
	fs := c.flags("probe", probeSynopsis)
	var f probeFlags
	fs.StringVar(&f.provider, "provider", "", "the `PROVIDER` of the catalog to probe")
	fs.StringVar(&f.channel, "channel", "", "its provider_compat `CHANNEL` to probe")
	fs.StringVar(&f.model, "model", "", "the upstream `MODEL` the calls name (default: the first a plan sends the channel)")
	fs.StringVar(&f.out, "o", "", "write the overlay to `FILE` (default POLICYDIR/probe-PROVIDER-CHANNEL.cue; needed with -bundle)")
	fs.BoolVar(&f.yes, "yes", false, "make the calls without asking first")
	fs.DurationVar(&f.timeout, "timeout", time.Minute, "bound on each call")
	fs.StringVar(&f.bundle, "bundle", "", "read the graph from bundle.json `FILE` instead of a policy directory")
	pos, status, ok := c.parse(fs, args, 0, 1)
	if !ok {
		return status
	}
	if f.provider == "" || f.channel == "" {
		return c.usageError("probe", "-provider and -channel are required")
	}
	if f.out == "" && len(pos) == 1 {
		f.out = filepath.Join(pos[0], probe.OverlayName(f.provider, f.channel)+".cue")
	}
	if f.out == "" {
		return c.usageError("probe", "with -bundle, say where the overlay goes with -o")
	}
	if err := ownOverlay(f.out); err != nil {
		return c.fail("probe", err, exitUsage)
	}
	g, status := c.loadSource("probe", pos, f.bundle)
	if g == nil {
		return status
	}
	t, err := probe.NewTarget(g, f.provider, f.channel, f.model, os.LookupEnv, f.timeout)
	if err != nil {
		return c.fail("probe", err, exitUsage)
	}
	c.printProbePlan(t)
	if !f.yes && !c.confirm("make these calls?") {
		fmt.Fprintln(c.stderr, "pistrac probe: nothing sent (-yes makes the calls without asking)")
		return exitUsage
	}
	report, err := t.Run(context.Background())
	if err != nil {
		return c.fail("probe", fmt.Errorf("%w; nothing written", err), exitUsage)
	}
	c.printFindings(report)
	if err := c.writeOverlay(f.out, t, report); err != nil {
		return c.fail("probe", err, exitUsage)
	}
	return c.regressions(t, report)
}

// ownOverlay refuses, before any call is made, a place the overlay cannot
// go: a missing directory, or a file the probe did not write.
func ownOverlay(path string) error {
	if info, err := os.Stat(filepath.Dir(path)); err != nil || !info.IsDir() {
		return fmt.Errorf("%s: no directory to write the overlay in", filepath.Dir(path))
	}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !bytes.HasPrefix(b, []byte(probe.Marker)):
		return fmt.Errorf("%s was not written by pistrac probe: not overwriting it (choose another with -o)", path)
	}
	return nil
}

func (c *cli) printProbePlan(t *probe.Target) {
	cred := "no credential"
	if t.CredentialEnv != "" {
		cred = "credential from $" + t.CredentialEnv
	}
	fmt.Fprintf(c.stdout, "probe %s/%s: %s dialect at %s, model %s, %s\n", t.Provider, t.Channel, t.Dialect, t.BaseURL, t.Model, cred)
	fmt.Fprintf(c.stdout, "current claim: preserves %s (%s)\n", t.Claim, claimSource(t))
	calls := t.Calls()
	in, out := 0, 0
	for _, call := range calls {
		in, out = in+call.InputTokens(), out+call.MaxOutput
	}
	fmt.Fprintf(c.stdout, "%d calls, about %d input tokens and at most %d output tokens:\n", len(calls), in, out)
	for i, call := range calls {
		fmt.Fprintf(c.stdout, "  %2d  %-24s %-17s ~%d in, <=%d out\n", i+1, call.Name, call.Route, call.InputTokens(), call.MaxOutput)
	}
}

func claimSource(t *probe.Target) string {
	parts := []string{"origin " + t.Origin}
	if t.VerifiedAt != "" {
		parts = append(parts, "verified "+t.VerifiedAt)
	}
	if t.VerifiedBy != "" {
		parts = append(parts, "by "+t.VerifiedBy)
	}
	return strings.Join(parts, ", ")
}

// confirm asks question on stdout and reads a yes from stdin.
func (c *cli) confirm(question string) bool {
	fmt.Fprintf(c.stdout, "%s [y/N] ", question)
	line, _ := bufio.NewReader(c.stdin).ReadString('\n')
	answer := strings.ToLower(strings.TrimSpace(line))
	return answer == "y" || answer == "yes"
}

func (c *cli) printFindings(r *probe.Report) {
	for _, cap := range plan.AllCaps.Caps() {
		i := slices.IndexFunc(r.Findings, func(f probe.Finding) bool { return f.Cap == cap })
		switch {
		case i < 0:
			fmt.Fprintf(c.stdout, "%-18s not probed: the dialect has no way to ask for it\n", cap)
		case r.Findings[i].Honoured:
			fmt.Fprintf(c.stdout, "%-18s honoured  %s\n", cap, r.Findings[i].Evidence)
		default:
			fmt.Fprintf(c.stdout, "%-18s dropped   %s\n", cap, r.Findings[i].Evidence)
		}
	}
	for _, rf := range r.Routes {
		fmt.Fprintf(c.stdout, "route %-12s %s\n", rf.Route, rf.Evidence)
	}
}

func (c *cli) writeOverlay(path string, t *probe.Target, r *probe.Report) error {
	pkg, err := cuePackage(filepath.Dir(path))
	if err != nil {
		return err
	}
	o := probe.Overlay{Package: pkg, Provider: t.Provider, Channel: t.Channel, Date: c.now().UTC().Format(time.DateOnly), Report: r}
	src, err := o.Render()
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, src, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "wrote %s: preserves %s\n", path, r.Preserves())
	return nil
}

// cuePackage is the package of the CUE files in dir, the policy's, which
// an overlay written there must share; "pistra" when dir has none.
func cuePackage(dir string) (string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.cue"))
	if err != nil {
		return "", err
	}
	for _, name := range files {
		f, err := parser.ParseFile(name, nil, parser.PackageClauseOnly)
		if err != nil {
			return "", err
		}
		if pkg := f.PackageName(); pkg != "" {
			return pkg, nil
		}
	}
	return "pistra", nil
}

// regressions names each capability the channel's current claim
// preserves that the endpoint was seen to drop: exit 1 when there is one.
func (c *cli) regressions(t *probe.Target, r *probe.Report) int {
	lost := r.Regressions(t.Claim)
	for _, f := range lost {
		fmt.Fprintf(c.stderr, "pistrac probe: regression: %s/%s drops %s, which its claim preserves (%s): %s\n",
			t.Provider, t.Channel, f.Cap, claimSource(t), f.Evidence)
	}
	if len(lost) > 0 {
		return exitFail
	}
	return exitOK
}
