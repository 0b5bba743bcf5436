package server

import (
	"github.com/pistra/pistra/runtime/admin"
	"github.com/pistra/pistra/runtime/bundle"
	"github.com/pistra/pistra/runtime/plan"
)

// checkSignature refuses g unless the configured bundle key signed it;
// without a key every graph the loader accepts is served.
func (s *Server) checkSignature(g *plan.Graph) error {
	if s.opts.BundleKey == nil {
		return nil
	}
	return s.opts.BundleKey.Verify(g)
}

// bundleStatus describes g's digest and signer. With a key configured,
// every graph that serves was verified against it.
func (s *Server) bundleStatus(g *plan.Graph) admin.BundleStatus {
	if k := s.opts.BundleKey; k != nil {
		return admin.BundleStatus{Digest: g.Digest, SignedBy: k.KeyID(), SignatureVerified: true}
	}
	return admin.BundleStatus{Digest: g.Digest, SignedBy: bundle.Signer(g)}
}
