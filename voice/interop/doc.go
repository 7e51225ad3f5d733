// Package interop holds glyphoxa's voice interop tests against an
// independent client that works on real Discord: @discordjs/voice 0.19.2
// with @snazzah/davey 0.1.12 for DAVE (pinned in scripts/node-peers and
// installed into .cache/node-peers by scripts/testdeps.sh).
//
// The tests run the fake voice server (voice/voicetest with the DAVE
// gateway of voice/dave/davetest) behind a local TLS front with a
// certificate generated per test, since discord.js always dials wss://;
// testdata/djs-peer.js joins it through a voice server update naming the
// front, beside one or two glyphoxa clients. The peer accounts for every
// RTP packet its receiver got (handed out, or why not: unknown SSRC,
// transport or DAVE decrypt failure with davey's error, kernel drops), and
// a stream that falls short prints that beside what each relayed frame
// carried (RTP sequence and timestamp, DAVE nonce). Outside CI the tests skip
// when node is missing; under CI (CI set) a missing node or peer fails
// them.
package interop
