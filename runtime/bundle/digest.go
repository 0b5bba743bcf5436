package bundle

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/pistra/pistra/runtime/plan"
)

// ErrNoDigest is returned for a graph that carries no digest: one built by
// a pistrac that did not write one, or one whose digest was deleted.
var ErrNoDigest = errors.New("the bundle carries no digest; build it with pistrac build")

// Digest is "sha256:<hex>" of g's content: encoding/json's compact
// encoding of the graph (fields in plan's order, no HTML escaping, which is
// what bundle.json is once compacted) with Digest and Signatures left out.
// It hashes the decoded graph, which is what pistrad serves, so it cannot
// differ between two documents that serve the same routing.
func Digest(g *plan.Graph) (string, error) {
	content := *g
	content.Digest, content.Signatures = "", nil
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&content); err != nil {
		return "", fmt.Errorf("encoding the graph for its digest: %w", err)
	}
	sum := sha256.Sum256(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// Seal records g's digest in g. Any signature is dropped: it was over the
// content as it was before.
func Seal(g *plan.Graph) error {
	d, err := Digest(g)
	if err != nil {
		return err
	}
	g.Digest, g.Signatures = d, nil
	return nil
}

// CheckDigest verifies that g's content hashes to the digest it carries,
// naming both when it does not.
func CheckDigest(g *plan.Graph) error {
	if g.Digest == "" {
		return ErrNoDigest
	}
	d, err := Digest(g)
	if err != nil {
		return err
	}
	if d != g.Digest {
		return fmt.Errorf("the content's digest is %s but the bundle records %s: it was edited after pistrac build; rebuild it from the policy", d, g.Digest)
	}
	return nil
}
