package compiler

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"cuelang.org/go/cue"

	"github.com/pistra/pistra/runtime/dialect"
	"github.com/pistra/pistra/runtime/plan"
)

var (
	keyHash = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	// ruleCode is what a rule's code must look like: it is a skip reason,
	// a metrics label and part of an error clients read.
	ruleCode = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	// builtinReasons are the skip reasons the compiler and the gateway give
	// themselves; a rule reusing one would make the counters ambiguous.
	builtinReasons = []string{"model_denied", "fidelity_loss", "pool_subset_missing", "not_served", "route_unserved",
		"circuit_open", "provider_suspended", "budget_exceeded", "budget_error", "unsupported_candidate"}
)

// checkPolicy checks profiles, keys, budgets and access rules.
func (c *compiler) checkPolicy() {
	c.checkNames()
	c.checkRules(path("access_rules"), c.src.AccessRules)
	c.checkRuleCodes(path("access_rules"), c.src.AccessRules, nil)
	for _, name := range sortedKeys(c.src.Profiles) {
		c.checkProfile(name, c.src.Profiles[name])
	}
	c.checkKeys()
	c.checkBudgets()
}

func (c *compiler) checkProfile(name string, p srcProfile) {
	at := func(elems ...any) cue.Path { return path(append([]any{"profiles", name}, elems...)...) }
	c.patterns(at("allowed_models"), p.AllowedModels, true)
	if p.AllowedModels != nil && len(p.AllowedModels) == 0 {
		c.labelErrorf(at("allowed_models"), "an empty list allows no model at all; list the models, or leave allowed_models out to allow every model")
	}
	c.caps(at("require_caps"), p.RequireCaps)
	if p.OnFidelityLoss != nil {
		enum(c, at("on_fidelity_loss"), "on_fidelity_loss value", *p.OnFidelityLoss, plan.LossActions)
	}
	if p.PoolSubset != nil {
		if subsets := c.subsetNames(); !slices.Contains(subsets, *p.PoolSubset) {
			c.errorf(at("pool_subset"), "unknown pool subset %q (known: %s)%s", *p.PoolSubset, listOf(subsets), didYouMean(*p.PoolSubset, subsets))
		}
	}
	budgets := make([]string, len(c.src.Budgets))
	for i, b := range c.src.Budgets {
		budgets[i] = b.Name
	}
	for i, b := range p.Budgets {
		if !slices.Contains(budgets, b) {
			c.errorf(at("budgets", i), "unknown budget %q (known: %s)%s", b, listOf(budgets), didYouMean(b, budgets))
		}
	}
	duplicates(c, at("budgets"), "", p.Budgets, func(s string) string { return s }, "budget")
	c.checkProfileServices(name, p, budgets)
	c.checkRules(at("access_rules"), p.AccessRules)
	c.checkRuleCodes(at("access_rules"), p.AccessRules, c.src.AccessRules)
}

