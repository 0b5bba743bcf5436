package reconcile

import "testing"

// TestNextPage: a page that says there is more but gives no cursor is an
// error, not the last page, so a provider's side is never judged on part
// of its pages.
func TestNextPage(t *testing.T) {
	cursor, empty := "page_2", ""
	for _, c := range []struct {
		more    bool
		next    *string
		want    string
		wantErr bool
	}{
		{false, nil, "", false},
		{false, &cursor, "", false},
		{true, &cursor, "page_2", false},
		{true, nil, "", true},
		{true, &empty, "", true},
	} {
		got, err := nextPage(c.more, c.next)
		if got != c.want || (err != nil) != c.wantErr {
			t.Errorf("nextPage(%v, %v) = %q, %v; want %q, error %v", c.more, c.next, got, err, c.want, c.wantErr)
		}
	}
}
