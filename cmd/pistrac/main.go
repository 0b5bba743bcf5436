// Command pistrac compiles a pistra policy (CUE files: catalog and policy)
// into the decision graph pistrad serves, and answers questions about it:
// why a request would be routed where it is, what a policy change does to
// routing, and how old each channel's capability claim is.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Exit statuses, as documented in usageText.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

const usageText = `pistrac compiles a pistra policy directory (CUE) into the decision graph
that pistrad serves, and explains it.

Usage:
  pistrac build -o DIR [-signing-key FILE] POLICYDIR
        compile and write the generated package, bundle.json and the CEL
        bundle into DIR, removing generated files it no longer produces;
        warnings are printed and do not stop the build; with -signing-key
        the bundle carries a signature over its digest
  pistrac keygen -o NAME
        make an ed25519 key pair for signing bundles: NAME.key (private,
        for pistrac build) and NAME.pub (for pistrad -bundle-public-key)
  pistrac check [-strict] POLICYDIR
        compile only; prints "ok: ..." on success, every error otherwise;
        warnings (policy that cannot take effect, a claim verified more
        than claim_max_age_days ago) are printed too, and with -strict
        fail the check
  pistrac explain (-profile P | -key K) -route R -model M [-caps a,b] [-suspend RULE,...] (POLICYDIR | -bundle FILE)
        the candidates of one plan in order, every skip with its reason, and
        what fidelity selection does for a request using the given caps
  pistrac diff A B
        which (profile, route, model) plans and which settings differ, each
        change once with the plans it applies to and, for a policy
        directory, the file:line:col that makes it; A and B are each a
        policy directory or a bundle.json
  pistrac graph [-o FILE] [-base OLD] [-title T] (POLICYDIR | -bundle FILE)
        the decision graph as one self-contained HTML page (inline SVG, no
        script, nothing fetched): per profile every plan's candidates in
        attempt order with the failover edges, its skips with their reasons
        and the file:line that causes them, the budgets and access rules
        that apply; with -base, what changed against OLD (a bundle.json or
        a policy directory) is marked
  pistrac catalog [-format text|json] (POLICYDIR | -bundle FILE)
        every routable channel with the provenance and age of its claim
        (a preset's, a policy file's or the overlay's that won) and the
        claims it overrode, and (text) every model with the routes it
        answers on
  pistrac probe -provider P -channel C [-model M] [-o FILE] [-yes] (POLICYDIR | -bundle FILE)
        observe which capabilities the live endpoint of a provider_compat
        channel honours: prints the calls and their token estimate, asks
        (unless -yes), makes them, and writes the findings as a dated
        overlay (default POLICYDIR/probe-P-C.cue) with the evidence per
        capability
  pistrac reconcile [-pistra URL] [-from DAY] [-to DAY] [-provider P,...] [-format text|json] (POLICYDIR | -bundle FILE)
        hold pistra's usage ledger (a pistrad's /admin/v1/usage, token in
        $PISTRA_ADMIN_TOKEN) against each provider's admin usage API (key
        in the variable its usage_api names), per UTC day, model and token
        class, for the days past their settle delay: a verdict per class
        (match, drift, missing on one side, unmetered), and why where the
        data shows it
  pistrac presets [NAME]
        the presets this pistrac embeds (import "pistra.dev/presets"), or
        one preset's CUE with its dated claims
  pistrac test [-update] [-v] POLICYDIR
        run the policy's golden routing cases (POLICYDIR/tests/*.cue) with
        the gateway's own decision; a failing case prints its file:line,
        want and got; -update rewrites the wants of failing cases
  pistrac caps
        every capability: what it means, what in a request counts as using
        it on each route, and where the facts about channels come from
  pistrac hash-key < KEYFILE
        print the sha256:<hex> of a client key read from stdin, for keys[].hash

Run "pistrac COMMAND -h" for a command's flags.

Exit status:
  0  success (diff: nothing changed; test: every case passed)
  1  build, check, explain, catalog: the policy has errors (check -strict:
     or warnings), or explain's query has no plan; diff: plans or settings
     (keys, profiles, budgets, rules, providers, ...) changed; test: a case
     failed; probe: the endpoint drops a capability the channel's current
     claim preserves (a regression, named on stderr); reconcile: a row of
     a judged day did not match (drift, missing on one side, unmetered)
  2  usage error, unreadable input or output, or (diff) a side that does
     not load, or (test) a policy or case file that does not load, or
     (probe) the calls were declined or the endpoint could not be probed
     (down, busy, or refusing a plain request): nothing written, or
     (reconcile) pistra's side or a provider's usage API could not be read
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// cli carries a run's streams and clock, so commands are testable in
// process.
type cli struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	now            func() time.Time
}

// command is one subcommand.
type command struct {
	name string
	run  func(c *cli, args []string) int
}

var commands = []command{
	{"build", (*cli).build},
	{"check", (*cli).check},
	{"explain", (*cli).explain},
	{"diff", (*cli).diff},
	{"catalog", (*cli).catalog},
	{"probe", (*cli).probe},
	{"reconcile", (*cli).reconcile},
	{"test", (*cli).test},
	{"graph", (*cli).graph},
	{"caps", (*cli).caps},
	{"presets", (*cli).presets},
	{"hash-key", (*cli).hashKey},
	{"keygen", (*cli).keygen},
}

// run is main without the process: it returns the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := &cli{stdin: stdin, stdout: stdout, stderr: stderr, now: time.Now}
	return c.dispatch(args)
}

func (c *cli) dispatch(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(c.stderr, usageText)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(c.stdout, usageText)
		return exitOK
	}
	for _, cmd := range commands {
		if cmd.name == args[0] {
			return cmd.run(c, args[1:])
		}
	}
	fmt.Fprintf(c.stderr, "pistrac: unknown command %q (commands: %s)\n", args[0], commandNames())
	return exitUsage
}

func commandNames() string {
	names := make([]string, len(commands))
	for i, cmd := range commands {
		names[i] = cmd.name
	}
	return strings.Join(names, ", ")
}

// flags returns a flag set for a subcommand whose usage shows synopsis
// (its arguments) and its flags.
func (c *cli) flags(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: pistrac %s %s\n", name, synopsis)
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), "\nRun \"pistrac -h\" for exit statuses.\n")
	}
	return fs
}

// parse reads flags and positional arguments in any order (flag stops at
// the first positional one) and checks that there are between least and
// most positional ones. When parsing ends the command, ok is false and
// status is what to exit with: 0 after -h, exitUsage on a mistake.
func (c *cli) parse(fs *flag.FlagSet, args []string, least, most int) (pos []string, status int, ok bool) {
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, exitOK, false
			}
			return nil, exitUsage, false
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos, args = append(pos, args[0]), args[1:]
	}
	if len(pos) < least || len(pos) > most {
		fmt.Fprintf(c.stderr, "pistrac %s: unexpected number of arguments (%d)\n", fs.Name(), len(pos))
		fs.Usage()
		return nil, exitUsage, false
	}
	return pos, exitOK, true
}

// usageError reports a mistake in how a command was called.
func (c *cli) usageError(cmd, format string, args ...any) int {
	fmt.Fprintf(c.stderr, "pistrac %s: %s\n", cmd, fmt.Sprintf(format, args...))
	return exitUsage
}
