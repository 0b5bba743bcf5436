package bundle

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	"github.com/pistra/pistra/runtime/plan"
)

// A bundle's signature follows OPA's signed bundles: a compact JWS (RFC
// 7515) whose payload names what is signed (here the content digest) and
// the key id, which the JWS header carries too. The algorithm is EdDSA over
// Ed25519 (RFC 8037): its signatures are deterministic, so signing the
// same content with the same key gives the same bytes.

// Unsigned is the signer reported for a bundle that carries no signature.
const Unsigned = "unsigned"

const jwsAlg = "EdDSA"

type jwsHeader struct {
	Alg string `json:"alg"`
	Kid string `json:"kid"`
	Typ string `json:"typ"`
}

type jwsPayload struct {
	Digest string `json:"digest"`
	KeyID  string `json:"keyid"`
}

var b64 = base64.RawURLEncoding

// KeyID is the id pistra gives an Ed25519 public key: "sha256:" and the hex
// SHA-256 of its PKIX (SubjectPublicKeyInfo) DER encoding, the same as
// `openssl pkey -pubin -outform DER | sha256sum` prints for its PEM file.
func KeyID(pub ed25519.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil { // only for a key of the wrong length, which parsing refuses
		panic(fmt.Sprintf("bundle: marshalling an ed25519 public key: %v", err))
	}
	sum := sha256.Sum256(der)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// ParsePrivateKey reads an Ed25519 private key from PEM (PKCS #8, "PRIVATE
// KEY"), as `openssl genpkey -algorithm ed25519` and pistrac keygen write.
func ParsePrivateKey(pemBytes []byte) (ed25519.PrivateKey, error) {
	return parseKey[ed25519.PrivateKey](pemBytes, "PRIVATE KEY", "PKCS #8 private key", x509.ParsePKCS8PrivateKey)
}

// ParsePublicKey reads an Ed25519 public key from PEM (PKIX, "PUBLIC KEY").
func ParsePublicKey(pemBytes []byte) (ed25519.PublicKey, error) {
	return parseKey[ed25519.PublicKey](pemBytes, "PUBLIC KEY", "PKIX public key", x509.ParsePKIXPublicKey)
}

// parseKey decodes the one PEM block of type typ and parses it as an
// ed25519 key of type K.
func parseKey[K any](pemBytes []byte, typ, form string, parse func([]byte) (any, error)) (K, error) {
	var zero K
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return zero, fmt.Errorf("no PEM block found, want %q", typ)
	}
	if block.Type != typ {
		return zero, fmt.Errorf("PEM block is %q, want %q", block.Type, typ)
	}
	k, err := parse(block.Bytes)
	if err != nil {
		return zero, fmt.Errorf("parsing the %s: %w", form, err)
	}
	key, ok := k.(K)
	if !ok {
		return zero, fmt.Errorf("the %s is a %T, want an ed25519 key", form, k)
	}
	return key, nil
}

// Sign replaces g's signatures with one by priv over its digest, which must
// be the content's (a graph is signed as built, never after an edit).
func Sign(g *plan.Graph, priv ed25519.PrivateKey) error {
	if err := CheckDigest(g); err != nil {
		return fmt.Errorf("signing: %w", err)
	}
	kid := KeyID(priv.Public().(ed25519.PublicKey))
	header, err := json.Marshal(jwsHeader{Alg: jwsAlg, Kid: kid, Typ: "JWT"})
	if err != nil {
		return err
	}
	payload, err := json.Marshal(jwsPayload{Digest: g.Digest, KeyID: kid})
	if err != nil {
		return err
	}
	input := b64.EncodeToString(header) + "." + b64.EncodeToString(payload)
	g.Signatures = []string{input + "." + b64.EncodeToString(ed25519.Sign(priv, []byte(input)))}
	return nil
}

// Signer is the key id g's signature claims, or Unsigned. It is what the
// signature says, not what was checked: a Verifier checks.
func Signer(g *plan.Graph) string {
	if len(g.Signatures) == 0 {
		return Unsigned
	}
	headerPart, _, _ := strings.Cut(g.Signatures[0], ".")
	var h jwsHeader
	if raw, err := b64.DecodeString(headerPart); err != nil || json.Unmarshal(raw, &h) != nil || h.Kid == "" {
		return "unreadable signature"
	}
	return h.Kid
}

// Verifier checks bundles against the one public key pistrad trusts.
type Verifier struct {
	key ed25519.PublicKey
	id  string
}

// NewVerifier reads a PEM public key (see ParsePublicKey).
func NewVerifier(pemBytes []byte) (*Verifier, error) {
	pub, err := ParsePublicKey(pemBytes)
	if err != nil {
		return nil, err
	}
	return &Verifier{key: pub, id: KeyID(pub)}, nil
}

// KeyID is the id of the trusted key.
func (v *Verifier) KeyID() string { return v.id }

// ErrUnsigned is wrapped by Verify's error for a bundle with no signature.
var ErrUnsigned = errors.New("the bundle is unsigned")

// Verify checks that g's content hashes to its digest and that its
// signature is the trusted key's over that digest. Each error says which
// step failed and names the digests or key ids involved.
func (v *Verifier) Verify(g *plan.Graph) error {
	if err := CheckDigest(g); err != nil {
		return err
	}
	if len(g.Signatures) == 0 {
		return fmt.Errorf("%w, and only bundles signed by key %s are served: build it with pistrac build -signing-key", ErrUnsigned, v.id)
	}
	if len(g.Signatures) > 1 {
		return fmt.Errorf("the bundle has %d signatures, want one", len(g.Signatures))
	}
	parts := strings.Split(g.Signatures[0], ".")
	if len(parts) != 3 {
		return fmt.Errorf("the signature is not a compact JWS (%d parts, want 3)", len(parts))
	}
	var h jwsHeader
	if err := decodePart(parts[0], &h); err != nil {
		return fmt.Errorf("the signature's header: %w", err)
	}
	if h.Alg != jwsAlg {
		return fmt.Errorf("the signature's algorithm is %q, want %q", h.Alg, jwsAlg)
	}
	if h.Kid != v.id {
		return fmt.Errorf("the bundle is signed by key %s, not by the trusted key %s", h.Kid, v.id)
	}
	sig, err := b64.DecodeString(parts[2])
	if err != nil {
		return fmt.Errorf("the signature's value is not base64url: %w", err)
	}
	if !ed25519.Verify(v.key, []byte(parts[0]+"."+parts[1]), sig) {
		return fmt.Errorf("the signature claiming key %s does not verify with that key: it was altered or made with another key", h.Kid)
	}
	var p jwsPayload
	if err := decodePart(parts[1], &p); err != nil {
		return fmt.Errorf("the signature's payload: %w", err)
	}
	if p.KeyID != h.Kid {
		return fmt.Errorf("the signature's payload names key %s but its header key %s", p.KeyID, h.Kid)
	}
	if p.Digest != g.Digest {
		return fmt.Errorf("the signature is over digest %s but the bundle's content has digest %s: it changed after it was signed", p.Digest, g.Digest)
	}
	return nil
}

func decodePart(part string, v any) error {
	raw, err := b64.DecodeString(part)
	if err != nil {
		return fmt.Errorf("not base64url: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("not the JSON pistrac writes: %w", err)
	}
	return nil
}
