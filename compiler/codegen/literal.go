package codegen

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/pistra/pistra/runtime/plan"
)

const planPath = "github.com/pistra/pistra/runtime/plan"

// blockTypes render one field per line; every other struct renders on one
// line, so a table entry, a candidate or a plan is one line of a diff.
var blockTypes = map[reflect.Type]bool{
	reflect.TypeFor[plan.Graph]():    true,
	reflect.TypeFor[plan.Provider](): true,
	reflect.TypeFor[plan.Channel]():  true,
	reflect.TypeFor[plan.Pool]():     true,
	reflect.TypeFor[plan.Profile]():  true,
	reflect.TypeFor[plan.Budget]():   true,
	reflect.TypeFor[plan.Table]():    true,
}

// shortList is the longest list of scalars kept on one line inside a block.
const shortList = 6

var capSetType = reflect.TypeFor[plan.CapSet]()

// constNames maps every value of plan's string enums to its constant, so
// the literal reads plan.RouteMessages rather than "messages".
var constNames = map[any]string{
	plan.RouteChatCompletions:        "RouteChatCompletions",
	plan.RouteCompletions:            "RouteCompletions",
	plan.RouteEmbeddings:             "RouteEmbeddings",
	plan.RouteResponses:              "RouteResponses",
	plan.RouteMessages:               "RouteMessages",
	plan.RouteRealtime:               "RouteRealtime",
	plan.RouteLive:                   "RouteLive",
	plan.DialectOpenAI:               "DialectOpenAI",
	plan.DialectAnthropic:            "DialectAnthropic",
	plan.DialectGemini:               "DialectGemini",
	plan.TierNative:                  "TierNative",
	plan.TierProviderCompat:          "TierProviderCompat",
	plan.TierTranslation:             "TierTranslation",
	plan.TranslateNone:               "TranslateNone",
	plan.TranslateOpenAIAnthropic:    "TranslateOpenAIAnthropic",
	plan.TranslateAnthropicOpenAI:    "TranslateAnthropicOpenAI",
	plan.TranslateResponsesAnthropic: "TranslateResponsesAnthropic",
	plan.TranslateAnthropicResponses: "TranslateAnthropicResponses",

	plan.FailureConnect: "FailureConnect",
	plan.Failure5xx:     "Failure5xx",
	plan.Failure429:     "Failure429",
	plan.FailureTimeout: "FailureTimeout",

	plan.KindMCPServer: "KindMCPServer",
	plan.KindAgent:     "KindAgent",

	plan.AuthBearer:     "AuthBearer",
	plan.AuthXAPIKey:    "AuthXAPIKey",
	plan.AuthAPIKey:     "AuthAPIKey",
	plan.AuthGoogAPIKey: "AuthGoogAPIKey",

	plan.CostInputToken:              "CostInputToken",
	plan.CostOutputToken:             "CostOutputToken",
	plan.CostTotalToken:              "CostTotalToken",
	plan.CostCachedInputToken:        "CostCachedInputToken",
	plan.CostCacheCreationInputToken: "CostCacheCreationInputToken",
	plan.CostReasoningToken:          "CostReasoningToken",
	plan.CostCEL:                     "CostCEL",

	plan.LossReject: "LossReject",
	plan.LossAllow:  "LossAllow",

	plan.WindowMinute: "WindowMinute",
	plan.WindowHour:   "WindowHour",
	plan.WindowDay:    "WindowDay",
	plan.WindowMonth:  "WindowMonth",

	plan.PerKey:     "PerKey",
	plan.PerProfile: "PerProfile",

	plan.PickerFailClosed: "PickerFailClosed",
	plan.PickerFailOpen:   "PickerFailOpen",
}

// renderer turns IR values into a Go composite literal by reflection, so a
// field added to the IR is rendered without touching this file. The first
// value it cannot render is kept in err.
type renderer struct {
	notes *annotator
	err   error
}

