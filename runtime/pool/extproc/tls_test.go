package extproc_test

import (
	"testing"
	"time"

	"github.com/pistra/pistra/internal/testkit"
	"github.com/pistra/pistra/internal/testkit/fakepicker"
	"github.com/pistra/pistra/runtime/pool/extproc"
)

// TestTLS: a picker serving TLS is reached with the CA that signed its
// certificate, under its address or a name the certificate holds; another
// CA, a name it does not hold, or plaintext either way is refused.
func TestTLS(t *testing.T) {
	pki := testkit.NewPKI(t)
	script := fakepicker.RoundRobin("127.0.0.2:8000")
	tlsPicker := fakepicker.Start(t, fakepicker.Options{PKI: pki, Script: script})
	plainPicker := fakepicker.Start(t, fakepicker.Options{Script: script})
	other := testkit.NewPKI(t)
	for _, tc := range []struct {
		name string
		addr string
		o    extproc.Options
		ok   bool
	}{
		{"the CA", tlsPicker.Addr(), extproc.Options{CAFile: pki.CAFile}, true},
		{"the CA, by name", tlsPicker.Addr(), extproc.Options{CAFile: pki.CAFile, ServerName: testkit.ServerName}, true},
		{"another CA", tlsPicker.Addr(), extproc.Options{CAFile: other.CAFile}, false},
		{"the system's roots", tlsPicker.Addr(), extproc.Options{}, false},
		{"a name not in the certificate", tlsPicker.Addr(), extproc.Options{CAFile: pki.CAFile, ServerName: "picker.example"}, false},
		{"plaintext to TLS", tlsPicker.Addr(), extproc.Options{Plaintext: true}, false},
		{"TLS to plaintext", plainPicker.Addr(), extproc.Options{CAFile: pki.CAFile}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t, tc.addr, tc.o)
			q := query(0)
			q.Timeout = time.Second
			a, err := c.Pick(t.Context(), q)
			if tc.ok != (err == nil) {
				t.Fatalf("err = %v, want ok %v", err, tc.ok)
			}
			if err == nil {
				equalList(t, "endpoints", a.Endpoints, []string{"127.0.0.2:8000"})
				a.Done()
			}
		})
	}
}
