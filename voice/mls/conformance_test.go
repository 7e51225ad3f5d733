package mls

import "testing"

// TestConformance runs every suite-2 case of the RFC 9420 test vectors in
// testdata (see testdata/README.md). Each subtest logs "N passed, M
// skipped" for its file; run with -v to see the counts.
func TestConformance(t *testing.T) {
	for _, c := range []struct {
		file string
		run  func(*testing.T)
	}{
		{"tree-math.json", conformanceTreeMath},
		{"crypto-basics.json", conformanceCryptoBasics},
		{"deserialization.json", conformanceDeserialization},
		{"messages.json", conformanceMessages},
		{"secret-tree.json", conformanceSecretTree},
		{"key-schedule.json", conformanceKeySchedule},
		{"transcript-hashes.json", conformanceTranscriptHash},
		{"welcome.json", conformanceWelcome},
		{"tree-validation.json", conformanceTreeValidation},
		{"treekem.json", conformanceTreeKEM},
		{"passive-client-welcome.json", conformancePassiveClientWelcome},
		{"passive-client-handling-commit.json", conformancePassiveClientHandlingCommit},
	} {
		t.Run(c.file, c.run)
	}
}
