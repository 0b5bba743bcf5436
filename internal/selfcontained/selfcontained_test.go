package selfcontained

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// outside are the names of notes kept beside the repository, which a
// clone does not have. Spelt in pieces so this file does not cite them.
var outside = []string{"WIRE" + ".md", "DESIGN" + ".md", ".." + "/shared"}

// citation is a reference to a section of a docs/ page or of the README,
// as comments write them: docs/wire.md#messages-streams.
var citation = regexp.MustCompile(`\b((?:docs/)?[A-Za-z0-9_-]+\.md)#([a-z0-9-]+)`)

// TestCitesNothingOutside: no Go or Markdown file names a note outside
// the repository, and every section a file cites exists.
func TestCitesNothingOutside(t *testing.T) {
	root := repoRoot(t)
	anchors := map[string]map[string]bool{}
	for _, file := range repoFiles(t, root) {
		f, err := os.Open(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(f)
		lines.Buffer(nil, 1<<20)
		for n := 1; lines.Scan(); n++ {
			line := lines.Text()
			for _, name := range outside {
				if strings.Contains(line, name) {
					t.Errorf("%s:%d cites %s, which is not in the repository: %s", file, n, name, strings.TrimSpace(line))
				}
			}
			for _, m := range citation.FindAllStringSubmatch(line, -1) {
				page := resolve(root, file, m[1])
				if page == "" {
					continue // a name that is not one of the repository's pages
				}
				if anchors[page] == nil {
					anchors[page] = headings(t, filepath.Join(root, page))
				}
				if !anchors[page][m[2]] {
					t.Errorf("%s:%d cites %s#%s, which has no such section", file, n, page, m[2])
				}
			}
		}
		if err := lines.Err(); err != nil {
			t.Errorf("%s: %v", file, err)
		}
		f.Close()
	}
}

// resolve finds the page a citation names: relative to the repository
// root as comments write it, else to the citing file's folder as Markdown
// links do; "" when neither exists.
func resolve(root, from, page string) string {
	for _, p := range []string{page, filepath.Join(filepath.Dir(from), page)} {
		if _, err := os.Stat(filepath.Join(root, p)); err == nil {
			return filepath.ToSlash(filepath.Clean(p))
		}
	}
	return ""
}

// headings returns the anchors of a Markdown page's headings, made as
// GitHub makes them: lower case, spaces to hyphens, other punctuation
// dropped. Headings inside fenced code are not headings.
func headings(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	fenced := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		title, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if fenced || !ok || !strings.HasPrefix(line, "#") {
			continue
		}
		out[anchor(title)] = true
	}
	return out
}

func anchor(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(title)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("finding the repository root: %v", err)
	}
	return string(bytes.TrimSpace(out))
}

// repoFiles lists the Go and Markdown files git keeps or would keep
// (tracked, and untracked but not ignored), relative to root.
func repoFiles(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "*.go", "*.md")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("listing the repository's files: %v", err)
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f != "" {
			if _, err := os.Stat(filepath.Join(root, f)); err == nil { // deleted but not yet staged
				files = append(files, f)
			}
		}
	}
	if len(files) < 100 {
		t.Fatalf("only %d files listed under %s: not the repository", len(files), root)
	}
	return files
}
