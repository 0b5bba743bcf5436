package fakeprovider

import (
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// The admin usage APIs, answered from the ledger (ledger.go):
//
//	GET /v1/organization/usage/completions            OpenAI
//	GET /v1/organization/usage/embeddings             OpenAI
//	GET /v1/organizations/usage_report/messages       Anthropic
//
// Each takes the admin key only (Options.AdminKey), never the API key its
// traffic was served on, and answers 401 without it. Buckets are 1d (the
// default), 1h or 1m wide and aligned on UTC boundaries; a page holds at
// most limit of them and names the next with next_page. A bucket with no
// usage is returned with no results; buckets the lag hides are not
// returned at all.
const (
	openAIUsagePrefix  = "/v1/organization/usage/"
	anthropicUsagePath = "/v1/organizations/usage_report/messages"
)

// usageAPI reports whether path is one of the dialect's usage APIs.
func (s *Server) usageAPI(path string) bool {
	if s.dialect == DialectAnthropic {
		return path == anthropicUsagePath
	}
	return path == openAIUsagePrefix+productCompletions || path == openAIUsagePrefix+productEmbeddings
}

// widths are the bucket widths the APIs take, with their default and
// maximum limit.
var widths = map[string]struct {
	seconds            int64
	defLimit, maxLimit int
}{
	"1d": {86400, 7, 31},
	"1h": {3600, 24, 168},
	"1m": {60, 60, 1440},
}

// reportQuery is a usage API call's parameters, validated.
type reportQuery struct {
	product  string
	width    int64
	from, to int64 // bucket starts in [from, to)
	limit    int
	group    map[string]bool
	models   []string
	keyIDs   []string
	// workspaceIDs filters by workspace (Anthropic).
	workspaceIDs []string
}

func (x *exchange) serveUsageAPI() {
	if x.r.Method != http.MethodGet {
		x.notFound()
		return
	}
	if !x.adminAuthorized() {
		return
	}
	var (
		q   reportQuery
		err *apiError
	)
	if x.s.dialect == DialectAnthropic {
		q, err = x.anthropicQuery()
	} else {
		q, err = x.openAIQuery()
	}
	if err != nil {
		x.fail(err)
		return
	}
	rep := x.s.Report()
	horizon := x.s.now().Unix() - int64(rep.LagHours)*3600
	p := x.s.page(q, &rep, horizon, x.r.URL.Query().Get("page"))
	if p == nil {
		x.fail(badRequest("invalid page cursor", "page"))
		return
	}
	if x.s.dialect == DialectAnthropic {
		writeReportJSON(x.w, anthropicPage(p, q))
	} else {
		writeReportJSON(x.w, openAIPage(p, q))
	}
}

// adminAuthorized admits the admin key alone, sent as each API's admin
// endpoints take it: OpenAI's as a bearer token, Anthropic's in x-api-key
// with anthropic-version.
func (x *exchange) adminAuthorized() bool {
	h := x.r.Header
	key := h.Get("X-Api-Key")
	msg := "invalid x-api-key"
	if x.s.dialect == DialectOpenAI {
		key, _ = strings.CutPrefix(h.Get("Authorization"), "Bearer ")
		msg = "Incorrect API key provided. This endpoint requires an admin key."
	}
	switch {
	case key == "" || len(x.s.adminKey) == 0 || subtle.ConstantTimeCompare([]byte(key), x.s.adminKey) != 1:
		x.fail(&apiError{status: http.StatusUnauthorized, message: msg})
	case x.s.dialect == DialectAnthropic && h.Get("Anthropic-Version") == "":
		x.fail(badRequest("anthropic-version: header is required", ""))
	default:
		return true
	}
	return false
}

// bucketRange reads the width and limit and aligns [from, to) on the width.
func bucketRange(v url.Values, from, to int64) (reportQuery, *apiError) {
	name := v.Get("bucket_width")
	if name == "" {
		name = "1d"
	}
	w, ok := widths[name]
	if !ok {
		return reportQuery{}, badRequest("bucket_width must be one of 1d, 1h, 1m", "bucket_width")
	}
	q := reportQuery{width: w.seconds, limit: w.defLimit, from: from - from%w.seconds, to: to}
	if l := v.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > w.maxLimit {
			return q, badRequest("limit must be between 1 and "+strconv.Itoa(w.maxLimit)+" for bucket_width "+name, "limit")
		}
		q.limit = n
	}
	if q.to <= q.from {
		return q, badRequest("the end of the range must be after its start", "end_time")
	}
	return q, nil
}

// groupBy checks the groupings asked for against those the API allows.
func groupBy(asked []string, allowed ...string) (map[string]bool, *apiError) {
	g := make(map[string]bool, len(asked))
	for _, a := range asked {
		if !slices.Contains(allowed, a) {
			return nil, badRequest("group_by: "+strconv.Quote(a)+" is not one of "+strings.Join(allowed, ", "), "group_by")
		}
		g[a] = true
	}
	return g, nil
}

// bucket is one bucket of a page: its start and its groups' sums.
type bucket struct {
	start int64
	sums  map[billKey]reported
}

// page is the buckets of one call and the cursor of the next.
type page struct {
	buckets []bucket
	next    int64 // 0: no more
}

// page reads up to q.limit buckets from the cursor (or q.from), none
// starting at or after the horizon, with no usage after it either.
func (s *Server) page(q reportQuery, rep *Report, horizon int64, cursor string) *page {
	start := q.from
	if cursor != "" {
		c, ok := decodeCursor(cursor)
		if !ok || c < q.from || c >= q.to || (c-q.from)%q.width != 0 {
			return nil
		}
		start = c
	}
	end := min(q.to, horizon)
	p := &page{}
	keep := func(k billKey) bool {
		return (len(q.models) == 0 || slices.Contains(q.models, k.model)) && (len(q.keyIDs) == 0 || slices.Contains(q.keyIDs, k.keyID)) &&
			(len(q.workspaceIDs) == 0 || slices.Contains(q.workspaceIDs, k.workspace))
	}
	group := func(k billKey) billKey {
		g := billKey{}
		if q.group["model"] {
			g.model = k.model
		}
		if q.group["api_key_id"] {
			g.keyID = k.keyID
		}
		if q.group["workspace_id"] {
			g.workspace = k.workspace
		}
		return g
	}
	for b := start; b < end; b += q.width {
		if len(p.buckets) == q.limit {
			p.next = b
			break
		}
		bk := bucket{start: b, sums: map[billKey]reported{}}
		if !rep.dropped(b - b%86400) {
			for k, v := range s.ledger.sum(q.product, b, min(b+q.width, horizon), keep, group) {
				bk.sums[k] = rep.reported(v)
			}
		}
		p.buckets = append(p.buckets, bk)
	}
	return p
}

func encodeCursor(start int64) string {
	return "page_" + base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(start, 10)))
}

func decodeCursor(c string) (int64, bool) {
	raw, ok := strings.CutPrefix(c, "page_")
	if !ok {
		return 0, false
	}
	b, err := base64.RawURLEncoding.DecodeString(raw)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	return n, err == nil
}

func writeReportJSON(w http.ResponseWriter, v any) {
	writeControlJSON(w, http.StatusOK, v)
}
