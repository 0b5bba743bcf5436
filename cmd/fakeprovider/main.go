// Command fakeprovider serves fake OpenAI and Anthropic APIs for local runs
// and benchmarks:
//
//	fakeprovider -openai 127.0.0.1:9901 -anthropic 127.0.0.1:9902
//
// Base URLs are then http://127.0.0.1:9901/v1 and http://127.0.0.1:9902/v1;
// the Anthropic server also answers chat completions as Anthropic's
// OpenAI-compatible layer does, for the default policy's openai-compat channel.
// With -tls-cert and -tls-key they serve https; adding -client-ca makes them
// require a client certificate of that CA and authenticate by it alone, as
// a trust-domain pool behind mutual TLS does. Faults and usage modes set by
// flags apply to both servers; each server
// also takes them at runtime on POST /_fake/faults and POST /_fake/usage, and
// a request may set its own usage modes in the Fake-Usage header. With
// -drop they behave as a compatibility endpoint that drops the capabilities
// named (see fakeprovider.Drops), changed at runtime on POST /_fake/drops.
// With
// -chaos-rate each server instead draws a fault at random for a share of
// its calls (see fakeprovider.Chaos), as the chaos run (bench/chaos) needs.
// Each server also serves its provider's admin usage API from what it
// answered, to the admin key of -openai-admin-key or -anthropic-admin-key;
// -report-skew, -report-drop-days and -report-lag-hours (or POST
// /_fake/report) make it disagree with the traffic in one way each.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/runtime/plan"
)

func main() {
	err := run(os.Args[1:])
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "fakeprovider:", err)
		os.Exit(1)
	}
}

type config struct {
	openAIAddr, anthropicAddr   string
	openAIKey, anthropicKey     string
	openAIAdmin, anthropicAdmin string
	report                      fakeprovider.Report
	record                      int
	tls                         fakeprovider.TLSOptions
	faults                      fakeprovider.Faults
	usage                       fakeprovider.Usage
	drops                       fakeprovider.Drops
	chaos                       fakeprovider.Chaos
}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("fakeprovider", flag.ContinueOnError)
	fs.StringVar(&c.openAIAddr, "openai", "", "address for the OpenAI-dialect server (empty: none)")
	fs.StringVar(&c.anthropicAddr, "anthropic", "", "address for the Anthropic-dialect server (empty: none)")
	fs.StringVar(&c.openAIKey, "openai-key", os.Getenv("PISTRA_FAKE_OPENAI_KEY"),
		"key OpenAI clients must send (default $PISTRA_FAKE_OPENAI_KEY; empty: any non-empty key)")
	fs.StringVar(&c.anthropicKey, "anthropic-key", os.Getenv("PISTRA_FAKE_ANTHROPIC_KEY"),
		"key Anthropic clients must send (default $PISTRA_FAKE_ANTHROPIC_KEY; empty: any non-empty key)")
	fs.StringVar(&c.openAIAdmin, "openai-admin-key", os.Getenv("PISTRA_FAKE_OPENAI_ADMIN_KEY"),
		"admin key the OpenAI organization usage API takes (default $PISTRA_FAKE_OPENAI_ADMIN_KEY; empty: the API refuses every call)")
	fs.StringVar(&c.anthropicAdmin, "anthropic-admin-key", os.Getenv("PISTRA_FAKE_ANTHROPIC_ADMIN_KEY"),
		"admin key the Anthropic usage report takes (default $PISTRA_FAKE_ANTHROPIC_ADMIN_KEY; empty: the API refuses every call)")
	readReport := reportFlags(fs, &c.report)
	fs.StringVar(&c.tls.CertFile, "tls-cert", "", "serve https with this certificate (PEM; needs -tls-key)")
	fs.StringVar(&c.tls.KeyFile, "tls-key", "", "the key of -tls-cert (PEM)")
	fs.StringVar(&c.tls.ClientCAFile, "client-ca", "", "with -tls-cert: require client certificates of these CAs (PEM) and authenticate by them instead of a key")
	fs.IntVar(&c.record, "record", fakeprovider.DefaultRecordLimit, "calls kept for GET /_fake/requests (0: none)")
	fs.IntVar(&c.faults.FailStatus, "fail-status", 0, "answer this status to the first -fail-count calls")
	fs.IntVar(&c.faults.FailCount, "fail-count", 0, "calls that get -fail-status (0: all)")
	fs.DurationVar(&c.faults.RetryAfter, "retry-after", 0, "retry-after sent with injected failures (429 default: 1s)")
	fs.DurationVar(&c.faults.FirstByteDelay, "first-byte-delay", 0, "delay before every response's first byte")
	fs.DurationVar(&c.faults.ChunkDelay, "chunk-delay", 0, "delay between stream events")
	fs.IntVar(&c.faults.CutAfter, "cut-after", 0, "drop stream connections after this many events (0: never)")
	fs.TextVar(&c.usage, "usage", fakeprovider.Usage{},
		"usage modes, comma-separated: split (every usage breakdown on every answer), every-chunk (running usage on each chat chunk, as Gemini does) or last-choice (usage in the last choice's chunk)")
	fs.TextVar(&c.drops, "drop", fakeprovider.Drops(0),
		"capabilities dropped as a compatibility endpoint drops them, comma-separated, some of: "+strings.Join(plan.CapNames(), ", "))
	fs.Float64Var(&c.chaos.Rate, "chaos-rate", 0, "share of calls (0..1) spoiled with a fault drawn at random, in place of the fault flags above (-chunk-delay still paces them); the other calls keep those")
	fs.Uint64Var(&c.chaos.Seed, "chaos-seed", 1, "seed of the random faults: the same seed and requests meet the same faults")
	fs.DurationVar(&c.chaos.Stall, "chaos-stall", 3*time.Second, "how long the stall and stall-mid faults hold an answer")
	kinds := fs.String("chaos-faults", "all", "comma-separated faults drawn from: "+fakeprovider.JoinChaosKinds(fakeprovider.ChaosKinds))
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if err := readReport(); err != nil {
		return c, err
	}
	var err error
	if c.chaos.Kinds, err = fakeprovider.ParseChaosKinds(*kinds); err != nil {
		return c, err
	}
	if err := c.chaos.Validate(); err != nil {
		return c, err
	}
	if c.openAIAddr == "" && c.anthropicAddr == "" {
		return c, errors.New("nothing to serve: give -openai and/or -anthropic an address")
	}
	if (c.tls.CertFile == "") != (c.tls.KeyFile == "") || (c.tls.ClientCAFile != "" && c.tls.CertFile == "") {
		return c, errors.New("-tls-cert and -tls-key go together, and -client-ca needs them")
	}
	if c.record == 0 {
		c.record = -1
	}
	return c, c.faults.Validate()
}

