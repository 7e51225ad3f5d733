// Package dave implements Discord's DAVE protocol (version 1) on top of
// package mls: the per-voice-connection session state machine that turns
// the voice gateway's DAVE opcodes into MLS operations, the per-sender
// media key ratchets derived from the MLS exporter, and the secure frame
// format that protects each Opus frame.
//
// # Frames
//
// A protected frame is the ciphertext (with any unencrypted ranges left in
// place), an 8-byte truncated AES-128-GCM tag, the ULEB128 truncated
// nonce, the ULEB128 unencrypted ranges, one byte giving the size of this
// supplemental data, and the magic marker 0xFAFA. [EncryptFrame] and
// [DecryptFrame] implement it for a given key; [Session] manages keys.
//
// # Use with voice/conn
//
// [Session] implements the connection's E2EE interface; [NewE2EE] makes
// one per connection:
//
//	cfg.NewE2EE = dave.NewE2EE(logger)
//
// Package davetest plays the voice gateway's side (external sender,
// commit selection, welcomes, transitions) for tests against
// voice/voicetest.
//
// The session answers op 4 with a key package, turns external proposals
// (op 27) into commits and welcomes (op 28), follows announced commits
// (op 29) and welcomes (op 30), reports transitions ready (op 23), and
// rejects bad ones with op 31 followed by a fresh key package. Receive keys
// of a previous epoch stay usable for [KeyExpiry] after a transition.
//
// # Passthrough and recovery
//
// Frames go out unencrypted only under protocol version 0 (op 4 without
// DAVE, or an executed downgrade); with DAVE on and no send key, and
// before op 4 has told the version, [Session.Encrypt] returns
// [ErrNoSendKey] and the frame is not sent. Unencrypted frames are
// accepted once a downgrade executed, for [PendingDowngradeExpiry] while
// one is prepared, for [KeyExpiry] after an upgrade, and from a member
// that (re)joined, for [KeyExpiry] or until its first frame decrypts: a
// client sends a few frames before its own session is ready, as libdave
// and davey allow. Members that stayed in the group while this session
// rejoined it (a re-identify, a refused commit) get no such window.
// A session made with [RequireE2EE] accepts no unencrypted frame, joins no
// call without DAVE, and refuses downgrades ([ErrE2EERequired]).
//
// Decrypt failures start a recovery (op 31, a fresh key package) only when
// they say our group state is wrong: more than [RecoveryThreshold] in a
// row from one sender, no frame from another sender decrypted since the
// last executed transition, and no recovery for that transition yet. Only
// a frame from the sender that started a recovery ends the run of
// attempts; after [MaxRecoveries] in a row the session gives up
// ([ErrRecoveryGaveUp]) and voice/conn reports EventE2EEFailed. A
// gateway that ignores a recovery (no transition re-adds the session
// within [RecoveryTimeout] of its key package) ends it the same way, with
// [ErrRecoveryUnanswered].
package dave