// value renders v. elide drops the type of a composite literal (allowed for
// the elements of a slice literal); flat keeps the whole value on one line.
func (r *renderer) value(v reflect.Value, elide, flat bool) *jen.Statement {
	if v.Type() == capSetType {
		return capSet(plan.CapSet(v.Uint()))
	}
	switch v.Kind() {
	case reflect.String:
		return r.str(v)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return jen.Id(strconv.FormatInt(v.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return jen.Id(strconv.FormatUint(v.Uint(), 10))
	case reflect.Float64:
		// Shortest form that reads back to the same float (a tolerance).
		return jen.Id(strconv.FormatFloat(v.Float(), 'g', -1, 64))
	case reflect.Bool:
		return jen.Lit(v.Bool())
	case reflect.Slice:
		return r.slice(v, elide, flat)
	case reflect.Struct:
		return r.record(v, elide, flat)
	case reflect.Pointer:
		// An optional block (a provider's TLS options or circuit); a composite
		// literal's type cannot be elided behind &.
		if v.IsNil() {
			return jen.Nil()
		}
		return jen.Op("&").Add(r.value(v.Elem(), false, flat))
	}
	r.fail(fmt.Errorf("cannot render a %s", v.Type()))
	return jen.Null()
}

func (r *renderer) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

// str renders a string, as a plan constant when its type is a plan enum.
func (r *renderer) str(v reflect.Value) *jen.Statement {
	if v.Type().PkgPath() == "" {
		return jen.Lit(v.String())
	}
	name, ok := constNames[v.Interface()]
	if !ok {
		r.fail(fmt.Errorf("%s %q has no constant in package plan", v.Type(), v.String()))
		return jen.Null()
	}
	return jen.Qual(planPath, name)
}

// capSet renders a set by capability names: plan.AllCaps, everything but a
// few (plan.AllCaps &^ plan.Of(...)), or plan.Of(...).
func capSet(s plan.CapSet) *jen.Statement {
	if s == plan.AllCaps {
		return jen.Qual(planPath, "AllCaps")
	}
	if missing := plan.AllCaps &^ s; missing.Len() < s.Len() {
		return jen.Qual(planPath, "AllCaps").Op("&^").Add(capSet(missing))
	}
	var caps []jen.Code
	for _, c := range s.Caps() {
		caps = append(caps, jen.Qual(planPath, capConst(c)))
	}
	return jen.Qual(planPath, "Of").Call(caps...)
}

// capConst is the constant naming c: strict_tools -> CapStrictTools.
func capConst(c plan.Cap) string {
	var b strings.Builder
	b.WriteString("Cap")
	for _, part := range strings.Split(c.String(), "_") {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

func (r *renderer) slice(v reflect.Value, elide, flat bool) *jen.Statement {
	if v.IsNil() {
		return jen.Nil()
	}
	lit := typeOf(v.Type())
	if elide {
		lit = jen.Null()
	}
	elem := v.Type().Elem().Kind()
	composite := elem == reflect.Struct || elem == reflect.Slice
	if flat || !composite && v.Len() <= shortList {
		items := make([]jen.Code, v.Len())
		for i := range items {
			items[i] = r.value(v.Index(i), true, true)
		}
		return lit.Values(items...)
	}
	lines := make([]line, v.Len())
	for i := range lines {
		e := v.Index(i)
		lines[i] = line{code: r.value(e, true, false)}
		lines[i].lead, lines[i].trail = r.notes.note(e, i)
	}
	return multiline(lit, lines)
}

// record renders a struct, leaving out the fields bundle.json leaves out
// (omitempty and zero) as well as nil lists and false flags, which are the
// zero values anyway.
func (r *renderer) record(v reflect.Value, elide, flat bool) *jen.Statement {
	t := v.Type()
	lit := typeOf(t)
	if elide {
		lit = jen.Null()
	}
	block := blockTypes[t] && !flat
	var lines []line
	for i := range t.NumField() {
		f, fv := t.Field(i), v.Field(i)
		if _, omitEmpty := jsonField(f); fv.IsZero() && (omitEmpty || fv.Kind() == reflect.Slice || fv.Kind() == reflect.Bool) {
			continue
		}
		l := line{code: jen.Id(f.Name).Op(":").Add(r.value(fv, false, !block))}
		if block {
			l.lead, l.trail = r.notes.note(fv, -1)
		}
		lines = append(lines, l)
	}
	if !block {
		items := make([]jen.Code, len(lines))
		for i, l := range lines {
			items[i] = l.code
		}
		return lit.Values(items...)
	}
	return multiline(lit, lines)
}

// typeOf is the Go type expression of t, qualified by package plan where
// it is declared there.
func typeOf(t reflect.Type) *jen.Statement {
	switch {
	case t.Kind() == reflect.Slice:
		return jen.Index().Add(typeOf(t.Elem()))
	case t.PkgPath() == planPath:
		return jen.Qual(planPath, t.Name())
	default:
		return jen.Id(t.Name())
	}
}

// line is one element or field of a multi-line literal, with the comment
// above it and the one after it.
type line struct {
	code        jen.Code
	lead, trail string
}

func multiline(lit *jen.Statement, lines []line) *jen.Statement {
	items := make([]jen.Code, len(lines))
	for i, l := range lines {
		s := jen.Null()
		if l.lead != "" {
			s.Comment(l.lead).Line()
		}
		s.Add(l.code).Op(",")
		if l.trail != "" {
			s.Comment(l.trail)
		}
		items[i] = s
	}
	return lit.Custom(jen.Options{Open: "{", Close: "}", Multi: true}, items...)
}
