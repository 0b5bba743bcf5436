package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/internal/testkit/sdkclient"
)

// buildPistrad compiles cmd/pistrad into a temporary directory.
func buildPistrad(t *testing.T) string {
	t.Helper()
	return buildCommand(t, "pistrad")
}

// buildCommand compiles cmd/name into a temporary directory.
func buildCommand(t *testing.T, name string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	out, err := exec.Command("go", "build", "-o", bin, "../cmd/"+name).CombinedOutput()
	if err != nil {
		t.Fatalf("go build ./cmd/%s: %v\n%s", name, err, out)
	}
	return bin
}

// daemon is pistrad running as a child process.
type daemon struct {
	cmd           *exec.Cmd
	public, admin string
	logs          *testkit.SyncBuffer
	exited        chan error
}

// startDaemon runs pistrad on random ports and waits for its "listening"
// log line, which carries the bound addresses.
func startDaemon(t *testing.T, bin string, env []string, args ...string) *daemon {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	if !slices.Contains(args, "-ledger-dir") {
		args = append(args, "-ledger-in-memory")
	}
	cmd := exec.CommandContext(ctx, bin, append([]string{"-listen", "127.0.0.1:0", "-admin-listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &daemon{cmd: cmd, logs: &testkit.SyncBuffer{}, exited: make(chan error, 1)}
	lines := bufio.NewScanner(stderr)
	for d.public == "" && lines.Scan() {
		d.logs.Write(append(lines.Bytes(), '\n'))
		var rec struct{ Msg, Public, Admin string }
		if json.Unmarshal(lines.Bytes(), &rec) == nil && rec.Msg == "listening" {
			d.public, d.admin = rec.Public, rec.Admin
		}
	}
	if d.public == "" {
		cmd.Wait()
		t.Fatalf("pistrad did not start:\n%s", d.logs.String())
	}
	go func() {
		io.Copy(d.logs, stderr)
		d.exited <- cmd.Wait()
	}()
	return d
}

// stop sends sig and returns the exit error once the process is gone.
func (d *daemon) stop(t *testing.T, sig os.Signal) error {
	t.Helper()
	if err := d.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	return <-d.exited
}

func get(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestPistradProcess runs the real binary: the compiled-in policy serves
// /healthz and stops cleanly on SIGTERM (what `make run` relies on); with
// --bundle it proxies to the fakes, reloads on SIGHUP and exits 0.
func TestPistradProcess(t *testing.T) {
	bin := buildPistrad(t)
	t.Run("compiled-in policy", func(t *testing.T) {
		d := startDaemon(t, bin, []string{"PISTRA_FAKE_OPENAI_KEY=a", "PISTRA_FAKE_ANTHROPIC_KEY=b", "PISTRA_ADMIN_TOKEN=t"})
		if code := get(t, "http://"+d.public+"/healthz"); code != http.StatusOK {
			t.Fatalf("/healthz answered %d", code)
		}
		if err := d.stop(t, syscall.SIGTERM); err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, d.logs.String())
		}
	})
	t.Run("bundle, SIGHUP, SIGTERM", func(t *testing.T) {
		e := &env{t: t}
		var openaiURL string
		e.openai, openaiURL = fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI, Key: secretOpenAI})
		e.bundlePath = filepath.Join(t.TempDir(), "bundle.json")
		e.writeBundle(policy{OpenAI: openaiURL, Backup: openaiURL, Anthropic: openaiURL, Dead: "http://" + closedPort(t) + "/v1"})
		var env []string
		for k, v := range upstreamEnv {
			env = append(env, k+"="+v)
		}
		d := startDaemon(t, bin, append(env, "PISTRA_ADMIN_TOKEN=t"), "-bundle", e.bundlePath)
		client := sdkclient.OpenAI("http://"+d.public+"/v1/", keyDefault)
		got, err := client.Chat.Completions.New(context.Background(), chatParams("fast"))
		if err != nil || got.Choices[0].Message.Content != fakeprovider.ReplyText(prompt) {
			t.Fatalf("chat through the daemon: %v", err)
		}
		if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		if err := d.stop(t, syscall.SIGTERM); err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, d.logs.String())
		}
		logs := d.logs.String()
		if !strings.Contains(logs, `"msg":"reload applied"`) || !strings.Contains(logs, `"msg":"stopped"`) {
			t.Errorf("logs lack the reload or the clean stop:\n%s", logs)
		}
		if strings.Contains(logs, secretOpenAI) || strings.Contains(logs, keyDefault) {
			t.Errorf("a secret appears in the daemon's logs")
		}
	})
}
