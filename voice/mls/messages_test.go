package mls

import (
	"bytes"
	"testing"
)

type messagesCase struct {
	MLSWelcome                     hexBytes `json:"mls_welcome"`
	MLSGroupInfo                   hexBytes `json:"mls_group_info"`
	MLSKeyPackage                  hexBytes `json:"mls_key_package"`
	RatchetTree                    hexBytes `json:"ratchet_tree"`
	GroupSecrets                   hexBytes `json:"group_secrets"`
	AddProposal                    hexBytes `json:"add_proposal"`
	UpdateProposal                 hexBytes `json:"update_proposal"`
	RemoveProposal                 hexBytes `json:"remove_proposal"`
	PreSharedKeyProposal           hexBytes `json:"pre_shared_key_proposal"`
	ReInitProposal                 hexBytes `json:"re_init_proposal"`
	ExternalInitProposal           hexBytes `json:"external_init_proposal"`
	GroupContextExtensionsProposal hexBytes `json:"group_context_extensions_proposal"`
	Commit                         hexBytes `json:"commit"`
	PublicMessageApplication       hexBytes `json:"public_message_application"`
	PublicMessageProposal          hexBytes `json:"public_message_proposal"`
	PublicMessageCommit            hexBytes `json:"public_message_commit"`
	PrivateMessage                 hexBytes `json:"private_message"`
}

// roundTrip decodes b with dec and re-encodes it with enc.
func roundTrip(b []byte, dec func(*Reader), enc func(*Writer)) ([]byte, error) {
	r := NewReader(b)
	dec(r)
	if err := r.Done(); err != nil {
		return nil, err
	}
	var w Writer
	enc(&w)
	return w.Bytes(), nil
}

func proposalBody(typ uint16) (func(*Reader), func(*Writer)) {
	p := &Proposal{Type: typ}
	return p.decodeBody, func(w *Writer) {
		var full Writer
		p.encode(&full)
		w.Raw(full.Bytes()[2:])
	}
}

func conformanceMessages(t *testing.T) {
	var cases []messagesCase
	loadVectors(t, "messages.json", &cases)
	var st tally
	for i, c := range cases {
		ok := true
		check := func(name string, in []byte, dec func(*Reader), enc func(*Writer)) {
			out, err := roundTrip(in, dec, enc)
			if err != nil || !bytes.Equal(out, in) {
				ok = false
				t.Errorf("case %d %s: err %v, round trip differs: %x vs %x", i, name, err, out, in)
			}
		}
		for name, in := range map[string][]byte{
			"mls_welcome": c.MLSWelcome, "mls_group_info": c.MLSGroupInfo, "mls_key_package": c.MLSKeyPackage,
			"public_message_application": c.PublicMessageApplication, "public_message_proposal": c.PublicMessageProposal,
			"public_message_commit": c.PublicMessageCommit, "private_message": c.PrivateMessage,
		} {
			m := new(MLSMessage)
			check(name, in, m.decode, m.encode)
		}
		tree := new(RatchetTree)
		check("ratchet_tree", c.RatchetTree, func(r *Reader) {
			t2, err := UnmarshalRatchetTree(r.Bytes(r.Len()))
			if err != nil {
				r.Fail("%v", err)
				return
			}
			*tree = *t2
		}, func(w *Writer) { w.Raw(tree.Marshal()) })
		gs := new(GroupSecrets)
		check("group_secrets", c.GroupSecrets, gs.decode, gs.encode)
		for _, p := range []struct {
			name string
			typ  uint16
			in   []byte
		}{
			{"add_proposal", ProposalAdd, c.AddProposal},
			{"update_proposal", ProposalUpdate, c.UpdateProposal},
			{"remove_proposal", ProposalRemove, c.RemoveProposal},
			{"pre_shared_key_proposal", ProposalPSK, c.PreSharedKeyProposal},
			{"re_init_proposal", ProposalReInit, c.ReInitProposal},
			{"external_init_proposal", ProposalExternalInit, c.ExternalInitProposal},
			{"group_context_extensions_proposal", ProposalGroupContextExtensions, c.GroupContextExtensionsProposal},
		} {
			dec, enc := proposalBody(p.typ)
			check(p.name, p.in, dec, enc)
		}
		cm := new(Commit)
		check("commit", c.Commit, cm.decode, cm.encode)
		st.record(ok)
	}
	st.report(t, "messages.json")
}
