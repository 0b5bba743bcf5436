package e2e

import (
	"context"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/pistra/pistra/compiler"
	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/internal/testkit/dnstest"
	"github.com/pistra/pistra/internal/testkit/fakepicker"
	"github.com/pistra/pistra/internal/testkit/sdkclient"
)

const poolExample = "../policies/examples/self-hosted-pool"

// copyExample copies the example's files into a temporary directory with
// each old string of swap replaced by its new one.
func copyExample(t *testing.T, swap *strings.Replacer) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(poolExample, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(poolExample, path)
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), []byte(swap.Replace(string(b))), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestPoolExampleAgrees: a copy of the self-hosted-pool example, its DNS
// names on the test's DNS server, its picker a real ext_proc picker over
// TLS and its hosted failover a fake: `pistrac test` passes its cases, and
// for each, /v1/preflight names the candidate, member set and picker that
// pistrad then dials.
func TestPoolExampleAgrees(t *testing.T) {
	pistrad, pistrac := buildPistrad(t), buildCommand(t, "pistrac")
	m := startMembers(t, 3)
	dnsSrv := dnstest.Start(t)
	all, h100 := "vllm.pool.test:"+m.port, "vllm-h100.pool.test:"+m.port
	dnsSrv.Set(t, "vllm.pool.test", time.Hour, ips(0, 1, 2)...)
	dnsSrv.Set(t, "vllm-h100.pool.test", time.Hour, ips(2)...)
	dnsSrv.Set(t, "vllm-l4.pool.test", time.Hour, ips(0)...)
	pki := testkit.NewPKI(t)
	picker := fakepicker.Start(t, fakepicker.Options{PKI: pki, Script: fakepicker.RoundRobin(m.addr(0), m.addr(1), m.addr(2))})
	together, togetherURL := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI, Key: secretBackup})

	dir := copyExample(t, strings.NewReplacer(
		"vllm.inference.svc.cluster.local:8000", all,
		"vllm-h100.inference.svc.cluster.local:8000", h100,
		"vllm-l4.inference.svc.cluster.local:8000", "vllm-l4.pool.test:"+m.port,
		"vllm-epp.inference.svc.cluster.local:9002", picker.Addr(),
		`picker_timeout: "1s"`, `picker_timeout: "1s"`+"\n\tpicker_ca: \""+pki.CAFile+"\"",
		"https://api.together.xyz/v1", togetherURL,
		// The fake members want a key, as vLLM started with --api-key does.
		`pool: "vllm"`, `pool: "vllm"`+"\n\t\tcredential_env: \""+envOpenAI+"\"",
		"sha256:a5cf05304332440228c28bdb3d48b3fe86e38923f6f3aa73d998fe2e5e9c5d66", testkit.HashKey(keyDefault),
		"sha256:aaa733abac2e6a9eaf87347fbf0683defbfaac5893e684f705d70185a4d6b920", testkit.HashKey(keyBatch),
	))
	if out, err := exec.Command(pistrac, "test", dir).CombinedOutput(); err != nil || !strings.Contains(string(out), "3 cases passed") {
		t.Fatalf("pistrac test: %v\n%s", err, out)
	}
	g, err := compiler.Compile(dir)
	if err != nil {
		t.Fatal(err)
	}
	d := poolDaemon(t, pistrad, g, dnsSrv, time.Minute, "TOGETHER_API_KEY="+secretBackup)
	client := sdkclient.OpenAI("http://"+d.public+"/v1/", "")
	e := &env{t: t}
	ask := func(key, route string, body any) testkit.Preflight {
		h := http.Header{"Authorization": {"Bearer " + key}}
		status, b := e.preflight("http://"+d.public+"/v1/preflight?route="+route, h, body)
		if status != http.StatusOK {
			t.Fatalf("preflight %s: %d %s", route, status, b)
		}
		return decodeAnswer(t, status, b)
	}
	var resp *http.Response
	as := func(key string) []option.RequestOption {
		return []option.RequestOption{option.WithAPIKey(key), option.WithResponseInto(&resp)}
	}

	// "the pool serves first": the picker's member, one of the pool's.
	pre := ask(keyDefault, "chat_completions", chatParams("llama"))
	if _, err := client.Chat.Completions.New(context.Background(), chatParams("llama"), as(keyDefault)...); err != nil {
		t.Fatal(err)
	}
	agree(t, pre, resp, "vllm", all, m.addr(0), m.addr(1), m.addr(2))
	if reqs := picker.WaitEnded(t, 1); len(reqs) != 1 || reqs[0].Served != resp.Header.Get("Pistra-Endpoint") {
		t.Errorf("the picker was told %+v", reqs)
	}

	// "batch stays on the pool (its H100 subset)", the hint sent.
	completion := openai.CompletionNewParams{Model: "llama", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)}}
	pre = ask(keyBatch, "completions", completion)
	if _, err := client.Completions.New(context.Background(), completion, as(keyBatch)...); err != nil {
		t.Fatal(err)
	}
	agree(t, pre, resp, "vllm", h100, m.addr(2))
	if reqs := picker.WaitEnded(t, 2); !slices.Equal(reqs[1].Subset, []string{m.addr(2)}) {
		t.Errorf("subset hint %v", reqs[1].Subset)
	}

	// "responses are not served by the pool's channel".
	params := responses.ResponseNewParams{Model: "llama", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(prompt)}}
	pre = ask(keyDefault, "responses", params)
	if _, err := client.Responses.New(context.Background(), params, as(keyDefault)...); err != nil {
		t.Fatal(err)
	}
	agree(t, pre, resp, "together", "")
	if together.Calls() != 1 {
		t.Errorf("together called %d times", together.Calls())
	}
}

// agree checks that preflight's answer names provider, and for a pool the
// member set members and the picker, and that the response came from
// provider, at one of the endpoints listed.
func agree(t *testing.T, pre testkit.Preflight, resp *http.Response, provider, members string, endpoints ...string) {
	t.Helper()
	if pre.Serve.Provider != provider || resp.Header.Get("Pistra-Provider") != provider {
		t.Fatalf("preflight names %s, the request was served by %s", pre.Serve.Provider, resp.Header.Get("Pistra-Provider"))
	}
	if members == "" {
		if pre.Serve.Pool != nil || resp.Header.Get("Pistra-Endpoint") != "" {
			t.Errorf("a pool where there is none: %+v, %q", pre.Serve.Pool, resp.Header.Get("Pistra-Endpoint"))
		}
		return
	}
	if p := pre.Serve.Pool; p == nil || p.Members != members || p.Pick != "picker" {
		t.Errorf("preflight's pool %+v, want members %s by the picker", p, members)
	}
	if got := resp.Header.Get("Pistra-Endpoint"); !slices.Contains(endpoints, got) {
		t.Errorf("served by %q, not one of %v", got, endpoints)
	}
}
