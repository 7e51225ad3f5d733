package mls

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/hpke"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
)

// CipherSuite2 is MLS_128_DHKEMP256_AES128GCM_SHA256_P256, the only suite
// this package implements.
const CipherSuite2 uint16 = 2

// ProtocolVersionMLS10 is the mls10 protocol version.
const ProtocolVersionMLS10 uint16 = 1

// Sizes of ciphersuite 2.
const (
	hashLen  = 32 // Nh
	keyLen   = 16 // Nk
	nonceLen = 12 // Nn
)

const labelPrefix = "MLS 1.0 "

// ErrCrypto is wrapped by signature, MAC and decryption failures.
var ErrCrypto = errors.New("mls: cryptographic check failed")

var (
	hpkeKEM  = hpke.DHKEM(ecdh.P256())
	hpkeKDF  = hpke.HKDFSHA256()
	hpkeAEAD = hpke.AES128GCM()
)

func hash(b []byte) []byte {
	h := sha256.Sum256(b)
	return h[:]
}

func mac(key, data []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(data)
	return m.Sum(nil)
}

func extract(salt, ikm []byte) []byte {
	if salt == nil {
		salt = make([]byte, hashLen)
	}
	prk, err := hkdf.Extract(sha256.New, ikm, salt)
	if err != nil {
		panic("mls: HKDF-Extract: " + err.Error())
	}
	return prk
}

// RefHash computes RefHash(label, value) (RFC 9420 §5.2).
func RefHash(label string, value []byte) []byte {
	var w Writer
	w.Vec([]byte(label))
	w.Vec(value)
	return hash(w.Bytes())
}

// ExpandWithLabel computes ExpandWithLabel(secret, label, context, length)
// (RFC 9420 §8). The secret may be shorter than the hash length.
func ExpandWithLabel(secret []byte, label string, context []byte, length int) []byte {
	var w Writer
	w.U16(uint16(length))
	w.Vec([]byte(labelPrefix + label))
	w.Vec(context)
	out, err := hkdf.Expand(sha256.New, secret, string(w.Bytes()), length)
	if err != nil {
		panic("mls: HKDF-Expand: " + err.Error())
	}
	return out
}

// DeriveSecret computes DeriveSecret(secret, label).
func DeriveSecret(secret []byte, label string) []byte {
	return ExpandWithLabel(secret, label, nil, hashLen)
}

// DeriveTreeSecret computes DeriveTreeSecret(secret, label, generation,
// length).
func DeriveTreeSecret(secret []byte, label string, generation uint32, length int) []byte {
	var w Writer
	w.U32(generation)
	return ExpandWithLabel(secret, label, w.Bytes(), length)
}

func signContent(label string, content []byte) []byte {
	var w Writer
	w.Vec([]byte(labelPrefix + label))
	w.Vec(content)
	return w.Bytes()
}

// SignatureKey is an ECDSA P-256 signing key.
type SignatureKey struct {
	priv *ecdsa.PrivateKey
	pub  []byte
}

// GenerateSignatureKey creates a fresh P-256 signing key.
func GenerateSignatureKey() (*SignatureKey, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating signature key: %w", err)
	}
	return newSignatureKey(k)
}

// ParseSignatureKey reads a raw 32-byte P-256 private scalar.
func ParseSignatureKey(raw []byte) (*SignatureKey, error) {
	k, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), raw)
	if err != nil {
		return nil, fmt.Errorf("parsing signature key of %d bytes: %w", len(raw), err)
	}
	return newSignatureKey(k)
}

func newSignatureKey(k *ecdsa.PrivateKey) (*SignatureKey, error) {
	pub, err := k.PublicKey.Bytes()
	if err != nil {
		return nil, fmt.Errorf("encoding signature public key: %w", err)
	}
	return &SignatureKey{priv: k, pub: pub}, nil
}

// Public returns the uncompressed SEC1 public key (65 bytes).
func (k *SignatureKey) Public() []byte { return k.pub }

// SignWithLabel signs content with the given label (RFC 9420 §5.1.2); the
// signature is DER-encoded.
func (k *SignatureKey) SignWithLabel(label string, content []byte) ([]byte, error) {
	d := sha256.Sum256(signContent(label, content))
	sig, err := ecdsa.SignASN1(rand.Reader, k.priv, d[:])
	if err != nil {
		return nil, fmt.Errorf("signing %q: %w", label, err)
	}
	return sig, nil
}

// VerifyWithLabel checks a DER ECDSA signature by the uncompressed public
// key pub over content with the given label.
func VerifyWithLabel(pub []byte, label string, content, sig []byte) error {
	pk, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), pub)
	if err != nil {
		return fmt.Errorf("%w: signature key of %d bytes: %v", ErrCrypto, len(pub), err)
	}
	d := sha256.Sum256(signContent(label, content))
	if !ecdsa.VerifyASN1(pk, d[:], sig) {
		return fmt.Errorf("%w: bad %q signature", ErrCrypto, label)
	}
	return nil
}

