package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/pistra/pistra/compiler"
	"github.com/pistra/pistra/compiler/reconcile"
	"github.com/pistra/pistra/runtime/plan"
	"github.com/pistra/pistra/runtime/upstream"
)

const reconcileSynopsis = "[-pistra URL] [-from DAY] [-to DAY] [-as-of TIME] [-provider P,...] [-format text|json] [-textfile PATH] (POLICYDIR | -bundle FILE)"

type reconcileFlags struct {
	pistra, token, from, to, asOf, providers, format, bundle, textfile string
	timeout                                                            time.Duration
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
	fs.StringVar(&f.asOf, "as-of", "", "judge as of this RFC 3339 `TIME` instead of now: which days have settled, and the default -to (for re-running a past audit, or against a usage API known to be final)")
	fs.StringVar(&f.providers, "provider", "", "only these providers, comma-separated (default: every provider with a usage_api)")
	fs.StringVar(&f.format, "format", "text", "text for a person, json for a dashboard")
	fs.DurationVar(&f.timeout, "timeout", 5*time.Minute, "bound on the whole run")
	fs.StringVar(&f.textfile, "textfile", "", "also write the verdicts as Prometheus metrics to `PATH` (atomically), for node_exporter's textfile collector")
	fs.StringVar(&f.bundle, "bundle", "", "read the graph from bundle.json `FILE` instead of a policy directory")
	pos, status, ok := c.parse(fs, args, 0, 1)
	if !ok {
		return status
	}
	now := c.now()
	if f.asOf != "" {
		t, err := time.Parse(time.RFC3339, f.asOf)
		if err != nil {
			return c.usageError("reconcile", "-as-of: %v", err)
		}
		now = t
	}
	run, err := f.run(now)
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
	if f.textfile != "" {
		if werr := rep.WriteTextfile(f.textfile); werr != nil {
			return c.fail("reconcile", werr, exitUsage)
		}
	}
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
	return rep.Status.ExitCode()
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
// the policy names and its TLS settings. A name that is not such a
// provider is an error naming those that are.
func usageProviders(g *plan.Graph, only string, env func(string) (string, bool)) ([]reconcile.Provider, error) {
	var known []string
	for _, p := range g.Providers {
		if p.UsageAPI != nil && p.UsageAPI.API != "" {
			known = append(known, p.Name)
		}
	}
	var want []string
	if only != "" {
		want = strings.Split(only, ",")
	}
	for _, w := range want {
		if !slices.Contains(known, w) {
			return nil, fmt.Errorf("-provider %q: not a provider with a usage_api (those with one: %s)%s", w, strings.Join(known, ", "), compiler.DidYouMean(w, known))
		}
	}
	var out []reconcile.Provider
	for _, p := range g.Providers {
		if !slices.Contains(known, p.Name) || (want != nil && !slices.Contains(want, p.Name)) {
			continue
		}
		rp, err := usageProvider(&p, env)
		if err != nil {
			return nil, fmt.Errorf("provider %s: %w", p.Name, err)
		}
		out = append(out, rp)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no provider to reconcile: none has a usage_api with api and admin_key_env")
	}
	return out, nil
}

// usageProvider reads p's usage API as pistrad reaches p: at its base URL,
// through its TLS settings (its CA, its client certificate).
func usageProvider(p *plan.Provider, env func(string) (string, bool)) (reconcile.Provider, error) {
	u := p.UsageAPI
	rp := reconcile.Provider{Name: p.Name, API: u.API, SettleDelay: time.Duration(u.SettleDelayMS) * time.Millisecond, Tolerance: u.Tolerance}
	key, ok := env(u.AdminKeyEnv)
	if !ok || key == "" {
		return rp, fmt.Errorf("its usage API's admin key is read from $%s, which is not set", u.AdminKeyEnv)
	}
	hc := &http.Client{Timeout: time.Minute}
	if p.TLS != nil {
		cfg, err := upstream.LoadTLS(p.TLS)
		if err != nil {
			return rp, err
		}
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = cfg
		hc.Transport = tr
	}
	if u.API == plan.UsageAPIAnthropic {
		rp.Source, rp.Workspaces = &reconcile.Anthropic{BaseURL: p.BaseURL, AdminKey: key, Client: hc}, true
	} else {
		rp.Source = &reconcile.OpenAI{BaseURL: p.BaseURL, AdminKey: key, Client: hc}
	}
	return rp, nil
}
