package plan

import (
	"slices"
	"testing"
)

// TestVocabularies holds every list to its Valid: each member is valid and
// listed once, and a near miss (case, empty) is not.
func TestVocabularies(t *testing.T) {
	check := func(name string, values []string, valid func(string) bool) {
		t.Helper()
		for i, v := range values {
			if !valid(v) {
				t.Errorf("%s: listed %q is not Valid", name, v)
			}
			if slices.Index(values, v) != i {
				t.Errorf("%s: %q listed twice", name, v)
			}
		}
		for _, miss := range []string{"", "Bearer", "MINUTE", "total_token", "Reject"} {
			if valid(miss) {
				t.Errorf("%s: %q is Valid", name, miss)
			}
		}
	}
	check("FailureClasses", Names(FailureClasses), func(s string) bool { return FailureClass(s).Valid() })
	check("AuthSchemes", Names(AuthSchemes), func(s string) bool { return AuthScheme(s).Valid() })
	check("CostTypes", Names(CostTypes), func(s string) bool { return CostType(s).Valid() })
	check("LossActions", Names(LossActions), func(s string) bool { return LossAction(s).Valid() })
	check("Windows", Names(Windows), func(s string) bool { return Window(s).Valid() })
	check("BucketScopes", Names(BucketScopes), func(s string) bool { return BucketScope(s).Valid() })
	check("PickerFailures", Names(PickerFailures), func(s string) bool { return PickerFailure(s).Valid() })
}

func TestNames(t *testing.T) {
	if got := Names([]Window{WindowDay, WindowMinute}); !slices.Equal(got, []string{"day", "minute"}) {
		t.Fatalf("got %q", got)
	}
}

// TestChannelAuth: a channel's own scheme, else its provider's, else its
// dialect's; the credential variable likewise.
func TestChannelAuth(t *testing.T) {
	p := Provider{CredentialEnv: "P", Channels: []Channel{
		{Dialect: DialectAnthropic}, {Dialect: DialectOpenAI},
		{Dialect: DialectOpenAI, Auth: AuthAPIKey, CredentialEnv: "C"},
	}}
	for ci, want := range []AuthScheme{AuthXAPIKey, AuthBearer, AuthAPIKey} {
		if got := p.ChannelAuth(ci); got != want {
			t.Errorf("channel %d: %s, want %s", ci, got, want)
		}
	}
	p.Auth = AuthAPIKey // Azure's, named once for the provider
	for ci := range p.Channels {
		if got := p.ChannelAuth(ci); got != AuthAPIKey {
			t.Errorf("channel %d with the provider's api-key: %s", ci, got)
		}
	}
	if p.ChannelCredentialEnv(1) != "P" || p.ChannelCredentialEnv(2) != "C" {
		t.Errorf("credential variables %q, %q", p.ChannelCredentialEnv(1), p.ChannelCredentialEnv(2))
	}
	for name, want := range map[string]Dialect{"Anthropic-Version": DialectAnthropic, "anthropic-beta": DialectAnthropic,
		"OpenAI-Organization": DialectOpenAI, "openai-project": DialectOpenAI, "Anthropic-Workspace-Id": "", "X-Team": ""} {
		if got := HeaderDialect(name); got != want {
			t.Errorf("HeaderDialect(%q) = %q, want %q", name, got, want)
		}
	}
}
