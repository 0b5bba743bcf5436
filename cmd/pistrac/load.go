package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/pistra/pistra/compiler"
	"github.com/pistra/pistra/runtime/bundle"
	"github.com/pistra/pistra/runtime/plan"
)

// load returns the graph at path: compiled from a policy directory, or read
// back from a bundle.json file.
func load(path string) (*plan.Graph, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if info.IsDir() {
		return compiler.Compile(path)
	}
	return loadBundle(path)
}

func loadBundle(path string) (*plan.Graph, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	g, err := bundle.Load(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return g, nil
}

// loadSource loads the graph a command reads: a POLICYDIR argument or a
// -bundle file, exactly one of them.
func (c *cli) loadSource(cmd string, args []string, bundlePath string) (*plan.Graph, int) {
	switch {
	case len(args) == 1 && bundlePath == "":
		return c.compileDir(cmd, args[0])
	case len(args) == 0 && bundlePath != "":
		g, err := loadBundle(bundlePath)
		if err != nil {
			return nil, c.fail(cmd, err, statusOf(err))
		}
		return g, exitOK
	}
	return nil, c.usageError(cmd, "give either a policy directory or -bundle FILE")
}

// compileDir compiles a policy directory. A path that is not a directory
// is a usage error (a typo, or a bundle given without -bundle); a policy
// with errors is a failure, printed one problem per line.
func (c *cli) compileDir(cmd, dir string) (*plan.Graph, int) {
	g, _, status := c.compileDirWarnings(cmd, dir)
	return g, status
}

// compileDirWarnings is compileDir for the commands that report warnings
// (build and check): it prints them on stderr, in the errors' form, and
// returns them.
func (c *cli) compileDirWarnings(cmd, dir string) (*plan.Graph, compiler.Errors, int) {
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		return nil, nil, c.usageError(cmd, "%s is not a policy directory", dir)
	}
	g, warns, err := compiler.CompileWithWarningsAt(dir, c.now())
	if err != nil {
		return nil, nil, c.fail(cmd, err, statusOf(err))
	}
	if len(warns) > 0 {
		fmt.Fprintln(c.stderr, warns.Error())
	}
	return g, warns, exitOK
}

// statusOf is the exit status for a failed load: unreadable input is a
// usage problem, anything else (a policy or bundle with errors) a failure.
func statusOf(err error) int {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return exitUsage
	}
	return exitFail
}

// fail prints err. Compile errors print as the compiler formats them, one
// problem per line with its position first; anything else is prefixed with
// the command.
func (c *cli) fail(cmd string, err error, status int) int {
	if errs := (compiler.Errors{}); errors.As(err, &errs) {
		fmt.Fprintln(c.stderr, errs.Error())
	} else {
		fmt.Fprintf(c.stderr, "pistrac %s: %v\n", cmd, err)
	}
	return status
}