// HPKEKey is a DHKEM(P-256) private key.
type HPKEKey struct {
	priv hpke.PrivateKey
	pub  []byte
}

// GenerateHPKEKey creates a fresh HPKE key pair.
func GenerateHPKEKey() (*HPKEKey, error) {
	k, err := hpkeKEM.GenerateKey()
	if err != nil {
		return nil, fmt.Errorf("generating HPKE key: %w", err)
	}
	return newHPKEKey(k)
}

// ParseHPKEKey reads a serialized HPKE private key (32 bytes for P-256).
func ParseHPKEKey(raw []byte) (*HPKEKey, error) {
	k, err := hpkeKEM.NewPrivateKey(raw)
	if err != nil {
		return nil, fmt.Errorf("parsing HPKE key of %d bytes: %w", len(raw), err)
	}
	return newHPKEKey(k)
}

// deriveHPKEKey derives the node key pair of a TreeKEM secret.
func deriveHPKEKey(secret []byte) (*HPKEKey, error) {
	k, err := hpkeKEM.DeriveKeyPair(secret)
	if err != nil {
		return nil, fmt.Errorf("deriving HPKE key: %w", err)
	}
	return newHPKEKey(k)
}

func newHPKEKey(k hpke.PrivateKey) (*HPKEKey, error) {
	return &HPKEKey{priv: k, pub: k.PublicKey().Bytes()}, nil
}

// Public returns the serialized public key (65 bytes).
func (k *HPKEKey) Public() []byte { return k.pub }

// HPKECiphertext is an HPKE encapsulated key and ciphertext.
type HPKECiphertext struct {
	KEMOutput  []byte
	Ciphertext []byte
}

func (c *HPKECiphertext) encode(w *Writer) { w.Vec(c.KEMOutput); w.Vec(c.Ciphertext) }

func (c *HPKECiphertext) decode(r *Reader) { c.KEMOutput = r.Vec(); c.Ciphertext = r.Vec() }

func encryptContext(label string, context []byte) []byte {
	var w Writer
	w.Vec([]byte(labelPrefix + label))
	w.Vec(context)
	return w.Bytes()
}

// EncryptWithLabel seals plaintext to the public key pub (RFC 9420 §5.1.3).
func EncryptWithLabel(pub []byte, label string, context, plaintext []byte) (HPKECiphertext, error) {
	pk, err := hpkeKEM.NewPublicKey(pub)
	if err != nil {
		return HPKECiphertext{}, fmt.Errorf("%w: HPKE public key of %d bytes: %v", ErrCrypto, len(pub), err)
	}
	enc, s, err := hpke.NewSender(pk, hpkeKDF, hpkeAEAD, encryptContext(label, context))
	if err != nil {
		return HPKECiphertext{}, fmt.Errorf("HPKE setup for %q: %w", label, err)
	}
	ct, err := s.Seal(nil, plaintext)
	if err != nil {
		return HPKECiphertext{}, fmt.Errorf("HPKE seal for %q: %w", label, err)
	}
	return HPKECiphertext{KEMOutput: enc, Ciphertext: ct}, nil
}

// DecryptWithLabel opens an HPKE ciphertext with k.
func (k *HPKEKey) DecryptWithLabel(label string, context []byte, c HPKECiphertext) ([]byte, error) {
	r, err := hpke.NewRecipient(c.KEMOutput, k.priv, hpkeKDF, hpkeAEAD, encryptContext(label, context))
	if err != nil {
		return nil, fmt.Errorf("%w: HPKE decapsulation for %q: %v", ErrCrypto, label, err)
	}
	pt, err := r.Open(nil, c.Ciphertext)
	if err != nil {
		return nil, fmt.Errorf("%w: HPKE open for %q: %v", ErrCrypto, label, err)
	}
	return pt, nil
}

func aeadFor(key []byte) cipher.AEAD {
	b, err := aes.NewCipher(key)
	if err != nil {
		panic("mls: AES key: " + err.Error())
	}
	g, err := cipher.NewGCM(b)
	if err != nil {
		panic("mls: GCM: " + err.Error())
	}
	return g
}

func aeadOpen(key, nonce, aad, ct []byte) ([]byte, error) {
	pt, err := aeadFor(key).Open(nil, nonce, ct, aad)
	if err != nil {
		return nil, fmt.Errorf("%w: AEAD open of %d bytes: %v", ErrCrypto, len(ct), err)
	}
	return pt, nil
}

func aeadSeal(key, nonce, aad, pt []byte) []byte {
	return aeadFor(key).Seal(nil, nonce, pt, aad)
}

func equalBytes(a, b []byte) bool { return subtle.ConstantTimeCompare(a, b) == 1 }
