package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// maxPages bounds one read's pages: a year of daily buckets at the
// smallest page is well inside it, so a cursor that never ends is a fault.
const maxPages = 400

// getJSON GETs u with header and decodes a 200 answer into v; any other
// status is an error carrying the start of the body (the APIs' error
// messages name the problem, never the key).
func getJSON(ctx context.Context, hc *http.Client, u string, header http.Header, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header = header
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return fmt.Errorf("reading %s: %w", redact(u), err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %.300s", redact(u), resp.Status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%s: %w", redact(u), err)
	}
	return nil
}

// redact is u without its query, for errors.
func redact(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "usage API"
	}
	p.RawQuery = ""
	return p.String()
}

// pages calls read with "" and then each next cursor it returns, until
// it returns none.
func pages(read func(cursor string) (next string, err error)) error {
	cursor := ""
	for range maxPages {
		next, err := read(cursor)
		if err != nil || next == "" {
			return err
		}
		cursor = next
	}
	return fmt.Errorf("pagination did not end after %d pages", maxPages)
}

// nextPage is a page's cursor to the next, "" after the last; a page that
// says there is more but names no cursor is an error, not the end, so that
// the provider's side is never judged on part of its pages.
func nextPage(hasMore bool, next *string) (string, error) {
	switch {
	case !hasMore:
		return "", nil
	case next == nil || *next == "":
		return "", errors.New("a page says there is more but names no next_page")
	}
	return *next, nil
}

// day is t's UTC midnight.
func day(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// dayOf adds the figures of a daily bucket starting at start to days;
// a bucket that is not on a UTC midnight is refused, as it would be
// judged against the wrong day.
func dayOf(days map[time.Time]*ProviderDay, start time.Time) (*ProviderDay, error) {
	d := day(start)
	if !d.Equal(start) {
		return nil, fmt.Errorf("bucket starting %s is not a UTC day", start.Format(time.RFC3339))
	}
	pd := days[d]
	if pd == nil {
		pd = &ProviderDay{Reported: true, Rows: map[Group]Totals{}}
		days[d] = pd
	}
	return pd, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
