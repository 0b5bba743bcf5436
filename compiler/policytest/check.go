package policytest

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"cuelang.org/go/cue"

	"github.com/pistra/pistra/compiler"
	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/plan"
)

// vocab is what a case may name in a graph.
type vocab struct {
	g                      *plan.Graph
	keys, profiles, routes []string
	caps, codes, pairs     []string
	// decided is the codes a routing decision answers with, the policy's
	// rule codes among them: what a refusal's message offers.
	decided  []string
	channels []string // provider/channel
}

func newVocab(g *plan.Graph) *vocab {
	v := &vocab{g: g, routes: plan.Names(plan.Routes), caps: plan.CapNames(), codes: plan.Names(dialect.Codes),
		pairs: plan.Names(plan.Translations)}
	for _, k := range g.Keys {
		v.keys = append(v.keys, k.Name)
	}
	for _, p := range g.Profiles {
		v.profiles = append(v.profiles, p.Name)
		for _, r := range p.Rules {
			v.codes = append(v.codes, r.Code)
		}
	}
	for _, r := range g.Rules {
		v.codes = append(v.codes, r.Code)
	}
	v.decided = append(plan.Names([]dialect.Code{dialect.CodeModelNotFound, dialect.CodeModelNotOnRoute, dialect.CodeModelNotAllowed,
		dialect.CodeNoCandidate, dialect.CodeFidelityLoss}), v.codes[len(dialect.Codes):]...)
	slices.Sort(v.decided[5:])
	v.decided = slices.Compact(v.decided)
	for _, p := range g.Providers {
		for _, ch := range p.Channels {
			v.channels = append(v.channels, p.Name+"/"+ch.Name)
		}
	}
	return v
}

// orderEntry is the form of a want's order entry, Serve.String's.
var orderEntry = regexp.MustCompile(`^([^/ ]+/[^/ ]+) (\S+)(?: \(translated (\S+)\))?$`)

// check lists every problem with what c names, each at its field's
// position, and resolves its profile and capabilities when there is none.
func (v *vocab) check(c *Case) []string {
	var out []string
	bad := func(field, format string, args ...any) {
		at, fv := c.Pos, c.v
		if field != "" {
			fv = c.v.LookupPath(cue.ParsePath(field))
		}
		if p := fv.Pos(); p.IsValid() {
			at = fmt.Sprintf("%s:%d:%d", p.Filename(), p.Line(), p.Column())
		}
		out = append(out, fmt.Sprintf("%s: case %q: %s", at, c.Name, fmt.Sprintf(format, args...)))
	}
	// unknown reports got when it is not one of known; what is "one|many".
	unknown := func(field, what, got string, known []string) bool {
		if slices.Contains(known, got) {
			return false
		}
		one, many, _ := strings.Cut(what, "|")
		bad(field, "no %s is named %q%s (%s: %s)", one, got, compiler.DidYouMean(got, known), many, list(known))
		return true
	}
	switch {
	case c.Key != "" && c.Profile != "":
		bad("profile", "give a key or a profile, not both (a key stands for its profile)")
	case c.Key != "":
		if !unknown("key", "key|keys", c.Key, v.keys) {
			c.profile = v.g.Keys[slices.Index(v.keys, c.Key)].Profile
		}
	case c.Profile != "":
		if !unknown("profile", "profile|profiles", c.Profile, v.profiles) {
			c.profile = slices.Index(v.profiles, c.Profile)
			if rules := v.g.RequestRules(c.profile); len(rules) > 0 {
				bad("profile", "profile %q has access rules that read the key (%s), which pistrad never decides without one: "+
					"name the key the case asks with instead (its keys: %s)", c.Profile, ruleNames(rules), list(v.keysOf(c.profile)))
			}
		}
	default:
		bad("", "give the key (or the profile) the case asks with")
	}
	unknown("route", "route|routes", string(c.Route), v.routes)
	for i, name := range c.Caps {
		if cp, ok := plan.ParseCap(name); ok {
			c.used |= plan.Of(cp)
		} else {
			unknown(fmt.Sprintf("caps[%d]", i), "capability|capabilities", name, v.caps)
		}
	}
	if w := c.Want.Refuse; w != "" && !slices.Contains(v.codes, w) {
		bad("want.refuse", "%q is not a code pistrad answers with%s (a routing decision answers %s)",
			w, compiler.DidYouMean(w, v.codes), list(v.decided))
	}
	if s := c.Want.Serve; s != nil {
		unknown("want.serve.provider", "channel|channels", s.Provider+"/"+s.Channel, v.channels)
		if s.Translate != "" {
			unknown("want.serve.translate", "translation pair|translation pairs", s.Translate, v.pairs)
		}
	}
	for i, e := range c.Want.Order {
		field := fmt.Sprintf("want.order[%d]", i)
		m := orderEntry.FindStringSubmatch(e)
		if m == nil {
			bad(field, "%q is not a candidate: write \"provider/channel model\", with \" (translated PAIR)\" for a translated one", e)
			continue
		}
		unknown(field, "channel|channels", m[1], v.channels)
		if m[3] != "" {
			unknown(field, "translation pair|translation pairs", m[3], v.pairs)
		}
	}
	return out
}

func (v *vocab) keysOf(profile int) []string {
	var out []string
	for _, k := range v.g.Keys {
		if k.Profile == profile {
			out = append(out, k.Name)
		}
	}
	return out
}

func ruleNames(rules []plan.RequestRule) string {
	names := make([]string, len(rules))
	for i, r := range rules {
		names[i] = fmt.Sprintf("%q", r.Name)
	}
	return strings.Join(names, ", ")
}

func list(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
