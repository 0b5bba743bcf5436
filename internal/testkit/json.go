package testkit

import (
	"encoding/json"
	"testing"
)

// MarshalJSON is v as encoding/json writes it; a failure fails t.
func MarshalJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
