package a2a

import (
	"encoding/json"
	"net/url"
	"reflect"
	"testing"
)

func rewriter(t *testing.T) Rewriter {
	t.Helper()
	u, err := url.Parse("http://agent.test:9000/rpc")
	if err != nil {
		t.Fatal(err)
	}
	return Rewriter{Agent: u, Gateway: "https://gw.test/a2a/helper"}
}

func TestCardURLsPointAtTheGateway(t *testing.T) {
	in := `{"name":"helper","url":"http://agent.test:9000/rpc","preferredTransport":"JSONRPC",
		"additionalInterfaces":[
			{"transport":"JSONRPC","url":"http://agent.test:9000/rpc/"},
			{"transport":"HTTP+JSON","url":"http://agent.test:9000/rpc/rest?v=1"},
			{"transport":"HTTP+JSON","url":"http://agent.test:9000/rest"},
			{"transport":"HTTP+JSON","url":"http://agent.test:9000/rpcx"},
			{"transport":"GRPC","url":"grpc.elsewhere:443"},
			{"transport":"JSONRPC","url":"http://other.test/rpc"}],
		"signatures":[{"protected":"x","signature":"y"}],
		"skills":[{"id":"s","name":"s","tags":[]}]}`
	out, err := rewriter(t).Card([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got["url"] != "https://gw.test/a2a/helper" {
		t.Errorf("url = %v", got["url"])
	}
	want := []any{
		map[string]any{"transport": "JSONRPC", "url": "https://gw.test/a2a/helper"},
		map[string]any{"transport": "HTTP+JSON", "url": "https://gw.test/a2a/helper/rest?v=1"},
	}
	if !reflect.DeepEqual(got["additionalInterfaces"], want) {
		t.Errorf("additionalInterfaces = %v, want %v", got["additionalInterfaces"], want)
	}
	if _, ok := got["signatures"]; ok {
		t.Error("the signatures of a rewritten card are kept")
	}
	if got["name"] != "helper" || got["skills"] == nil || got["preferredTransport"] != "JSONRPC" {
		t.Errorf("members besides the URLs changed: %v", got)
	}
}

func TestV1CardInterfacesAreRewritten(t *testing.T) {
	in := `{"name":"helper","supportedInterfaces":[
		{"url":"http://agent.test:9000/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"},
		{"url":"http://agent.test:9000/rpc/v1/","protocolBinding":"HTTP+JSON","protocolVersion":"1.0"},
		{"url":"http://agent.test:9000/","protocolBinding":"HTTP+JSON","protocolVersion":"1.0"},
		{"url":"https://agent.test:9000/rpc","protocolBinding":"JSONRPC","protocolVersion":"1.0"}]}`
	out, err := rewriter(t).Card([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		URL        *string `json:"url"`
		Interfaces []struct {
			URL     string `json:"url"`
			Binding string `json:"protocolBinding"`
		} `json:"supportedInterfaces"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got.URL != nil {
		t.Errorf("a v1.0 card gained a url: %s", *got.URL)
	}
	// The root is not below the agent's URL, the https one another
	// origin: both dropped.
	if len(got.Interfaces) != 2 || got.Interfaces[0].URL != "https://gw.test/a2a/helper" ||
		got.Interfaces[1].URL != "https://gw.test/a2a/helper/v1/" || got.Interfaces[1].Binding != "HTTP+JSON" {
		t.Errorf("supportedInterfaces = %+v", got.Interfaces)
	}
}

func TestCardMainURLElsewhereIsTheGateway(t *testing.T) {
	out, err := rewriter(t).Card([]byte(`{"url":"http://somewhere.else/rpc"}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"url":"https://gw.test/a2a/helper"}` {
		t.Errorf("card = %s", out)
	}
	for _, bad := range []string{`[]`, `null`, `{"url":3}`, `{"additionalInterfaces":[{"url":{}}]}`, `{`} {
		if _, err := rewriter(t).Card([]byte(bad)); err == nil {
			t.Errorf("card %s rewritten without an error", bad)
		}
	}
}

func TestExtendedCardResultIsRewritten(t *testing.T) {
	out, err := rewriter(t).ExtendedCard([]byte(`{"jsonrpc":"2.0","id":"1","result":{"url":"http://agent.test:9000/rpc"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"id":"1","jsonrpc":"2.0","result":{"url":"https://gw.test/a2a/helper"}}` {
		t.Errorf("answer = %s", out)
	}
	e := `{"jsonrpc":"2.0","id":"1","error":{"code":-32007,"message":"no"}}`
	if out, err := rewriter(t).ExtendedCard([]byte(e)); err != nil || string(out) != e {
		t.Errorf("an error answer became %s, %v", out, err)
	}
}
