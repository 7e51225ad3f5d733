package mls

import "testing"

func FuzzAttackUnmarshal(f *testing.F) {
	f.Add([]byte{0, 1, 0, 1})
	f.Add([]byte{0, 1, 0, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		if m, err := UnmarshalMLSMessage(b); err == nil && m != nil {
			_ = m.Marshal()
		}
		if w, err := UnmarshalWelcome(b); err == nil && w != nil {
			_ = w.Marshal()
		}
		if k, err := UnmarshalKeyPackage(b); err == nil {
			_ = k.Verify()
		}
		_, _ = UnmarshalExternalSender(b)
	})
}
