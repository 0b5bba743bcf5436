package main

import (
	"fmt"

	"github.com/pistra/pistra/compiler/policytest"
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
	cases, err := policytest.Load(pos[0])
	if err != nil {
		return c.fail("test", err, exitUsage)
	}
	results := policytest.Run(g, cases)
	failed := 0
	for _, r := range results {
		if r.Pass() {
			if *verbose {
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
	if *update && failed > 0 {
		n, err := policytest.Update(results)
		if err != nil {
			return c.fail("test", err, exitUsage)
		}
		fmt.Fprintf(c.stdout, "updated %d of %d failing cases\n", n, failed)
		if n == failed {
			return exitOK
		}
		return exitFail
	}
	if failed > 0 {
		fmt.Fprintf(c.stdout, "FAIL: %d of %d cases failed\n", failed, len(results))
		return exitFail
	}
	fmt.Fprintf(c.stdout, "ok: %s: %d cases passed\n", pos[0], len(results))
	return exitOK
}
