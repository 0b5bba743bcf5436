package fakeprovider_test

import (
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/pistra/pistra/internal/fakeprovider"
)

const testKey = "sk-test-upstream"

// startOpenAI serves a fake OpenAI API that expects testKey and returns a
// client without retries, so each call is one request.
func startOpenAI(t *testing.T) (*fakeprovider.Server, openai.Client) {
	t.Helper()
	s, base := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI, Key: testKey})
	return s, openAIClient(base, testKey)
}

func openAIClient(base, key string, opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{
		option.WithBaseURL(base), option.WithAPIKey(key), option.WithMaxRetries(0),
	}, opts...)...)
}

// startAnthropic serves a fake Anthropic API that expects testKey.
func startAnthropic(t *testing.T) (*fakeprovider.Server, anthropic.Client, string) {
	t.Helper()
	s, base := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectAnthropic, Key: testKey})
	return s, anthropicClient(base, testKey), base
}

// anthropicClient takes the /v1 base URL pistra's config uses; the
// Anthropic SDK wants the origin, since its paths start with v1/.
func anthropicClient(base, key string, opts ...aoption.RequestOption) anthropic.Client {
	return anthropic.NewClient(append([]aoption.RequestOption{
		aoption.WithBaseURL(strings.TrimSuffix(base, "v1")), aoption.WithAPIKey(key), aoption.WithMaxRetries(0),
	}, opts...)...)
}
