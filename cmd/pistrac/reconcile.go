package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/pistra/pistra/compiler/reconcile"
	"github.com/pistra/pistra/runtime/plan"
)

const reconcileSynopsis = "[-pistra URL] [-from DAY] [-to DAY] [-provider P,...] [-format text|json] (POLICYDIR | -bundle FILE)"

type reconcileFlags struct {
	pistra, token, from, to, providers, format, bundle string
	timeout                                            time.Duration
}

// reconcile holds pistra's usage ledger against each provider's admin
// usage API (docs/reconcile.md). It runs from pistrac, not in pistrad:
// it needs the providers' admin keys, which can read and manage a whole
// organisation's usage and which the gateway has no business holding,
// and it is a scheduled audit whose exit status a CI job acts on.
func (c *cli) reconcile(args []string) int {
	fs := c.flags("reconcile", reconcileSynopsis)
	var f reconcileFlags
	fs.StringVar(&f.pistra, "pistra", os.Getenv("PISTRA_ADMIN_URL"), "`URL` of a pistrad serving /admin/v1/usage (default $PISTRA_ADMIN_URL)")
	fs.StringVar(&f.token, "admin-token", os.Getenv("PISTRA_ADMIN_TOKEN"), "pistrad's admin token (default $PISTRA_ADMIN_TOKEN, which keeps it out of the process list)")
	fs.StringVar(&f.from, "from", "", "first UTC `DAY` (YYYY-MM-DD) to judge (default: six days before -to)")
	fs.StringVar(&f.to, "to", "", "last UTC `DAY` to judge (default: yesterday)")
	fs.StringVar(&f.providers, "provider", "", "only these providers, comma-separated (default: every provider with a usage_api)")
	fs.StringVar(&f.format, "format", "text", "text for a person, json for a dashboard")
	fs.DurationVar(&f.timeout, "timeout", 5*time.Minute, "bound on the whole run")
	fs.StringVar(&f.bundle, "bundle", "", "read the graph from bundle.json `FILE` instead of a policy directory")
	pos, status, ok := c.parse(fs, args, 0, 1)
	if !ok {
		return status
	}
	run, err := f.run(c.now())
	if err != nil {
		return c.usageError("reconcile", "%v", err)
	}
	g, status := c.loadSource("reconcile", pos, f.bundle)
	if g == nil {
		return status
	}
	if run.Providers, err = usageProviders(g, f.providers, os.LookupEnv); err != nil {
		return c.usageError("reconcile", "%v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	defer cancel()
	rep, err := run.Reconcile(ctx)
	if err != nil {
		return c.fail("reconcile", err, exitUsage)
	}
	if f.format == "json" {
		err = rep.WriteJSON(c.stdout)
	} else {
		err = rep.WriteText(c.stdout)
	}
	if err != nil {
		return c.fail("reconcile", err, exitUsage)
	}
	switch rep.Status {
	case reconcile.StatusMatch:
		return exitOK
	case reconcile.StatusDrift:
		return exitFail
	}
	return exitUsage
}

// run checks the flags and makes the run's pistra side and days.
func (f *reconcileFlags) run(now time.Time) (reconcile.Run, error) {
	r := reconcile.Run{Now: now}
	switch {
	case f.pistra == "":
		return r, fmt.Errorf("say which pistrad to read with -pistra or $PISTRA_ADMIN_URL")
	case f.format != "text" && f.format != "json":
		return r, fmt.Errorf("-format is text or json, not %q", f.format)
	}
	r.Pistra = &reconcile.Pistrad{URL: f.pistra, Token: f.token, Client: &http.Client{Timeout: time.Minute}}
	today := now.UTC().Truncate(24 * time.Hour)
	r.To = today.AddDate(0, 0, -1)
	var err error
	if f.to != "" {
		if r.To, err = time.Parse(time.DateOnly, f.to); err != nil {
			return r, fmt.Errorf("-to: %w", err)
		}
	}
	r.From = r.To.AddDate(0, 0, -6)
	if f.from != "" {
		if r.From, err = time.Parse(time.DateOnly, f.from); err != nil {
			return r, fmt.Errorf("-from: %w", err)
		}
	}
	if r.From.After(r.To) || r.To.Sub(r.From) >= 62*24*time.Hour {
		return r, fmt.Errorf("-from %s to -to %s: want a range of at most 62 days, from before to", r.From.Format(time.DateOnly), r.To.Format(time.DateOnly))
	}
	return r, nil
}

// usageProviders are the providers with a usage API to read, of those
// named (all when none are), each with its admin key from the variable
// the policy names.
func usageProviders(g *plan.Graph, only string, env func(string) (string, bool)) ([]reconcile.Provider, error) {
	var want []string
	if only != "" {
		want = strings.Split(only, ",")
	}
	var out []reconcile.Provider
	for _, p := range g.Providers {
		u := p.UsageAPI
		if u == nil || u.API == "" || (want != nil && !slices.Contains(want, p.Name)) {
			continue
		}
		key, ok := env(u.AdminKeyEnv)
		if !ok || key == "" {
			return nil, fmt.Errorf("provider %s: its usage API's admin key is read from $%s, which is not set", p.Name, u.AdminKeyEnv)
		}
		rp := reconcile.Provider{Name: p.Name, API: u.API, SettleDelay: time.Duration(u.SettleDelayMS) * time.Millisecond, Tolerance: u.Tolerance}
		hc := &http.Client{Timeout: time.Minute}
		if u.API == plan.UsageAPIAnthropic {
			rp.Source, rp.Workspaces = &reconcile.Anthropic{BaseURL: p.BaseURL, AdminKey: key, Client: hc}, true
		} else {
			rp.Source = &reconcile.OpenAI{BaseURL: p.BaseURL, AdminKey: key, Client: hc}
		}
		out = append(out, rp)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no provider to reconcile: none named has a usage_api with api and admin_key_env")
	}
	return out, nil
}