// subsetNames lists every subset any pool declares.
func (c *compiler) subsetNames() []string {
	var out []string
	for _, p := range c.src.Pools {
		for s := range p.Subsets {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

func (c *compiler) checkRules(at cue.Path, rules []srcRule) {
	duplicates(c, at, "name", rules, func(r srcRule) string { return r.Name }, "rule name")
	for i, r := range rules {
		if r.Name == "" {
			c.labelErrorf(cue.MakePath(append(index(at, i).Selectors(), cue.Str("name"))...), "empty rule name")
		}
		c.textSecret(cue.MakePath(append(index(at, i).Selectors(), cue.Str("message"))...), "message", r.Message,
			"sent to every client the rule refuses")
		code := cue.MakePath(append(index(at, i).Selectors(), cue.Str("code"))...)
		switch {
		case !ruleCode.MatchString(r.Code):
			c.errorf(code, "code %q must be lower snake_case (it is a metrics label and a client-facing error code)", r.Code)
		case slices.Contains(builtinReasons, r.Code):
			c.errorf(code, "code %q is one pistra gives itself; choose another (reserved: %s)", r.Code, listOf(builtinReasons))
		case slices.Contains(dialect.Codes, dialect.Code(r.Code)):
			c.errorf(code, "code %q is one of pistra's own error codes; choose another, so a client can tell the rule's refusal from the gateway's", r.Code)
		}
	}
}

// checkRuleCodes refuses a code two of the rules a profile is held to share
// (the deployment-wide ones, inherited, and its own): a refusal names its
// rule, and carries its message, by the code the skip holds.
func (c *compiler) checkRuleCodes(at cue.Path, own, inherited []srcRule) {
	seen := map[string]string{}
	for _, r := range inherited {
		if _, dup := seen[r.Code]; !dup {
			seen[r.Code] = r.Name
		}
	}
	for i, r := range own {
		if other, dup := seen[r.Code]; dup && r.Code != "" {
			c.errorf(cue.MakePath(append(index(at, i).Selectors(), cue.Str("code"))...),
				"code %q is already rule %q's; give each rule its own code (a refusal names its rule, and carries its message, by the code)", r.Code, other)
			continue
		}
		seen[r.Code] = r.Name
	}
}

func (c *compiler) checkKeys() {
	at := path("keys")
	duplicates(c, at, "name", c.src.Keys, func(k srcKey) string { return k.Name }, "key name")
	profiles := sortedKeys(c.src.Profiles)
	for i, k := range c.src.Keys {
		field := func(name string) cue.Path { return cue.MakePath(append(index(at, i).Selectors(), cue.Str(name))...) }
		if _, ok := c.src.Profiles[k.Profile]; !ok {
			c.errorf(field("profile"), "unknown profile %q (known: %s)%s", k.Profile, listOf(profiles), didYouMean(k.Profile, profiles))
		}
		if !keyHash.MatchString(k.Hash) {
			c.errorf(field("hash"), "%s", badHash(k.Name, k.Hash))
		}
	}
	duplicates(c, at, "hash", c.src.Keys, func(k srcKey) string {
		if keyHash.MatchString(k.Hash) {
			return k.Hash
		}
		return ""
	}, "key hash")
}

// badHash words a key hash that is not "sha256:<64 lowercase hex>". One
// with the prefix (in any case) is a hash damaged on the way (cut short,
// upper-cased); 64 hex digits alone are a hash that lost its prefix;
// anything else without it is most likely the key itself. The value is
// never echoed: it may be the key.
func badHash(key, hash string) string {
	const want = "must be stored as \"sha256:<64 lowercase hex>\""
	const hexDigits = "0123456789abcdefABCDEF"
	prefix, digits := "", hash
	if len(hash) >= len("sha256:") && strings.EqualFold(hash[:len("sha256:")], "sha256:") {
		prefix, digits = hash[:len("sha256:")], hash[len("sha256:"):]
	}
	isHash := len(digits) == 64 && strings.Trim(digits, hexDigits) == ""
	switch {
	case prefix == "" && isHash:
		return fmt.Sprintf("key %q: the hash is missing its lowercase \"sha256:\" prefix: write \"sha256:\" before the 64 hex digits "+
			"(if they are the key itself rather than its hash, `pistrac hash-key` prints the hash)", key)
	case prefix == "":
		return fmt.Sprintf("key %q %s, not as the key itself; `pistrac hash-key` prints the hash", key, want)
	case strings.Trim(digits, hexDigits) != "":
		return fmt.Sprintf("key %q: the hash after sha256: holds characters that are not hex digits; %s, as `pistrac hash-key` prints it", key, want)
	case len(digits) != 64:
		return fmt.Sprintf("key %q: the hash has %d hex digits after sha256:, not 64 (cut short when copied?); `pistrac hash-key` prints the whole hash", key, len(digits))
	case prefix != "sha256:":
		also := ""
		if digits != strings.ToLower(digits) {
			also = " and its hex digits lowercase"
		}
		return fmt.Sprintf("key %q: the hash's prefix must be the lowercase \"sha256:\"%s, as `pistrac hash-key` prints it", key, also)
	}
	return fmt.Sprintf("key %q: the hash's hex digits must be lowercase, as `pistrac hash-key` prints them", key)
}

func (c *compiler) checkBudgets() {
	at := path("budgets")
	duplicates(c, at, "name", c.src.Budgets, func(b srcBudget) string { return b.Name }, "budget name")
	for i, b := range c.src.Budgets {
		field := func(elems ...any) cue.Path { return path(append([]any{"budgets", i}, elems...)...) }
		enum(c, field("window"), "window", b.Window, plan.Windows)
		enum(c, field("per"), "per", b.Per, plan.BucketScopes)
		if !enum(c, field("cost", "type"), "cost type", b.Cost.Type, plan.CostTypes) {
			continue
		}
		switch {
		case b.Cost.Type == plan.CostCEL && b.Cost.CEL == nil:
			c.errorf(field("cost", "type"), "cost type %s needs the expression in cost.cel", plan.CostCEL)
		case b.Cost.Type != plan.CostCEL && b.Cost.CEL != nil:
			c.labelErrorf(field("cost", "cel"), "cost.cel is only read when cost.type is %q (type is %q)", plan.CostCEL, b.Cost.Type)
		}
	}
}

// duplicates reports every repeat of a name in a list, at the repeat's
// field (field is "" for a list of plain names), with the first occurrence
// as a contributing position. Empty names are skipped.
func duplicates[T any](c *compiler, at cue.Path, field string, items []T, name func(T) string, what string) {
	elem := func(i int) cue.Path {
		if field == "" {
			return index(at, i)
		}
		return cue.MakePath(append(index(at, i).Selectors(), cue.Str(field))...)
	}
	first := map[string]int{}
	for i, it := range items {
		n := name(it)
		if n == "" {
			continue
		}
		j, seen := first[n]
		if !seen {
			first[n] = i
			continue
		}
		msg := fmt.Sprintf("duplicate %s %q", what, n)
		if what == "key hash" {
			msg = "duplicate key hash: two keys hold the same credential"
		}
		c.errs = append(c.errs, Error{Pos: c.l.at(elem(i)), Path: pathString(elem(i)), Msg: msg, Also: []Pos{c.l.at(elem(j))}})
	}
}

// checkNames refuses empty names: every name is a lookup key, a label on a
// metric or a word in an error message, and "" is none of those.
func (c *compiler) checkNames() {
	empty := func(what string, at ...any) { c.labelErrorf(path(at...), "empty %s name", what) }
	if hasEmpty(c.src.Providers) {
		empty("provider", "providers", "")
	}
	for name, p := range c.src.Providers {
		at := func(field string) []any { return []any{"providers", name, field, ""} }
		if hasEmpty(p.Models) {
			empty("model", at("models")...)
		}
		if hasEmpty(p.Aliases) {
			empty("alias", at("aliases")...)
		}
		if hasEmpty(p.Channels) {
			empty("channel", at("channels")...)
		}
		if hasEmpty(p.Headers) {
			empty("header", at("headers")...)
		}
	}
	if hasEmpty(c.src.Pools) {
		empty("pool", "pools", "")
	}
	for name, p := range c.src.Pools {
		if hasEmpty(p.Subsets) {
			empty("subset", "pools", name, "subsets", "")
		}
	}
	if hasEmpty(c.src.Profiles) {
		empty("profile", "profiles", "")
	}
	for i, k := range c.src.Keys {
		if k.Name == "" {
			empty("key", "keys", i, "name")
		}
	}
	for i, b := range c.src.Budgets {
		if b.Name == "" {
			empty("budget", "budgets", i, "name")
		}
	}
}

func hasEmpty[V any](m map[string]V) bool {
	_, ok := m[""]
	return ok
}
