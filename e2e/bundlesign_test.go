package e2e

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/internal/testkit/sdkclient"
	"github.com/pistra/pistra/runtime/admin"
	"github.com/pistra/pistra/runtime/bundle"
	"github.com/pistra/pistra/runtime/plan"
)

// signingKey is a key pair made for one test; only its public half is
// written to disk, where pistrad reads it.
type signingKey struct {
	priv    ed25519.PrivateKey
	id      string
	pubPath string
}

func newSigningKey(t *testing.T) signingKey {
	t.Helper()
	priv, pubPEM := testkit.SigningKey(t)
	path := filepath.Join(t.TempDir(), "bundle.pub")
	if err := os.WriteFile(path, pubPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	return signingKey{priv: priv, id: bundle.KeyID(priv.Public().(ed25519.PublicKey)), pubPath: path}
}

// bundleVariants are the bundles an operator could be handed: the one
// built and signed from the reviewed policy, and ways of serving other
// routing behind that review.
type bundleVariants struct {
	good    *plan.Graph // signed by the trusted key, routes to the good upstream
	goodDoc []byte
	// tamperedDigest is the digest of the good bundle's content once its
	// base URLs point at the other upstream.
	tamperedDigest string
	bad            []badBundle
}

type badBundle struct {
	name string
	doc  []byte
	// refusal is what pistrad says, at start and at reload.
	refusal string
}

func marshalGraph(t *testing.T, g *plan.Graph) []byte {
	t.Helper()
	b, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func signGraph(t *testing.T, g *plan.Graph, k signingKey) *plan.Graph {
	t.Helper()
	if err := bundle.Sign(g, k.priv); err != nil {
		t.Fatal(err)
	}
	return g
}

// redirect points every provider served by from at to, as a hand edit of
// bundle.json would, without touching the digest or signature.
func redirect(g *plan.Graph, from, to string) {
	for i := range g.Providers {
		if g.Providers[i].BaseURL == from {
			g.Providers[i].BaseURL = to
		}
	}
}

func makeVariants(t *testing.T, p policy, goodURL, evilURL string, trusted, other signingKey) bundleVariants {
	t.Helper()
	v := bundleVariants{good: signGraph(t, compilePolicy(t, p), trusted)}
	v.goodDoc = marshalGraph(t, v.good)

	tampered := signGraph(t, compilePolicy(t, p), trusted)
	redirect(tampered, goodURL, evilURL)
	var err error
	if v.tamperedDigest, err = bundle.Digest(tampered); err != nil {
		t.Fatal(err)
	}
	redigested := signGraph(t, compilePolicy(t, p), trusted)
	redirect(redigested, goodURL, evilURL)
	sigs := redigested.Signatures
	if err := bundle.Seal(redigested); err != nil {
		t.Fatal(err)
	}
	redigested.Signatures = sigs

	v.bad = []badBundle{
		{"content edited, digest left", marshalGraph(t, tampered),
			"the content's digest is " + v.tamperedDigest + " but the bundle records " + v.good.Digest},
		{"digest edited to match, signature kept", marshalGraph(t, redigested),
			"the signature is over digest " + v.good.Digest + " but the bundle's content has digest " + v.tamperedDigest},
		{"unsigned", marshalGraph(t, compilePolicy(t, p)),
			"the bundle is unsigned, and only bundles signed by key " + trusted.id + " are served"},
		{"signed with another key", marshalGraph(t, signGraph(t, compilePolicy(t, p), other)),
			"the bundle is signed by key " + other.id + ", not by the trusted key " + trusted.id},
	}
	return v
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	// Renamed into place, as a deploy would, so a reload never reads half a file.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// daemonEnv is the environment pistrad needs for the test policy.
func daemonEnv() []string {
	env := []string{"PISTRA_ADMIN_TOKEN=" + adminToken}
	for k, v := range upstreamEnv {
		env = append(env, k+"="+v)
	}
	return env
}

// runRefused runs pistrad expecting it to refuse to start, and returns
// what it wrote to stderr.
func runRefused(t *testing.T, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"-listen", "127.0.0.1:0", "-admin-listen", "127.0.0.1:0", "-ledger-in-memory"}, args...)...)
	cmd.Env = append(os.Environ(), daemonEnv()...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("pistrad exited with %v, want status 1\n%s", err, out)
	}
	if strings.Contains(string(out), `"msg":"listening"`) {
		t.Errorf("pistrad listened before refusing:\n%s", out)
	}
	return string(out)
}

