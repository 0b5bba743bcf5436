package proc

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Get GETs url (with a bearer token when given) on a connection of its
// own, so the call leaves no idle connection behind in the process
// measured, and returns the body of a 200 answer for the caller to read
// and close within timeout.
func Get(url, token string, timeout time.Duration) (io.ReadCloser, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: timeout}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, b)
	}
	return resp.Body, nil
}

// Scrape reads a Prometheus text endpoint.
func Scrape(url, token string) (string, error) {
	body, err := Get(url, token, 10*time.Second)
	if err != nil {
		return "", fmt.Errorf("scrape: %w", err)
	}
	defer body.Close()
	b, err := io.ReadAll(body)
	return string(b), err
}

// SumSeries adds up every sample of a metric in Prometheus text format.
func SumSeries(text, name string) (float64, bool) {
	var total float64
	found := false
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		f := strings.Fields(rest[strings.LastIndexByte(rest, '}')+1:])
		if len(f) == 0 {
			continue
		}
		if v, err := strconv.ParseFloat(f[0], 64); err == nil {
			total += v
			found = true
		}
	}
	return total, found
}
