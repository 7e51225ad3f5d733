package mls

// epochSecrets holds the secrets derived from one epoch secret (RFC 9420
// §8).
type epochSecrets struct {
	joiner         []byte
	welcome        []byte
	epoch          []byte
	senderData     []byte
	encryption     []byte
	exporter       []byte
	external       []byte
	confirmation   []byte
	membership     []byte
	resumption     []byte
	authentication []byte
	init           []byte
}

func zeroSecret() []byte { return make([]byte, hashLen) }

// joinerSecret computes the joiner secret from the previous init secret,
// the commit secret and the new group context.
func joinerSecret(initSecret, commitSecret []byte, gc *GroupContext) []byte {
	if commitSecret == nil {
		commitSecret = zeroSecret()
	}
	return ExpandWithLabel(extract(initSecret, commitSecret), "joiner", gc.Marshal(), hashLen)
}

// scheduleFromJoiner derives all epoch secrets from a joiner secret.
func scheduleFromJoiner(joiner, pskSecret []byte, gc *GroupContext) *epochSecrets {
	if pskSecret == nil {
		pskSecret = zeroSecret()
	}
	member := extract(joiner, pskSecret)
	s := &epochSecrets{
		joiner:  joiner,
		welcome: DeriveSecret(member, "welcome"),
		epoch:   ExpandWithLabel(member, "epoch", gc.Marshal(), hashLen),
	}
	s.senderData = DeriveSecret(s.epoch, "sender data")
	s.encryption = DeriveSecret(s.epoch, "encryption")
	s.exporter = DeriveSecret(s.epoch, "exporter")
	s.external = DeriveSecret(s.epoch, "external")
	s.confirmation = DeriveSecret(s.epoch, "confirm")
	s.membership = DeriveSecret(s.epoch, "membership")
	s.resumption = DeriveSecret(s.epoch, "resumption")
	s.authentication = DeriveSecret(s.epoch, "authentication")
	s.init = DeriveSecret(s.epoch, "init")
	return s
}

// welcomeKeyNonce derives the key and nonce protecting a Welcome's
// GroupInfo.
func welcomeKeyNonce(welcomeSecret []byte) (key, nonce []byte) {
	return ExpandWithLabel(welcomeSecret, "key", nil, keyLen), ExpandWithLabel(welcomeSecret, "nonce", nil, nonceLen)
}

// exportSecret implements MLS-Exporter(label, context, length).
func exportSecret(exporterSecret []byte, label string, context []byte, length int) []byte {
	return ExpandWithLabel(DeriveSecret(exporterSecret, label), "exported", hash(context), length)
}

// externalPub derives the external public key of an epoch.
func externalPub(externalSecret []byte) ([]byte, error) {
	k, err := deriveHPKEKey(externalSecret)
	if err != nil {
		return nil, err
	}
	return k.Public(), nil
}

// pskSecret combines pre-shared keys (RFC 9420 §8.4). psks[i] is the
// secret for ids[i].
func pskSecret(ids []PreSharedKeyID, psks [][]byte) []byte {
	secret := zeroSecret()
	for i := range ids {
		var w Writer
		ids[i].encode(&w)
		w.U16(uint16(i))
		w.U16(uint16(len(ids)))
		input := ExpandWithLabel(extract(nil, psks[i]), "derived psk", w.Bytes(), hashLen)
		secret = extract(input, secret)
	}
	return secret
}

// Transcript hashes (RFC 9420 §8.2).

func confirmedTranscriptHash(interim []byte, wireFormat uint16, content *FramedContent, signature []byte) []byte {
	var w Writer
	w.Raw(interim)
	w.U16(wireFormat)
	content.encode(&w)
	w.Vec(signature)
	return hash(w.Bytes())
}

func interimTranscriptHash(confirmed, confirmationTag []byte) []byte {
	var w Writer
	w.Raw(confirmed)
	w.Vec(confirmationTag)
	return hash(w.Bytes())
}

// Secret tree (RFC 9420 §9).

// secretTreeLeaf derives the leaf secret of leaf i in a tree of n leaves.
func secretTreeLeaf(encryptionSecret []byte, i, n uint32) []byte {
	x := rootOf(n)
	s := encryptionSecret
	target := leafNode(i)
	for x != target {
		if target < x {
			s = ExpandWithLabel(s, "tree", []byte("left"), hashLen)
			x = leftChild(x)
		} else {
			s = ExpandWithLabel(s, "tree", []byte("right"), hashLen)
			x = rightChild(x)
		}
	}
	return s
}

// HashRatchet is the per-sender key ratchet of RFC 9420 §9.1. It is also
// the construction DAVE uses for media keys.
type HashRatchet struct {
	secret     []byte
	generation uint32
	keyLen     int
}

// NewHashRatchet starts a ratchet at generation 0 from secret, producing
// keys of keyLen bytes.
func NewHashRatchet(secret []byte, keyLen int) *HashRatchet {
	return &HashRatchet{secret: secret, keyLen: keyLen}
}

// Generation returns the generation the next Next call yields.
func (h *HashRatchet) Generation() uint32 { return h.generation }

// Next returns key and nonce of the current generation and advances. It
// stops at generation 2^32-1.
func (h *HashRatchet) Next() (gen uint32, key, nonce []byte) {
	gen = h.generation
	key = DeriveTreeSecret(h.secret, "key", gen, h.keyLen)
	nonce = DeriveTreeSecret(h.secret, "nonce", gen, nonceLen)
	h.secret = DeriveTreeSecret(h.secret, "secret", gen, hashLen)
	h.generation++
	return gen, key, nonce
}

// senderDataKeyNonce derives the PrivateMessage sender-data key and nonce.
func senderDataKeyNonce(senderDataSecret, ciphertext []byte) (key, nonce []byte) {
	sample := ciphertext
	if len(sample) > hashLen {
		sample = sample[:hashLen]
	}
	return ExpandWithLabel(senderDataSecret, "key", sample, keyLen), ExpandWithLabel(senderDataSecret, "nonce", sample, nonceLen)
}
