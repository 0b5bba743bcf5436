package jsonrpc

import "testing"

func TestMembersAreReadAsTheServicesDecoderReadsThem(t *testing.T) {
	for body, want := range map[string]string{
		`{"jsonrpc":"2.0","id":1,"Method":"message/send"}`:      "message/send",
		`{"JSONRPC":"2.0","ID":1,"METHOD":"message/send"}`:      "message/send",
		`{"jsonrpc":"2.0","id":1,"m\u0065thod":"message/send"}`: "message/send",
	} {
		got, _, err := ReadMessages([]byte(body), nil)
		if err != nil || len(got) != 1 || got[0].Method != want || string(got[0].ID) != "1" {
			t.Errorf("%s: got %+v, %v", body, got, err)
		}
	}
	for _, twice := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","Method":"message/send"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","method":"message/send"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","m\u0065thod":"message/send"}`,
		`{"jsonrpc":"2.0","id":1,"ID":2,"method":"message/send"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"},"Params":{"name":"b"}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","id":2,"method":"b","Method":"c"}]`,
	} {
		if got, _, err := ReadMessages([]byte(twice), nil); err == nil {
			t.Errorf("%s: read as %+v", twice, got)
		}
	}
}
