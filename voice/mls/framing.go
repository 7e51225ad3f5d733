package mls

// authenticatedContent is AuthenticatedContent (RFC 9420 §6.1): the wire
// format, framed content and its authentication data.
type authenticatedContent struct {
	wireFormat uint16
	msg        PublicMessage // MembershipTag unused
}

func unmarshalAuthenticatedContent(b []byte) (*authenticatedContent, error) {
	r := NewReader(b)
	ac := &authenticatedContent{wireFormat: r.U16()}
	ac.msg.Content.decode(r)
	ac.msg.Signature = r.Vec()
	if ac.msg.Content.ContentType == ContentCommit {
		ac.msg.ConfirmationTag = r.Vec()
	}
	return ac, r.Done()
}

// authenticatedContentBytes encodes AuthenticatedContent of a public
// message.
func authenticatedContentBytes(p *PublicMessage) []byte {
	var w Writer
	w.U16(WireFormatPublicMessage)
	p.Content.encode(&w)
	p.encodeAuth(&w)
	return w.Bytes()
}

// ProposalRef computes the reference of a proposal sent in a public
// message (RFC 9420 §5.2).
func ProposalRef(p *PublicMessage) []byte {
	return RefHash("MLS 1.0 Proposal Reference", authenticatedContentBytes(p))
}

// framedContentTBS encodes FramedContentTBS; ctx is required for member
// and new-member-commit senders.
func framedContentTBS(c *FramedContent, ctx *GroupContext) []byte {
	var w Writer
	w.U16(ProtocolVersionMLS10)
	w.U16(WireFormatPublicMessage)
	c.encode(&w)
	if c.Sender.Type == SenderMember || c.Sender.Type == SenderNewMemberCommit {
		ctx.encode(&w)
	}
	return w.Bytes()
}

// membershipTag computes the membership tag of a member's public message.
func membershipTag(membershipKey []byte, p *PublicMessage, ctx *GroupContext) []byte {
	var w Writer
	w.Raw(framedContentTBS(&p.Content, ctx))
	p.encodeAuth(&w)
	return mac(membershipKey, w.Bytes())
}

// verifyPublicMessageSignature checks the signature of p by pub.
func verifyPublicMessageSignature(p *PublicMessage, pub []byte, ctx *GroupContext) error {
	return VerifyWithLabel(pub, "FramedContentTBS", framedContentTBS(&p.Content, ctx), p.Signature)
}

// SignPublicMessage signs the content of p with k; ctx is the current
// group context (ignored for external senders).
func SignPublicMessage(p *PublicMessage, k *SignatureKey, ctx *GroupContext) error {
	sig, err := k.SignWithLabel("FramedContentTBS", framedContentTBS(&p.Content, ctx))
	if err != nil {
		return err
	}
	p.Signature = sig
	return nil
}
