package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"strings"
)

// recipe is what an image recipe says, in the subset of the Dockerfile
// language that builds without pulling anything: FROM scratch, COPY of
// files from the build context, EXPOSE, USER and an exec-form ENTRYPOINT.
type recipe struct {
	copies     []copyStep
	exposed    []string // "8080/tcp"
	user       string
	entrypoint []string
}

// copyStep is one COPY: a file of the context to an absolute path.
type copyStep struct{ src, dst string }

// parseRecipe reads a Dockerfile, refusing what it cannot build offline
// rather than building something else.
func parseRecipe(b []byte) (recipe, error) {
	var r recipe
	from := false
	lines := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; lines.Scan(); n++ {
		line := strings.TrimSpace(lines.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		op, args, _ := strings.Cut(line, " ")
		args = strings.TrimSpace(args)
		if !from && !strings.EqualFold(op, "FROM") {
			return r, fmt.Errorf("line %d: %s before FROM", n, op)
		}
		if err := r.apply(strings.ToUpper(op), args); err != nil {
			return r, fmt.Errorf("line %d: %w", n, err)
		}
		from = true
	}
	if err := lines.Err(); err != nil {
		return r, err
	}
	if len(r.entrypoint) == 0 || len(r.copies) == 0 {
		return r, fmt.Errorf("a recipe without COPY or ENTRYPOINT builds nothing to run")
	}
	return r, nil
}

func (r *recipe) apply(op, args string) error {
	switch op {
	case "FROM":
		if args != "scratch" {
			return fmt.Errorf("FROM %s: only scratch builds without pulling a base image", args)
		}
	case "COPY":
		f := strings.Fields(args)
		if len(f) != 2 || strings.HasPrefix(f[0], "--") || !path.IsAbs(f[1]) || strings.HasSuffix(f[1], "/") {
			return fmt.Errorf("COPY %s: want one context file and its absolute path in the image", args)
		}
		r.copies = append(r.copies, copyStep{src: f[0], dst: path.Clean(f[1])})
	case "EXPOSE":
		for _, p := range strings.Fields(args) {
			if !strings.Contains(p, "/") {
				p += "/tcp"
			}
			r.exposed = append(r.exposed, p)
		}
	case "USER":
		r.user = args
	case "ENTRYPOINT":
		if err := json.Unmarshal([]byte(args), &r.entrypoint); err != nil {
			return fmt.Errorf("ENTRYPOINT: want the exec form, a JSON array: %w", err)
		}
	default:
		return fmt.Errorf("%s: not an instruction this builder knows", op)
	}
	return nil
}