// reportFlags defines the usage APIs' knobs; the function returned reads
// them into r once the flags are parsed.
func reportFlags(fs *flag.FlagSet, r *fakeprovider.Report) func() error {
	skew := fs.String("report-skew", "", "usage APIs report one token class off by a factor, CLASS=FACTOR (input, cached_input, cache_creation, output), e.g. output=1.1")
	drop := fs.String("report-drop-days", "", "usage APIs report no usage on these UTC days, comma-separated YYYY-MM-DD")
	fs.IntVar(&r.LagHours, "report-lag-hours", 0, "usage APIs trail the traffic by this many hours: the most recent are not reported yet")
	return func() error {
		var err error
		if *skew != "" {
			if r.Skew, err = fakeprovider.ParseSkew(*skew); err != nil {
				return err
			}
		}
		if *drop != "" {
			r.DropDays = strings.Split(*drop, ",")
		}
		return r.Validate()
	}
}

func run(args []string) error {
	cfg, err := parseFlags(args)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var listeners []*fakeprovider.Listener
	defer func() { shutdown(listeners) }()
	for _, srv := range []struct {
		dialect   fakeprovider.Dialect
		addr, key string
		admin     string
	}{
		{fakeprovider.DialectOpenAI, cfg.openAIAddr, cfg.openAIKey, cfg.openAIAdmin},
		{fakeprovider.DialectAnthropic, cfg.anthropicAddr, cfg.anthropicKey, cfg.anthropicAdmin},
	} {
		if srv.addr == "" {
			continue
		}
		s, err := fakeprovider.New(fakeprovider.Options{
			Dialect: srv.dialect, Key: srv.key, RecordLimit: cfg.record, Faults: cfg.faults, Usage: cfg.usage, Drops: cfg.drops, Chaos: cfg.chaos,
			CertAuth: cfg.tls.ClientCAFile != "", AdminKey: srv.admin, Report: cfg.report,
		})
		if err != nil {
			return err
		}
		var l *fakeprovider.Listener
		if cfg.tls.CertFile != "" {
			l, err = s.ListenTLS(srv.addr, cfg.tls)
		} else {
			l, err = s.Listen(srv.addr)
		}
		if err != nil {
			return err
		}
		listeners = append(listeners, l)
		slog.Info("fake provider serving", "dialect", srv.dialect, "base_url", l.BaseURL, "key_required", srv.key != "" && cfg.tls.ClientCAFile == "",
			"client_cert_required", cfg.tls.ClientCAFile != "", "usage", cfg.usage.String(), "drops", cfg.drops.String(), "chaos_rate", cfg.chaos.Rate, "chaos_seed", cfg.chaos.Seed)
	}
	<-ctx.Done()
	slog.Info("fake provider shutting down")
	return nil
}

func shutdown(listeners []*fakeprovider.Listener) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, l := range listeners {
		if err := l.Shutdown(ctx); err != nil {
			slog.Error("fake provider shutdown", "addr", l.Addr, "err", err)
		}
	}
}
