package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tourFence opens a README command block the tour test runs.
const tourFence = "```sh tour"

// tourBlocks returns the README's tour blocks, in order.
func tourBlocks(t *testing.T, readme string) []string {
	t.Helper()
	var blocks []string
	rest := readme
	for {
		i := strings.Index(rest, "\n"+tourFence+"\n")
		if i < 0 {
			break
		}
		rest = rest[i+len(tourFence)+2:]
		j := strings.Index(rest, "\n```")
		if j < 0 {
			t.Fatal("README: unterminated tour block")
		}
		blocks = append(blocks, rest[:j+1])
		rest = rest[j:]
	}
	if len(blocks) < 8 {
		t.Fatalf("README has %d tour blocks, want at least 8", len(blocks))
	}
	return blocks
}

// tourChecks are facts of the tour's answers beyond each block succeeding:
// a block containing the key's text must print the value's.
var tourChecks = []struct{ block, output string }{
	{`-d '{"model":"fast","messages":[{"role":"user","content":"Hello"}]}'`, `"object":"chat.completion"`},
	{`get_weather`, `"code":"fidelity_loss"`},
	{`sk-pistra-metered`, `budget_exceeded`},
	{`/admin/v1/usage?day=`, `"retention_days":62`},
	{`pistrac diff gen/bundle.json policies`, "plans: no change\nsettings: no change\n"},
	{`pistrac test policies`, "cases passed"},
	{`/admin/v1/suspensions/provider/fake-openai`, `"kind":"provider"`},
	{`-channel openai-compat policies`, "Pistra-Channel-Origin: overlay:probe-fake-anthropic-openai-compat"},
	{`presets.gemini & {`, "Pistra-Channel-Origin: preset:gemini"},
	{`overlays: "gemini-seen"`, `"code":"fidelity_loss"`},
	{`overlays: "gemini-seen"`, "overlay:gemini-seen"},
	{`overlays: "gemini-seen"`, `"origin":"preset:gemini"`},
}

// TestReadmeTour runs the README's tour top to bottom, as written, against
// what `make run` starts: pistrac, pistrad serving a bundle built from
// policies/, and the fake upstreams. The one liberty is the port numbers
// (the default policy's and the README's fixed ones are replaced by free
// ones, in a copy of the policy and in the commands), so the test can run
// beside anything else on the machine. Before the block that rebuilds and
// reloads, the test edits the policy as a reader would, and checks that the
// reload served the edit.
func TestReadmeTour(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries and runs the README's commands")
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := tourBlocks(t, string(readme))
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	work := t.TempDir()
	bin := filepath.Join(work, ".run", "bin")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin+"/", "../cmd/pistrad", "../cmd/pistrac", "../cmd/fakeprovider").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ports := map[string]string{}
	var pairs []string
	for _, fixed := range []string{"127.0.0.1:8080", "127.0.0.1:8081", "127.0.0.1:9901", "127.0.0.1:9902"} {
		ports[fixed] = freeAddr(t)
		pairs = append(pairs, fixed, ports[fixed])
	}
	swap := strings.NewReplacer(pairs...).Replace
	copyTree(t, "../policies", filepath.Join(work, "policies"), swap)
	env := append(os.Environ(), "PISTRA_FAKE_OPENAI_KEY=fake-openai-dev", "PISTRA_FAKE_ANTHROPIC_KEY=fake-anthropic-dev",
		"PISTRA_ADMIN_TOKEN=pistra-admin-dev")
	sh := func(script string) (string, error) {
		cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
		cmd.Dir, cmd.Env = work, env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	// What scripts/run.sh does before it starts the processes, and the
	// checked-in gen/ the diff compares against, both from this copy.
	if out, err := sh(".run/bin/pistrac build -o gen policies && .run/bin/pistrac build -o .run/policy policies"); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	start := func(name string, args ...string) {
		cmd := exec.CommandContext(ctx, filepath.Join(bin, name), args...)
		cmd.Dir, cmd.Env = work, env
		logs, err := os.Create(filepath.Join(work, name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = logs, logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cmd.Process.Signal(os.Interrupt)
			cmd.Wait()
			logs.Close()
		})
	}
	start("fakeprovider", "-openai", ports["127.0.0.1:9901"], "-anthropic", ports["127.0.0.1:9902"])
	start("pistrad", "-bundle", ".run/policy/bundle.json", "-listen", ports["127.0.0.1:8080"],
		"-admin-listen", ports["127.0.0.1:8081"], "-ledger-dir", ".run/ledger")
	waitReady(t, ctx, "http://"+ports["127.0.0.1:8080"]+"/readyz")
	before := sourceHash(t, ports["127.0.0.1:8081"])

	checked := make([]bool, len(tourChecks))
	edited := false
	for i, block := range blocks {
		edits := strings.Contains(block, "pistrac build -o .run/policy")
		edited = edited || edits
		if edits {
			// A reader's edit: a profile for an ops team.
			if err := os.WriteFile(filepath.Join(work, "policies", "ops.cue"),
				[]byte("package pistra\n\nprofiles: ops: allowed_models: [\"fast\"]\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		out, err := sh(swap(block))
		if err != nil {
			t.Fatalf("README tour block %d failed: %v\n%s\noutput:\n%s\npistrad:\n%s", i+1, err, block, out, readFile(work, "pistrad.log"))
		}
		for k, c := range tourChecks {
			checked[k] = checked[k] || strings.Contains(block, c.block)
			if strings.Contains(block, c.block) && !strings.Contains(out, c.output) {
				t.Errorf("README tour block %d: output lacks %q:\n%s\noutput:\n%s", i+1, c.output, block, out)
			}
		}
		if edits {
			after := sourceHash(t, ports["127.0.0.1:8081"])
			if after == before || !strings.Contains(out, `"source_hash":"`+after+`"`) {
				t.Errorf("the edit was not served after the rebuild and reload: source_hash %s before, %s after\n%s", before, after, out)
			}
		}
	}
	for k, c := range tourChecks {
		if !checked[k] {
			t.Errorf("no tour block contains %q any more: update tourChecks", c.block)
		}
	}
	if !edited {
		t.Error("no tour block rebuilds the bundle and reloads (pistrac build -o .run/policy)")
	}
}

// freeAddr is a loopback address nothing listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// copyTree copies the files under src into dst, passing each through edit.
func copyTree(t *testing.T, src, dst string, edit func(string) string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), []byte(edit(string(b))), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func waitReady(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	for ctx.Err() == nil {
		if resp, err := http.Get(url); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s never answered 200", url)
}

// sourceHash reads the serving policy's hash from the admin status.
func sourceHash(t *testing.T, admin string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+admin+"/admin/v1/status", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer pistra-admin-dev")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct {
		SourceHash string `json:"source_hash"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || st.SourceHash == "" {
		t.Fatalf("admin status: %v (%d)", err, resp.StatusCode)
	}
	return st.SourceHash
}

func readFile(dir, name string) string {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return fmt.Sprint(err)
	}
	return string(b)
}
