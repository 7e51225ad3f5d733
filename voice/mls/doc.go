// Package mls implements the subset of Messaging Layer Security (RFC 9420)
// that Discord's DAVE end-to-end encryption uses, for ciphersuite 2
// (MLS_128_DHKEMP256_AES128GCM_SHA256_P256).
//
// # Layers
//
//   - TLS presentation codec with strict, bounded length prefixes
//     ([Reader], [Writer]).
//   - Array-tree arithmetic (RFC 9420 Appendix C).
//   - The labelled primitives of the ciphersuite ([Suite]): RefHash,
//     ExpandWithLabel, DeriveSecret, DeriveTreeSecret, SignWithLabel,
//     VerifyWithLabel, EncryptWithLabel and DecryptWithLabel.
//   - Key schedule, exporter, secret-tree hash ratchet and transcript
//     hashes.
//   - Wire structures (KeyPackage, LeafNode, proposals, Commit,
//     PublicMessage, Welcome, GroupInfo, ratchet tree) with encoders and
//     decoders that reject trailing or malformed bytes.
//   - Ratchet tree with tree hash, parent hash and validation, and TreeKEM
//     (creating and applying an UpdatePath).
//   - A [Group] that joins from a Welcome, creates commits for Add and
//     Remove proposals sent by reference and processes commits of other
//     members.
//
// Features DAVE never uses (PrivateMessage protection, external commits,
// re-initialisation, application messages) are decoded where the wire
// format requires it but are otherwise rejected with an error.
package mls
