// Package explain renders a compiled decision graph for people: why a plan
// looks the way it does (Plan), what changed between two graphs (Diff), and
// where every routable channel's capability claim came from (Catalog, on
// the rows of runtime/catalog). It reads *plan.Graph only, so it works the
// same on a freshly compiled policy and on a bundle.json loaded back from
// disk. These are pistrac's reports: pistrad serves its catalog from
// runtime/catalog and links nothing here.
package explain

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/pistra/pistra/runtime/plan"
)

// printer is an io.Writer that remembers the first write error, so the
// renderers can print freely and check once at the end.
type printer struct {
	w   io.Writer
	err error
}

var _ io.Writer = (*printer)(nil)

func (p *printer) Write(b []byte) (int, error) {
	if p.err != nil {
		return 0, p.err
	}
	n, err := p.w.Write(b)
	p.err = err
	return n, err
}

func (p *printer) printf(format string, args ...any) { fmt.Fprintf(p, format, args...) }

// table starts an aligned block. Cells are tab-separated; rows end in "\n".
// The caller must Flush it before printing anything else.
func (p *printer) table() *tabwriter.Writer { return tabwriter.NewWriter(p, 0, 0, 2, ' ', 0) }

// row writes one table row with the given indent.
func row(tw *tabwriter.Writer, indent string, cells ...string) {
	fmt.Fprintln(tw, indent+strings.Join(cells, "\t"))
}

// channelName is provider/channel, or provider alone for a skip of the
// whole provider (channel -1).
func channelName(g *plan.Graph, provider, channel int) string {
	p := &g.Providers[provider]
	if channel < 0 {
		return p.Name + " (whole provider)"
	}
	return p.Name + "/" + p.Channels[channel].Name
}

// capsText renders a capability set compactly: "all" for a native
// channel's AllCaps, "none" for the empty set, and "all except ..." when
// that is the shorter way to say it (a translation's losses).
func capsText(s plan.CapSet) string {
	switch all := plan.AllCaps; {
	case s == all:
		return "all"
	case s == 0:
		return "none"
	case s.Len() > all.Len()/2:
		return "all except " + strings.Join((all&^s).Names(), ",")
	}
	return strings.Join(s.Names(), ",")
}

// orDash keeps empty cells visible in aligned output.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// listOrNone joins names for messages.
func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// count renders "1 candidate", "2 candidates".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// claimSource says where the capability claim a candidate rests on was read
// from: the built-in loss table of a translation pair, the page a compat
// channel cites, or nothing for a native channel (which keeps everything).
func claimSource(g *plan.Graph, c *plan.Candidate) string {
	if c.Translate != plan.TranslateNone {
		return "translation " + string(c.Translate) + " (pistra's loss table)"
	}
	ch := &g.Providers[c.Provider].Channels[c.Channel]
	if ch.VerifiedBy == "" {
		return orDash(c.Origin)
	}
	if ch.VerifiedAt == "" {
		return ch.VerifiedBy
	}
	return ch.VerifiedBy + " (verified " + ch.VerifiedAt + ")"
}
