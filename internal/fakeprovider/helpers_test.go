package fakeprovider_test

import (
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"

	"github.com/pistra/pistra/internal/fakeprovider"
	"github.com/pistra/pistra/internal/testkit/sdkclient"
)

const testKey = "sk-test-upstream"

// startOpenAI serves a fake OpenAI API that expects testKey and returns a
// client without retries, so each call is one request.
func startOpenAI(t *testing.T) (*fakeprovider.Server, openai.Client) {
	t.Helper()
	s, base := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectOpenAI, Key: testKey})
	return s, sdkclient.OpenAI(base, testKey)
}

// startAnthropic serves a fake Anthropic API that expects testKey.
func startAnthropic(t *testing.T) (*fakeprovider.Server, anthropic.Client, string) {
	t.Helper()
	s, base := fakeprovider.Start(t, fakeprovider.Options{Dialect: fakeprovider.DialectAnthropic, Key: testKey})
	return s, sdkclient.Anthropic(base, testKey), base
}
