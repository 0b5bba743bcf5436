package main

import (
	"fmt"

	"github.com/pistra/pistra/compiler/policytest"
	"github.com/pistra/pistra/runtime/plan"
)

// test runs a policy's golden routing cases (POLICYDIR/tests/*.cue): 0 when
// every case passes, 1 when one fails, 2 when the policy or a case file
// does not load.
func (c *cli) test(args []string) int {
	fs := c.flags("test", "[-update] [-v] POLICYDIR")
	update := fs.Bool("update", false, "rewrite the want of every failing case with what it got")
	verbose := fs.Bool("v", false, "print every case, passing ones too")
	pos, status, ok := c.parse(fs, args, 1, 1)
	if !ok {
		return status
	}
	g, status := c.compileDir("test", pos[0])
	if g == nil {
		return exitUsage // a policy that does not compile is not a failing case
	}
	results, status := c.runCases(g, pos[0])
	if results == nil {
		return status
	}
	failed := c.report(results, *verbose)
	if *update && failed > 0 {
		n, manual, err := policytest.Update(results)
		for _, m := range manual {
			fmt.Fprintf(c.stdout, "not updated: %s\n", m)
		}
		if err != nil {
			return c.fail("test", err, exitUsage)
		}
		fmt.Fprintf(c.stdout, "updated %d of %d failing cases\n", n, failed)
		if n > 0 {
			// The rewritten files are asked again: only a run that passes
			// is a success, whatever the rewrite did.
			if results, status = c.runCases(g, pos[0]); results == nil {
				return status
			}
			failed = c.report(results, false)
		}
	}
	if failed > 0 {
		fmt.Fprintf(c.stdout, "FAIL: %d of %d cases failed\n", failed, len(results))
		return exitFail
	}
	fmt.Fprintf(c.stdout, "ok: %s: %d cases passed\n", pos[0], len(results))
	return exitOK
}

// runCases loads dir's cases and answers them on g; nil and the exit status
// when they do not load.
func (c *cli) runCases(g *plan.Graph, dir string) ([]policytest.Result, int) {
	cases, err := policytest.Load(dir, g)
	if err != nil {
		return nil, c.fail("test", err, exitUsage)
	}
	return policytest.Run(g, cases), exitOK
}

// report prints every failing case (every case when verbose) and returns
// how many failed.
func (c *cli) report(results []policytest.Result, verbose bool) int {
	failed := 0
	for _, r := range results {
		if r.Pass() {
			if verbose {
				fmt.Fprintf(c.stdout, "ok    %s: %s\n", r.Case.Pos, r.Case.Name)
			}
			continue
		}
		failed++
		fmt.Fprintf(c.stdout, "FAIL  %s: %s\n", r.Case.Pos, r.Case.Name)
		if r.Err != nil {
			fmt.Fprintf(c.stdout, "      cannot ask: %v\n", r.Err)
			continue
		}
		fmt.Fprintf(c.stdout, "      want: %s\n      got:  %s\n", policytest.Describe(r.Case.Want), r.GotText())
		if r.Message != "" {
			fmt.Fprintf(c.stdout, "      (%s)\n", r.Message)
		}
	}
	return failed
}
