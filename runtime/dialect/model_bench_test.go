package dialect

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkFindModel reads the model from bodies where it comes first (the
// usual SDK order) and last, after a conversation FindModel must skip.
func BenchmarkFindModel(b *testing.B) {
	turn := `{"role":"user","content":"a \"quoted\" word, a tab\t and naïve prose ` +
		strings.Repeat("lorem ipsum ", 20) + `"},`
	for _, size := range []int{1 << 10, 64 << 10} {
		msgs := `"messages":[` + strings.Repeat(turn, size/len(turn)) + `{"role":"user","content":"end"}]`
		for _, c := range []struct{ name, body string }{
			{"first", `{"model":"gpt-4.1",` + msgs + `,"stream":true}`},
			{"last", `{` + msgs + `,"stream":true,"temperature":0.2,"model":"gpt-4.1"}`},
		} {
			raw := []byte(c.body)
			b.Run(fmt.Sprintf("%dKiB/%s", size>>10, c.name), func(b *testing.B) {
				b.SetBytes(int64(len(raw)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := FindModel(raw); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