// adminJSON sends an admin request to the daemon and decodes its answer.
func (d *daemon) adminJSON(t *testing.T, method, path string, into any) int {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+d.admin+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp.StatusCode
}

func wantBundleStatus(t *testing.T, got, want admin.BundleStatus) {
	t.Helper()
	if got != want {
		t.Errorf("status bundle = %+v, want %+v", got, want)
	}
}

// chatServedBy sends one chat through the daemon and checks that want,
// and not the other fake, answered it.
func chatServedBy(t *testing.T, d *daemon, want, other *fakeprovider.Server) {
	t.Helper()
	wantCalls, otherCalls := want.Calls(), other.Calls()
	client := sdkclient.OpenAI("http://"+d.public+"/v1/", keyDefault)
	got, err := client.Chat.Completions.New(context.Background(), chatParams("fast"))
	if err != nil || got.Choices[0].Message.Content != fakeprovider.ReplyText(prompt) {
		t.Fatalf("chat through the daemon: %v", err)
	}
	if want.Calls() != wantCalls+1 || other.Calls() != otherCalls {
		t.Fatalf("calls: the serving upstream went %d→%d, the other %d→%d; want one call to the serving one only",
			wantCalls, want.Calls(), otherCalls, other.Calls())
	}
}

// TestSignedBundles runs pistrad with -bundle-public-key: it starts only
// on a bundle whose content matches its digest and whose signature is the
// trusted key's over that digest; a reload to any other bundle is refused
// and the bundle that was serving keeps serving, as status shows.
func TestSignedBundles(t *testing.T) {
	bin := buildPistrad(t)
	good, goodURL := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI, Key: secretOpenAI})
	evil, evilURL := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI, Key: secretOpenAI})
	p := policy{OpenAI: goodURL, Backup: goodURL, Anthropic: goodURL, Dead: "http://" + closedPort(t) + "/v1"}
	trusted, other := newSigningKey(t), newSigningKey(t)
	v := makeVariants(t, p, goodURL, evilURL, trusted, other)
	path := filepath.Join(t.TempDir(), "bundle.json")
	trustedStatus := admin.BundleStatus{Digest: v.good.Digest, SignedBy: trusted.id, SignatureVerified: true}

	t.Run("at start", func(t *testing.T) {
		for _, b := range v.bad {
			t.Run(b.name, func(t *testing.T) {
				writeFile(t, path, b.doc)
				out := runRefused(t, bin, "-bundle", path, "-bundle-public-key", trusted.pubPath)
				if !strings.Contains(out, "pistrad: load policy: "+path+": bundle: ") && !strings.Contains(out, "pistrad: policy from "+path+": ") {
					t.Errorf("the refusal does not name the bundle:\n%s", out)
				}
				if !strings.Contains(out, b.refusal) {
					t.Errorf("pistrad said:\n%s\nwant it to say %q", out, b.refusal)
				}
			})
		}
		t.Run("edited without a key configured", func(t *testing.T) {
			writeFile(t, path, v.bad[0].doc)
			if out := runRefused(t, bin, "-bundle", path); !strings.Contains(out, v.bad[0].refusal) {
				t.Errorf("pistrad said:\n%s\nwant it to say %q", out, v.bad[0].refusal)
			}
		})
		t.Run("the compiled-in graph, unsigned, with a key configured", func(t *testing.T) {
			out := runRefused(t, bin, "-bundle-public-key", trusted.pubPath)
			if want := "pistrad: policy from compiled-in (a reload serves the same graph; serve -bundle to reload policy edits): the bundle is unsigned"; !strings.Contains(out, want) {
				t.Errorf("pistrad said:\n%s\nwant it to say %q", out, want)
			}
		})
		t.Run("a key that is not a public key", func(t *testing.T) {
			writeFile(t, path, v.goodDoc)
			if out := runRefused(t, bin, "-bundle", path, "-bundle-public-key", path); !strings.Contains(out, "-bundle-public-key "+path+": no PEM block") {
				t.Errorf("pistrad said:\n%s", out)
			}
		})
		t.Run("valid signed", func(t *testing.T) {
			writeFile(t, path, v.goodDoc)
			d := startDaemon(t, bin, daemonEnv(), "-bundle", path, "-bundle-public-key", trusted.pubPath)
			var st admin.Status
			if code := d.adminJSON(t, "GET", "/admin/v1/status", &st); code != http.StatusOK {
				t.Fatalf("status answered %d", code)
			}
			wantBundleStatus(t, st.Bundle, trustedStatus)
			chatServedBy(t, d, good, evil)
			if err := d.stop(t, os.Interrupt); err != nil {
				t.Fatalf("exit: %v\n%s", err, d.logs.String())
			}
		})
		t.Run("signed, without a key configured", func(t *testing.T) {
			writeFile(t, path, v.goodDoc)
			d := startDaemon(t, bin, daemonEnv(), "-bundle", path)
			var st admin.Status
			d.adminJSON(t, "GET", "/admin/v1/status", &st)
			wantBundleStatus(t, st.Bundle, admin.BundleStatus{Digest: v.good.Digest, SignedBy: trusted.id})
			if err := d.stop(t, os.Interrupt); err != nil {
				t.Fatalf("exit: %v\n%s", err, d.logs.String())
			}
		})
	})

	t.Run("at reload", func(t *testing.T) {
		writeFile(t, path, v.goodDoc)
		d := startDaemon(t, bin, daemonEnv(), "-bundle", path, "-bundle-public-key", trusted.pubPath)
		for _, b := range v.bad {
			t.Run(b.name, func(t *testing.T) {
				writeFile(t, path, b.doc)
				var answer struct {
					Reloaded bool
					Error    string
					Status   admin.Status
				}
				if code := d.adminJSON(t, "POST", "/admin/v1/reload", &answer); code != http.StatusUnprocessableEntity || answer.Reloaded {
					t.Fatalf("reload answered %d (reloaded %v), want 422", code, answer.Reloaded)
				}
				if !strings.Contains(answer.Error, b.refusal) {
					t.Errorf("reload refused with %q, want it to say %q", answer.Error, b.refusal)
				}
				wantBundleStatus(t, answer.Status.Bundle, trustedStatus)
				var st admin.Status
				d.adminJSON(t, "GET", "/admin/v1/status", &st)
				wantBundleStatus(t, st.Bundle, trustedStatus)
				if st.LastReloadError != answer.Error {
					t.Errorf("status last_reload_error %q, want %q", st.LastReloadError, answer.Error)
				}
				chatServedBy(t, d, good, evil)
			})
		}
		t.Run("a new signed bundle", func(t *testing.T) {
			moved := signGraph(t, compilePolicy(t, policy{OpenAI: evilURL, Backup: evilURL, Anthropic: evilURL, Dead: p.Dead}), trusted)
			writeFile(t, path, marshalGraph(t, moved))
			var answer struct {
				Reloaded bool
				Status   admin.Status
			}
			if code := d.adminJSON(t, "POST", "/admin/v1/reload", &answer); code != http.StatusOK || !answer.Reloaded {
				t.Fatalf("reload answered %d (reloaded %v)", code, answer.Reloaded)
			}
			wantBundleStatus(t, answer.Status.Bundle, admin.BundleStatus{Digest: moved.Digest, SignedBy: trusted.id, SignatureVerified: true})
			chatServedBy(t, d, evil, good)
		})
		if err := d.stop(t, os.Interrupt); err != nil {
			t.Fatalf("exit: %v\n%s", err, d.logs.String())
		}
		if logs := d.logs.String(); !strings.Contains(logs, `"msg":"reload refused; the active snapshot keeps serving"`) {
			t.Errorf("the refusals were not logged:\n%s", logs)
		}
	})
}
